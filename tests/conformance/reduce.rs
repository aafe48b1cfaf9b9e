//! smdebug-reduce against numpy itself: a few hundred generated arrays of every dtype and
//! many edge cases, every one of the 20 (reduction, abs) pairs, compared by value, result
//! dtype and exception class (`tests/peer/reduce_numpy.py` runs smdebug's own
//! `get_numpy_reduction`, and `np.median`).

use half::f16;
use ndarray::{ArrayD, IxDyn};
use serde_json::{json, Value};
use smdebug_reduce::{DType, Flavor, Reduction, ReductionRequest, Scalar, TensorView};

/// A deterministic xorshift generator (no dependency, same arrays on every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Random,
    Special,
    Offset,
    Extremes,
}

fn float_json(v: f64) -> Value {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// Rounds `v` to the float dtype `dt`.
fn round_to(dt: DType, v: f64) -> f64 {
    match dt {
        DType::F16 => f64::from(f16::from_f64(v)),
        DType::F32 => f64::from(v as f32),
        _ => v,
    }
}

fn int_range(dt: DType) -> (i128, i128) {
    match dt {
        DType::Bool => (0, 1),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        _ => unreachable!("float dtype"),
    }
}

fn value(rng: &mut Rng, dt: DType, mode: Mode, i: usize) -> Value {
    if dt.is_float() {
        let big = match dt {
            DType::F16 => 65504.0,
            DType::F32 => f64::from(f32::MAX),
            _ => f64::MAX,
        };
        let tiny = match dt {
            DType::F16 => 6e-8,
            DType::F32 => 1e-45,
            _ => 5e-324,
        };
        let scale = [1.0, 0.01, 100.0][i % 3];
        let v = match mode {
            Mode::Random | Mode::Extremes => (rng.unit() - 0.5) * 2.0 * scale,
            Mode::Offset => 1000.0 + rng.unit(),
            Mode::Special => match rng.below(12) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => -0.0,
                4 => 0.0,
                5 => tiny,
                6 => big,
                7 => -big,
                _ => (rng.unit() - 0.5) * 10.0,
            },
        };
        float_json(round_to(dt, v))
    } else {
        let (lo, hi) = int_range(dt);
        let v: i128 = match mode {
            Mode::Extremes => match rng.below(4) {
                0 => lo,
                1 => hi,
                _ => lo + (rng.next() as i128).rem_euclid(hi - lo + 1),
            },
            Mode::Random | Mode::Special => {
                let small = (rng.below(201) as i128 - 100).clamp(lo, hi);
                if rng.below(4) == 0 {
                    lo + (rng.next() as i128).rem_euclid(hi - lo + 1)
                } else {
                    small
                }
            }
            Mode::Offset => (1000 + rng.below(7) as i128).clamp(lo, hi),
        };
        if dt == DType::Bool {
            json!(v != 0)
        } else if v < 0 {
            json!(v as i64)
        } else {
            json!(v as u64)
        }
    }
}

