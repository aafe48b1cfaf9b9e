//! Unit tests of the documented semantics: numpy's and PyTorch's edge cases, dtypes and
//! errors (values checked against numpy 1.26 by hand; the conformance suite checks
//! thousands more against numpy itself).

use half::f16;
use ndarray::{arr0, array, Array, ArrayD, IxDyn};
use smdebug_reduce::{
    reduce, reduce_one, reduce_with_stats, stats, DType, Flavor, ReduceError, Reduction,
    ReductionRequest, Scalar, TensorView,
};

fn req(s: &str) -> ReductionRequest {
    s.parse().unwrap()
}

fn np<T: smdebug_reduce::Element, D: ndarray::Dimension>(
    a: &Array<T, D>,
    name: &str,
) -> Result<Scalar, ReduceError> {
    reduce_one(a.view(), req(name), Flavor::Numpy)
}

fn torch<T: smdebug_reduce::Element, D: ndarray::Dimension>(
    a: &Array<T, D>,
    name: &str,
) -> Result<Scalar, ReduceError> {
    reduce_one(a.view(), req(name), Flavor::PyTorch)
}

#[test]
fn names_parse_and_print() {
    for r in ReductionRequest::all() {
        assert_eq!(r.name().parse::<ReductionRequest>().unwrap(), r);
        assert_eq!(r.to_string(), r.name());
    }
    assert_eq!(req("abs_l2"), ReductionRequest::new(Reduction::L2, true));
    assert_eq!(
        "variance".parse::<Reduction>().unwrap(),
        Reduction::Variance
    );
    assert!("var".parse::<Reduction>().is_err());
    assert!("abs_".parse::<ReductionRequest>().is_err());
    assert!("l2_norm".parse::<ReductionRequest>().is_err());
    assert_eq!(Reduction::SMDEBUG.len(), 9);
    assert!(Reduction::L1.is_norm() && !Reduction::Sum.is_norm());
    assert_eq!(DType::from_numpy_name("uint16"), Some(DType::U16));
    assert_eq!(DType::from_numpy_name("complex64"), None);
}

#[test]
fn result_dtypes_follow_numpy() {
    let i = array![1i32, -2, 3];
    assert_eq!(np(&i, "sum"), Ok(Scalar::I64(2)));
    assert_eq!(np(&i, "prod"), Ok(Scalar::I64(-6)));
    assert_eq!(np(&i, "mean"), Ok(Scalar::F64(2.0 / 3.0)));
    assert_eq!(np(&i, "min"), Ok(Scalar::I32(-2)));
    assert_eq!(np(&i, "abs_min"), Ok(Scalar::I32(1)));
    assert_eq!(np(&i, "l1"), Ok(Scalar::F64(6.0)));
    let u = array![255u8, 1];
    assert_eq!(np(&u, "sum"), Ok(Scalar::U64(256)));
    assert_eq!(np(&u, "prod"), Ok(Scalar::U64(255)));
    let b = array![true, false, true];
    assert_eq!(np(&b, "min"), Ok(Scalar::Bool(false)));
    assert_eq!(np(&b, "max"), Ok(Scalar::Bool(true)));
    assert_eq!(np(&b, "sum"), Ok(Scalar::I64(2)));
    assert_eq!(np(&b, "prod"), Ok(Scalar::I64(0)));
    assert_eq!(np(&b, "mean").unwrap().dtype(), DType::F64);
    let h = array![f16::from_f32(1.0), f16::from_f32(2.0)];
    for name in [
        "sum", "mean", "std", "variance", "l1", "l2", "median", "abs_prod",
    ] {
        assert_eq!(np(&h, name).unwrap().dtype(), DType::F16, "{name}");
    }
    assert_eq!(np(&h, "std"), Ok(Scalar::F16(f16::from_f32(0.5))));
    let f = array![1.0f32, 2.0];
    assert_eq!(np(&f, "mean"), Ok(Scalar::F32(1.5)));
}

