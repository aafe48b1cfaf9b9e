//! Health summaries against the plain definitions numpy uses (`np.isnan(x).sum()`,
//! `np.isposinf`, `np.isneginf`, `(x == 0).sum()`, min/max/abs-max of `x[np.isfinite(x)]`),
//! for every dtype, with NaN, ±Inf and zeros placed at the edges of the array, of the
//! 16-element blocks and of the 8192-element buffers (the vector loops' tails).

use half::f16;
use ndarray::Array1;
use proptest::prelude::*;
use smdebug_reduce::{
    all_finite, health, histogram_bucket, reduce, reduce_with_health, Element, Flavor, Health,
    ReductionRequest, HISTOGRAM_BUCKETS,
};

/// The reference summary, element by element in `f64`.
fn reference(v: &[f64], with_histogram: bool) -> Health {
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let (lo, hi) = if finite.is_empty() {
        (f64::NAN, f64::NAN)
    } else {
        (
            finite.iter().copied().fold(f64::INFINITY, f64::min),
            finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    let histogram = with_histogram.then(|| {
        let mut h = vec![0u64; HISTOGRAM_BUCKETS];
        for &x in &finite {
            if x != 0.0 {
                // floor(log2|x|), by the definition rather than the bit trick.
                let e = x.abs().log2().floor() as i32;
                let b = (e + 64).clamp(0, HISTOGRAM_BUCKETS as i32 - 1) as usize;
                h[b] += 1;
            }
        }
        h
    });
    Health {
        elements: v.len() as u64,
        nan: v.iter().filter(|x| x.is_nan()).count() as u64,
        pos_inf: v.iter().filter(|&&x| x == f64::INFINITY).count() as u64,
        neg_inf: v.iter().filter(|&&x| x == f64::NEG_INFINITY).count() as u64,
        zeros: v.iter().filter(|&&x| x == 0.0).count() as u64,
        finite_min: lo,
        finite_max: hi,
        amax: finite.iter().map(|x| x.abs()).fold(f64::NAN, f64::max),
        histogram,
    }
}

/// Equal, NaN equal to NaN.
fn same(a: &Health, b: &Health) -> bool {
    let f = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    (a.elements, a.nan, a.pos_inf, a.neg_inf, a.zeros)
        == (b.elements, b.nan, b.pos_inf, b.neg_inf, b.zeros)
        && f(a.finite_min, b.finite_min)
        && f(a.finite_max, b.finite_max)
        && f(a.amax, b.amax)
        && a.histogram == b.histogram
}

/// Positions where the special values go: both ends, around the 16-element block tail and
/// around the 8192-element buffer boundary, plus `extra` anywhere.
fn positions(n: usize, extra: &[usize]) -> Vec<usize> {
    let mut p = vec![0, 1, n.saturating_sub(1), n.saturating_sub(2)];
    for b in [n - n % 16, 8191, 8192, 8193, 16383] {
        p.push(b);
    }
    p.extend(extra.iter().map(|e| e % n.max(1)));
    p.retain(|&i| i < n);
    p
}

/// Checks one dtype; the reference works on the values as the dtype holds them.
fn check<T: Element>(v: &[T], with_histogram: bool) -> Result<(), TestCaseError> {
    let x = Array1::from(v.to_vec());
    let vals: Vec<f64> = v.iter().map(|e| e.to_f64()).collect();
    let want = reference(&vals, with_histogram);
    let alone = health(x.view(), with_histogram);
    prop_assert!(same(&alone, &want), "health {alone:?}\nwant {want:?}");
    prop_assert_eq!(
        all_finite(x.view()),
        want.nan + want.pos_inf + want.neg_inf == 0
    );
    let requests: Vec<ReductionRequest> = ["min", "max", "mean", "l2", "abs_sum"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let (out, fused) = reduce_with_health(x.view(), &requests, Flavor::Numpy, with_histogram);
    prop_assert!(same(&fused, &want), "fused {fused:?}\nwant {want:?}");
    // The reductions are the plain pass's, bit for bit.
    let plain = reduce(x.view(), &requests, Flavor::Numpy);
    for (a, b) in out.iter().zip(&plain) {
        match (a, b) {
            (Ok(a), Ok(b)) => prop_assert!(
                a == b || (a.to_f64().is_nan() && b.to_f64().is_nan()),
                "{a:?} vs {b:?}"
            ),
            (a, b) => prop_assert_eq!(a.is_ok(), b.is_ok()),
        }
    }
    Ok(())
}

fn special() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
    ]
}

fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..70, 8180usize..8210, 16370usize..16400]
}

fn case() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<usize>, bool)> {
    lengths().prop_flat_map(|n| {
        (
            prop::collection::vec(-1e4f64..1e4, n),
            prop::collection::vec(special(), 12),
            prop::collection::vec(any::<usize>(), 0..4),
            any::<bool>(),
        )
    })
}