struct Case {
    dtype: DType,
    shape: Vec<usize>,
    values: Vec<Value>,
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let shapes: Vec<Vec<usize>> = vec![
        vec![],
        vec![0],
        vec![1],
        vec![2],
        vec![5],
        vec![8],
        vec![9],
        vec![17],
        vec![100],
        vec![129],
        vec![300],
        vec![3, 4],
        vec![4, 3],
        vec![1, 6],
        vec![6, 1],
        vec![0, 3],
        vec![3, 0],
        vec![20, 17],
        vec![64, 48],
        vec![33, 70],
        vec![2, 3, 2],
        vec![2, 0, 2],
    ];
    let mut out = Vec::new();
    for dt in DType::ALL {
        let modes: &[Mode] = if dt.is_float() {
            &[Mode::Random, Mode::Special, Mode::Offset]
        } else {
            &[Mode::Random, Mode::Extremes, Mode::Offset]
        };
        for &mode in modes {
            for shape in &shapes {
                let n: usize = shape.iter().product();
                let values = (0..n).map(|i| value(&mut rng, dt, mode, i)).collect();
                out.push(Case {
                    dtype: dt,
                    shape: shape.clone(),
                    values,
                });
            }
        }
        // Long arrays cross numpy's 8192-element buffers and deepen the pairwise tree.
        // The division dtype of numpy's `_var` mean changes at 256 and 65536 elements.
        for n in [255usize, 257, 2049, 8191, 8193, 20_000, 70_001] {
            let values = (0..n)
                .map(|i| value(&mut rng, dt, Mode::Random, i))
                .collect();
            out.push(Case {
                dtype: dt,
                shape: vec![n],
                values,
            });
        }
    }
    // Hand-picked: the documented examples and numpy's corner cases.
    for (dt, shape, vals) in [
        (DType::F64, vec![2, 2], json!([1, -2, 3, 4])),
        (DType::F32, vec![2, 2], json!(["inf", 1, 2, 3])),
        (DType::F32, vec![3], json!(["nan", "nan", "nan"])),
        (DType::F32, vec![3], json!([3e38, 3e38, -3e38])),
        (DType::F16, vec![3000, 2], json!(vec![1.0; 6000])),
        (DType::F16, vec![3000], json!(vec![1.0; 3000])),
        (DType::F16, vec![100_000], json!(vec![1.0; 100_000])),
        (DType::F32, vec![2], json!([0.0, -0.0])),
        (DType::I64, vec![2], json!([i64::MAX, 1])),
        (DType::I64, vec![2], json!([1i64 << 62, 4])),
        (DType::U8, vec![2], json!([255, 1])),
        (DType::I8, vec![], json!([-128])),
        (DType::F32, vec![], json!([-2.5])),
        (DType::Bool, vec![], json!([true])),
    ] {
        out.push(Case {
            dtype: dt,
            shape,
            values: vals.as_array().unwrap().clone(),
        });
    }
    out
}

fn parse_float(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            other => panic!("unexpected float string {other}"),
        },
        other => other.as_f64().expect("a JSON number"),
    }
}

/// Typed owned arrays built from the same JSON the peer reads.
enum Owned {
    Bool(ArrayD<bool>),
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    F16(ArrayD<f16>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
}

fn build(case: &Case) -> Owned {
    let shape = IxDyn(&case.shape);
    let ints = || -> Vec<i128> {
        case.values
            .iter()
            .map(|v| {
                v.as_i64()
                    .map(i128::from)
                    .or_else(|| v.as_u64().map(i128::from))
                    .or_else(|| v.as_bool().map(i128::from))
                    .expect("integer value")
            })
            .collect()
    };
    let floats = || -> Vec<f64> { case.values.iter().map(parse_float).collect() };
    macro_rules! arr {
        ($v:expr) => {
            ArrayD::from_shape_vec(shape.clone(), $v).expect("shape matches values")
        };
    }
    match case.dtype {
        DType::Bool => Owned::Bool(arr!(ints().into_iter().map(|v| v != 0).collect())),
        DType::I8 => Owned::I8(arr!(ints().into_iter().map(|v| v as i8).collect())),
        DType::I16 => Owned::I16(arr!(ints().into_iter().map(|v| v as i16).collect())),
        DType::I32 => Owned::I32(arr!(ints().into_iter().map(|v| v as i32).collect())),
        DType::I64 => Owned::I64(arr!(ints().into_iter().map(|v| v as i64).collect())),
        DType::U8 => Owned::U8(arr!(ints().into_iter().map(|v| v as u8).collect())),
        DType::U16 => Owned::U16(arr!(ints().into_iter().map(|v| v as u16).collect())),
        DType::U32 => Owned::U32(arr!(ints().into_iter().map(|v| v as u32).collect())),
        DType::U64 => Owned::U64(arr!(ints().into_iter().map(|v| v as u64).collect())),
        DType::F16 => Owned::F16(arr!(floats().into_iter().map(f16::from_f64).collect())),
        DType::F32 => Owned::F32(arr!(floats().into_iter().map(|v| v as f32).collect())),
        DType::F64 => Owned::F64(arr!(floats())),
    }
}

impl Owned {
    fn view(&self) -> TensorView<'_> {
        match self {
            Owned::Bool(a) => a.view().into(),
            Owned::I8(a) => a.view().into(),
            Owned::I16(a) => a.view().into(),
            Owned::I32(a) => a.view().into(),
            Owned::I64(a) => a.view().into(),
            Owned::U8(a) => a.view().into(),
            Owned::U16(a) => a.view().into(),
            Owned::U32(a) => a.view().into(),
            Owned::U64(a) => a.view().into(),
            Owned::F16(a) => a.view().into(),
            Owned::F32(a) => a.view().into(),
            Owned::F64(a) => a.view().into(),
        }
    }
}