#[test]
fn integer_overflow_wraps_like_numpy() {
    assert_eq!(np(&array![i64::MAX, 1], "sum"), Ok(Scalar::I64(i64::MIN)));
    assert_eq!(np(&array![1i64 << 62, 4], "prod"), Ok(Scalar::I64(0)));
    assert_eq!(np(&array![u64::MAX, 2], "sum"), Ok(Scalar::U64(1)));
    // np.absolute wraps the most negative value.
    assert_eq!(np(&array![-128i8, 5], "abs_min"), Ok(Scalar::I8(-128)));
    assert_eq!(np(&array![-128i8], "abs_sum"), Ok(Scalar::I64(-128)));
    // ...but the norms convert to float first.
    assert_eq!(np(&array![-128i8], "abs_l1"), Ok(Scalar::F64(128.0)));
}

#[test]
fn nan_inf_and_signed_zero() {
    let x = array![1.0f32, f32::NAN, -3.0];
    for name in [
        "min", "max", "mean", "sum", "std", "median", "l1", "l2", "prod",
    ] {
        let v = np(&x, name).unwrap();
        assert!(v.to_f64().is_nan(), "{name}: {v}");
        assert_eq!(v.dtype(), DType::F32);
    }
    let x = array![1.0f64, f64::INFINITY, -3.0];
    assert_eq!(np(&x, "max"), Ok(Scalar::F64(f64::INFINITY)));
    assert_eq!(np(&x, "l2"), Ok(Scalar::F64(f64::INFINITY)));
    assert!(np(&x, "variance").unwrap().to_f64().is_nan());
    let x = array![f64::INFINITY, f64::NEG_INFINITY];
    assert!(np(&x, "mean").unwrap().to_f64().is_nan());
    let z = array![-0.0f32, -0.0];
    assert_eq!(np(&z, "sum").unwrap().to_f64().to_bits(), 0.0f64.to_bits());
    assert_eq!(
        np(&z, "abs_min").unwrap().to_f64().to_bits(),
        0.0f64.to_bits()
    );
}

#[test]
fn empty_arrays() {
    let e = Array::<f32, _>::zeros(0);
    let err = np(&e, "min").unwrap_err();
    assert!(matches!(err, ReduceError::EmptyArray { .. }), "{err}");
    assert!(err.is_value_error());
    assert!(err.to_string().contains("minimum"), "{err}");
    assert!(np(&e, "max").unwrap_err().to_string().contains("maximum"));
    assert!(np(&e, "mean").unwrap().to_f64().is_nan());
    assert!(np(&e, "std").unwrap().to_f64().is_nan());
    assert_eq!(np(&e, "sum"), Ok(Scalar::F32(0.0)));
    assert_eq!(np(&e, "prod"), Ok(Scalar::F32(1.0)));
    assert_eq!(np(&e, "l1"), Ok(Scalar::F32(0.0)));
    assert_eq!(np(&e, "l2"), Ok(Scalar::F32(0.0)));
    assert!(np(&e, "median").unwrap().to_f64().is_nan());
    let e = Array::<i32, _>::zeros((0, 3));
    assert_eq!(np(&e, "l1"), Ok(Scalar::F64(0.0)));
    assert!(matches!(np(&e, "l2"), Err(ReduceError::EmptyArray { .. })));
    let e = Array::<i32, _>::zeros((3, 0));
    assert!(matches!(np(&e, "l1"), Err(ReduceError::EmptyArray { .. })));
    let e = Array::<f32, _>::zeros((2, 0, 2));
    assert!(matches!(
        np(&e, "l2"),
        Err(ReduceError::ImproperDimensions { ndim: 3, .. })
    ));
    assert!(matches!(
        torch(&Array::<f32, _>::zeros(0), "min"),
        Err(ReduceError::EmptyTensor { .. })
    ));
}