/// Puts the special values at the interesting positions.
fn with_specials(mut v: Vec<f64>, sp: &[f64], extra: &[usize]) -> Vec<f64> {
    let n = v.len();
    for (k, i) in positions(n, extra).into_iter().enumerate() {
        v[i] = sp[k % sp.len()];
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn float_health_matches_numpy_definitions((v, sp, extra, hist) in case()) {
        let v = with_specials(v, &sp, &extra);
        check::<f64>(&v, hist)?;
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        check::<f32>(&v32, hist)?;
        let v16: Vec<f16> = v.iter().map(|&x| f16::from_f64(x)).collect();
        check::<f16>(&v16, hist)?;
    }

    #[test]
    fn integer_health_matches_numpy_definitions((v, _sp, extra, hist) in case()) {
        // Zeros at the same edges; integers have no non-finite values.
        let v = with_specials(v, &[0.0], &extra);
        check::<i8>(&v.iter().map(|&x| x as i8).collect::<Vec<_>>(), hist)?;
        check::<i16>(&v.iter().map(|&x| x as i16).collect::<Vec<_>>(), hist)?;
        check::<i32>(&v.iter().map(|&x| x as i32).collect::<Vec<_>>(), hist)?;
        check::<i64>(&v.iter().map(|&x| x as i64).collect::<Vec<_>>(), hist)?;
        check::<u8>(&v.iter().map(|&x| x.abs() as u8).collect::<Vec<_>>(), hist)?;
        check::<u16>(&v.iter().map(|&x| x.abs() as u16).collect::<Vec<_>>(), hist)?;
        check::<u32>(&v.iter().map(|&x| x.abs() as u32).collect::<Vec<_>>(), hist)?;
        check::<u64>(&v.iter().map(|&x| x.abs() as u64).collect::<Vec<_>>(), hist)?;
        check::<bool>(&v.iter().map(|&x| x > 0.0).collect::<Vec<_>>(), hist)?;
    }
}

/// Checks [`all_finite`] of one float dtype against `is_finite` element by element: the
/// whole array, reversed (negative strides) and every other element (a strided view).
fn check_all_finite<T: Element>(v: &[T]) -> Result<(), TestCaseError> {
    let x = Array1::from(v.to_vec());
    let finite = |e: &T| e.to_f64().is_finite();
    let all = v.iter().all(finite);
    prop_assert_eq!(all_finite(x.view()), all);
    prop_assert_eq!(all_finite(x.slice(ndarray::s![..;-1])), all);
    let from = v.len().min(1);
    let odd = x.slice(ndarray::s![from..;2]);
    prop_assert_eq!(all_finite(odd), v.iter().skip(from).step_by(2).all(finite));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// One NaN or infinity (or none) anywhere, also next to the 4096-element blocks the
    /// scan looks at the answer between and in the vector loop's tail.
    #[test]
    fn all_finite_finds_a_lone_nan_or_infinity_anywhere(
        v in prop_oneof![0usize..70, 4090usize..4110, 8180usize..8210]
            .prop_flat_map(|n| prop::collection::vec(-6e4f64..6e4, n)),
        at in any::<usize>(),
        near_block in any::<bool>(),
        sp in prop::option::of(prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY)
        ]),
    ) {
        let mut v = v;
        if let (Some(sp), false) = (sp, v.is_empty()) {
            let i = if near_block { (4094 + at % 5).min(v.len() - 1) } else { at % v.len() };
            v[i] = sp;
        }
        check_all_finite::<f64>(&v)?;
        check_all_finite::<f32>(&v.iter().map(|&x| x as f32).collect::<Vec<_>>())?;
        check_all_finite::<f16>(&v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>())?;
    }
}

#[test]
fn integers_and_bool_are_always_finite() {
    assert!(all_finite(ndarray::arr1(&[i64::MIN, 0, i64::MAX]).view()));
    assert!(all_finite(ndarray::arr1(&[u8::MAX]).view()));
    assert!(all_finite(ndarray::arr1(&[true, false]).view()));
}

#[test]
fn extremes_of_each_dtype_land_in_the_end_buckets() {
    assert_eq!(
        histogram_bucket(f64::from(f32::MAX)),
        Some(HISTOGRAM_BUCKETS - 1)
    );
    assert_eq!(histogram_bucket(f64::MIN_POSITIVE / 4.0), Some(0));
    assert_eq!(histogram_bucket(i64::MIN as f64), Some(127));
    let x = Array1::from(vec![i64::MIN, 0, i64::MAX]);
    let h = health(x.view(), false);
    assert_eq!(h.amax, 2f64.powi(63));
    assert_eq!(h.zeros, 1);
}

#[test]
fn all_non_finite_has_no_range() {
    let x = Array1::from(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    let h = health(x.view(), true);
    assert_eq!((h.nan, h.pos_inf, h.neg_inf, h.zeros), (1, 1, 1, 0));
    assert!(h.finite_min.is_nan() && h.finite_max.is_nan() && h.amax.is_nan());
    assert_eq!(h.histogram.unwrap().iter().sum::<u64>(), 0);
    assert!(!health(Array1::<f64>::zeros(0).view(), false)
        .amax
        .is_finite());
}