/// The relative tolerance allowed for a float result; 0 means bit-identical (up to the sign
/// of zero). Only `l2` is not reproduced exactly: numpy computes it with BLAS `dot` (1-d) or
/// LAPACK's SVD (2-d), whose summation order belongs to the BLAS library.
fn tolerance(req: ReductionRequest, dtype: DType, ndim: usize) -> f64 {
    if req.reduction != Reduction::L2 || (dtype == DType::F16 && ndim <= 1) {
        return 0.0;
    }
    match dtype {
        DType::F32 => 4e-6,
        _ => 1e-12,
    }
}

fn compare(
    case: &Case,
    req: ReductionRequest,
    ours: &Result<Scalar, impl std::fmt::Display + HasClass>,
    theirs: &Value,
) -> Option<String> {
    let what = if case.values.len() <= 12 {
        format!("{} {:?} {:?} {}", case.dtype, case.shape, case.values, req)
    } else {
        format!("{} {:?} {}", case.dtype, case.shape, req)
    };
    if let Some(class) = theirs.get("error").and_then(Value::as_str) {
        return match ours {
            Err(e) if e.class() == class => None,
            Err(e) => Some(format!(
                "{what}: error class {} vs numpy {class}",
                e.class()
            )),
            Ok(v) => Some(format!(
                "{what}: got {v} ({}) but numpy raised {class}",
                v.dtype()
            )),
        };
    }
    let dtype = theirs["dtype"].as_str().expect("dtype");
    let ours = match ours {
        Ok(v) => v,
        Err(e) => return Some(format!("{what}: error {e} but numpy gave {theirs}")),
    };
    if ours.dtype().numpy_name() != dtype {
        return Some(format!("{what}: dtype {} vs numpy {dtype}", ours.dtype()));
    }
    let tv = &theirs["value"];
    if let Some(i) = ours.to_i128() {
        let t = tv
            .as_i64()
            .map(i128::from)
            .or_else(|| tv.as_u64().map(i128::from))
            .or_else(|| tv.as_bool().map(i128::from))
            .expect("integer result");
        return (i != t).then(|| format!("{what}: {i} vs numpy {t}"));
    }
    let a = ours.to_f64();
    let b = match theirs.get("f64_bits").and_then(Value::as_u64) {
        Some(bits) => f64::from_bits(bits),
        None => parse_float(tv),
    };
    let ok = if a.is_nan() || b.is_nan() {
        a.is_nan() && b.is_nan()
    } else if a == b {
        true
    } else {
        let tol = tolerance(req, case.dtype, case.shape.len());
        (a - b).abs() <= tol * b.abs().max(a.abs())
    };
    (!ok).then(|| format!("{what}: {a:e} vs numpy {b:e} (diff {:e})", a - b))
}

trait HasClass {
    fn class(&self) -> &'static str;
}

impl HasClass for smdebug_reduce::ReduceError {
    fn class(&self) -> &'static str {
        smdebug_trial::ErrorKind::from(self).as_str()
    }
}

#[test]
fn numpy_reductions_match_numpy() {
    let cases = cases();
    assert!(cases.len() >= 300, "only {} cases", cases.len());
    let input: Vec<Value> = cases
        .iter()
        .map(|c| json!({"dtype": c.dtype.numpy_name(), "shape": c.shape, "values": c.values}))
        .collect();
    let dir = smdebug_conformance::tempdir();
    let path = dir.path().join("arrays.json");
    std::fs::write(&path, serde_json::to_vec(&input).unwrap()).unwrap();
    let expected = smdebug_conformance::run_peer_json("reduce_numpy.py", &[path.to_str().unwrap()]);
    let expected = expected.as_array().expect("a list");
    assert_eq!(expected.len(), cases.len());
    let requests = ReductionRequest::all();
    let mut mismatches = Vec::new();
    let mut compared = 0usize;
    for (case, theirs) in cases.iter().zip(expected) {
        let owned = build(case);
        let ours = owned.view().reduce(&requests, Flavor::Numpy);
        for (req, ours) in requests.iter().zip(&ours) {
            let t = &theirs[req.name()];
            assert!(!t.is_null(), "numpy output lacks {req}");
            compared += 1;
            if let Some(m) = compare(case, *req, ours, t) {
                mismatches.push(m);
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {compared} results differ from numpy:\n{}",
        mismatches.len(),
        mismatches
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