#[test]
fn zero_d_and_one_element() {
    let s = arr0(-3.0f32);
    for name in ["min", "max", "mean", "sum", "prod", "median"] {
        assert_eq!(np(&s, name), Ok(Scalar::F32(-3.0)), "{name}");
    }
    assert_eq!(np(&s, "std"), Ok(Scalar::F32(0.0)));
    for name in ["l1", "l2"] {
        let err = np(&s, name).unwrap_err();
        assert!(matches!(
            err,
            ReduceError::ImproperDimensions { ndim: 0, .. }
        ));
        assert!(err.is_value_error(), "{err}");
        assert_eq!(np(&s, &format!("abs_{name}")), Ok(Scalar::F32(3.0)));
    }
    let one = array![7u16];
    assert_eq!(np(&one, "median"), Ok(Scalar::F64(7.0)));
    assert_eq!(np(&one, "variance"), Ok(Scalar::F64(0.0)));
    assert!(torch(&array![7.0f32], "std").unwrap().to_f64().is_nan());
}

#[test]
fn matrix_norms_are_not_elementwise() {
    let m = array![[1.0f64, -2.0], [3.0, 4.0]];
    assert_eq!(np(&m, "l1"), Ok(Scalar::F64(6.0)));
    let l2 = np(&m, "l2").unwrap().to_f64();
    assert!((l2 - 5.116_672_736_016_927).abs() < 1e-12, "{l2}");
    let al2 = np(&m, "abs_l2").unwrap().to_f64();
    assert!((al2 - 5.464_985_704_219_043).abs() < 1e-12, "{al2}");
    // The PyTorch hook flattens.
    assert_eq!(torch(&m, "l1"), Ok(Scalar::F64(10.0)));
    let t = torch(&m, "l2").unwrap().to_f64();
    assert!((t - 30f64.sqrt()).abs() < 1e-12);
    // numpy's linalg errors.
    let h = array![[f16::ONE, f16::ZERO], [f16::ONE, f16::ONE]];
    assert!(matches!(
        np(&h, "l2"),
        Err(ReduceError::UnsupportedLinalgDtype { .. })
    ));
    assert_eq!(np(&h, "l1"), Ok(Scalar::F16(f16::from_f32(2.0))));
    let n = array![[f32::NAN, 1.0], [2.0, 3.0]];
    assert!(matches!(
        np(&n, "l2"),
        Err(ReduceError::SvdDidNotConverge { .. })
    ));
    assert!(np(&n, "l2").unwrap_err().is_value_error());
    assert!(np(&n, "l1").unwrap().to_f64().is_nan());
    let i = array![[f32::INFINITY, 1.0], [2.0, 3.0]];
    assert!(np(&i, "l2").unwrap().to_f64().is_nan());
    assert_eq!(np(&i, "l1"), Ok(Scalar::F32(f32::INFINITY)));
}

#[test]
fn float16_accumulates_where_numpy_does() {
    // Column sums of a (3000, 2) float16 array are sequential float16 additions: 2048 + 1
    // rounds back to 2048. A 1-d sum uses a float accumulator and reaches 3000.
    let m = Array::from_elem((3000, 2), f16::ONE);
    assert_eq!(np(&m, "l1"), Ok(Scalar::F16(f16::from_f32(2048.0))));
    let v = Array::from_elem(3000, f16::ONE);
    assert_eq!(np(&v, "sum"), Ok(Scalar::F16(f16::from_f32(3000.0))));
    assert_eq!(np(&v, "l1"), Ok(Scalar::F16(f16::from_f32(3000.0))));
    // Beyond 65504 the running float16 total overflows.
    let v = Array::from_elem(100_000, f16::ONE);
    assert_eq!(np(&v, "sum"), Ok(Scalar::F16(f16::INFINITY)));
    assert_eq!(np(&v, "mean"), Ok(Scalar::F16(f16::ONE)));
}

#[test]
fn medians() {
    assert_eq!(np(&array![3i32, 1, 2, 4], "median"), Ok(Scalar::F64(2.5)));
    assert_eq!(np(&array![-128i8, 127], "median"), Ok(Scalar::F64(-0.5)));
    assert_eq!(np(&array![true, false], "median"), Ok(Scalar::F64(0.5)));
    assert_eq!(
        np(&array![5.0f32, -1.0, 2.0], "median"),
        Ok(Scalar::F32(2.0))
    );
    assert_eq!(
        np(&array![5.0f32, -1.0, 2.0], "abs_median"),
        Ok(Scalar::F32(2.0))
    );
    // PyTorch: the lower middle, input dtype.
    assert_eq!(torch(&array![3i32, 1, 2, 4], "median"), Ok(Scalar::I32(2)));
}

#[test]
fn pytorch_flavour() {
    let x = array![1.0f32, 2.0, 3.0, 4.0];
    let var = torch(&x, "variance").unwrap().to_f64();
    assert!((var - 5.0 / 3.0).abs() < 1e-6);
    assert_eq!(np(&x, "variance"), Ok(Scalar::F32(1.25)));
    let i = array![1i32, 2];
    for name in ["mean", "std", "variance", "l1", "l2"] {
        let err = torch(&i, name).unwrap_err();
        assert!(
            matches!(err, ReduceError::UnsupportedDtype { .. }),
            "{name}"
        );
        assert!(!err.is_value_error());
    }
    assert_eq!(torch(&i, "sum"), Ok(Scalar::I64(3)));
    assert_eq!(torch(&array![200u8, 100], "sum"), Ok(Scalar::I64(300)));
}

#[test]
fn stats_count_non_finite_values() {
    let x = array![
        1.0f32,
        f32::NAN,
        -3.0,
        f32::INFINITY,
        2.0,
        f32::NEG_INFINITY
    ];
    let s = stats(x.view());
    assert_eq!(
        (s.len, s.nan_count, s.inf_count, s.finite_count()),
        (6, 1, 2, 3)
    );
    assert_eq!(s.finite_min, Some(-3.0));
    assert_eq!(s.finite_max, Some(2.0));
    assert_eq!(s.finite_mean, Some(0.0));
    assert!(!s.all_finite());
    let s = stats(array![f64::NAN].view());
    assert_eq!(s.finite_min, None);
    let s = stats(array![4i16, -2].view());
    assert!(s.all_finite());
    assert_eq!(s.finite_mean, Some(1.0));
    let (out, s2) = reduce_with_stats(x.view(), &[req("max"), req("abs_l1")], Flavor::Numpy);
    assert_eq!(s2, stats(x.view()));
    assert!(out[0].as_ref().unwrap().to_f64().is_nan());
    assert!(out[1].as_ref().unwrap().to_f64().is_nan());
}

#[test]
fn dynamic_views_and_layouts() {
    let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let view: TensorView<'_> = a.view().into();
    assert_eq!(view.dtype(), DType::F64);
    assert_eq!(view.shape(), &[2, 3]);
    let all = ReductionRequest::all();
    assert_eq!(
        view.reduce(&all, Flavor::Numpy),
        reduce(a.view(), &all, Flavor::Numpy)
    );
    assert_eq!(view.stats(), stats(a.view()));
    // A transposed (non-contiguous) view reduces like its row-major copy.
    let t = a.t();
    let copy = t.to_owned();
    assert_eq!(
        reduce(t, &all, Flavor::Numpy),
        reduce(copy.view(), &all, Flavor::Numpy)
    );
}

#[test]
fn abs_requests_derived_from_the_plain_pass_agree() {
    // [abs_sum, abs_mean, abs_l1, abs_l2] alone are answered from the pass over x; with
    // abs_min in the list they get their own pass over |x|. Both must agree exactly.
    let derived: Vec<ReductionRequest> = ["abs_sum", "abs_mean", "abs_l1", "abs_l2", "mean"]
        .iter()
        .map(|s| req(s))
        .collect();
    let mut full = derived.clone();
    full.push(req("abs_min"));
    let data: Vec<f32> = (0..20_000)
        .map(|i| ((i * 7919) % 1013) as f32 * 0.37 - 180.0)
        .collect();
    for shape in [vec![20_000], vec![100, 200], vec![]] {
        let n: usize = shape.iter().product();
        let a = ArrayD::from_shape_vec(IxDyn(&shape), data[..n].to_vec()).unwrap();
        let h = a.mapv(f16::from_f32);
        for flavor in [Flavor::Numpy, Flavor::PyTorch, Flavor::MXNet] {
            let x = reduce(a.view(), &derived, flavor);
            let y = reduce(a.view(), &full, flavor);
            assert_eq!(x[..], y[..derived.len()], "{shape:?} {flavor:?}");
            let x = reduce(h.view(), &derived, flavor);
            let y = reduce(h.view(), &full, flavor);
            assert_eq!(x[..], y[..derived.len()], "f16 {shape:?} {flavor:?}");
        }
    }
}

fn mx<T: smdebug_reduce::Element, D: ndarray::Dimension>(
    a: &Array<T, D>,
    name: &str,
) -> Result<Scalar, ReduceError> {
    reduce_one(a.view(), req(name), Flavor::MXNet)
}

/// `mx.nd.norm(x, ord)` is the entrywise norm of the flattened array at every rank (values
/// from mxnet 1.9.1): `[[1, -2, 3], [4, 5, -6]]` gives l1 21 and l2 9.5393915 (float32),
/// where numpy's matrix norms give 9 (largest column sum) and the largest singular value.
#[test]
fn mxnet_norms_flatten_every_rank() {
    let m = array![[1f32, -2., 3.], [4., 5., -6.]];
    assert_eq!(mx(&m, "l1"), Ok(Scalar::F32(21.0)));
    assert_eq!(mx(&m, "l2"), Ok(Scalar::F32(91f32.sqrt())));
    assert_eq!(mx(&m, "abs_l1"), Ok(Scalar::F32(21.0)));
    assert_eq!(mx(&m, "abs_l2"), Ok(Scalar::F32(91f32.sqrt())));
    assert_eq!(np(&m, "l1"), Ok(Scalar::F32(9.0)));
    assert_ne!(np(&m, "l2"), mx(&m, "l2"));
    // The flattened norm is numpy's vector norm of the same elements, bit for bit.
    let flat = Array::from_iter(m.iter().copied());
    for name in ["l1", "l2", "abs_l1", "abs_l2"] {
        assert_eq!(mx(&m, name), np(&flat, name), "{name}");
    }
    // numpy refuses 0-d and ≥3-d input; mx.nd.norm reduces it.
    let cube = Array::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 12 + j * 4 + k) as f32 - 5.0);
    assert!(np(&cube, "l1").is_err());
    assert_eq!(mx(&cube, "l1"), Ok(Scalar::F32(186.0)));
    let l2 = mx(&cube, "l2").unwrap().to_f64();
    assert!((l2 - 46.518_814).abs() < 1e-5, "{l2}");
    assert!(np(&arr0(-3f64), "l2").is_err());
    assert_eq!(mx(&arr0(-3f64), "l2"), Ok(Scalar::F64(3.0)));
    assert_eq!(mx(&arr0(-3f64), "l1"), Ok(Scalar::F64(3.0)));
}

/// Everything but the norms is numpy's: population std/variance (`mx.nd` has no `std`, so
/// the original falls back to numpy), numpy's dtypes and errors.
#[test]
fn mxnet_is_numpy_but_for_the_norms() {
    let m = array![[1f32, -2., 3.], [4., 5., -6.]];
    let cube = Array::from_shape_fn((2, 3, 4), |(i, j, k)| {
        (i * 12 + j * 4 + k) as f64 * 0.5 - 3.0
    });
    let ints = array![[1i32, -2], [3, 4]];
    for r in ReductionRequest::all() {
        let name = r.name();
        if matches!(r.reduction, Reduction::L1 | Reduction::L2) {
            continue;
        }
        assert_eq!(mx(&m, &name), np(&m, &name), "{name}");
        assert_eq!(mx(&cube, &name), np(&cube, &name), "{name}");
        assert_eq!(mx(&ints, &name), np(&ints, &name), "{name}");
    }
    let empty = Array::<f32, _>::zeros((0, 3));
    assert_eq!(mx(&empty, "max"), np(&empty, "max"));
}
