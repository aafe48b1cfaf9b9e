//! Reductions computed on the fly from a raw value, as the Python trial does
//! (`get_numpy_reduction`): numpy semantics via `smdebug-reduce` (`Flavor::Numpy`), plus the
//! complex and string cases that crate does not cover.

use crate::{Result, TrialError, Value};
use ndarray::{ArrayD, IxDyn};
use smdebug_record::{Complex64, Tensor as RTensor};
use smdebug_reduce::{Flavor, Reduction, ReductionRequest, Scalar, TensorView};

/// Parses one of the nine reduction names the Python trial accepts
/// ([`Reduction::SMDEBUG`]: every reduction but `median`).
pub(crate) fn parse_op(name: &str) -> Result<Reduction> {
    Reduction::SMDEBUG
        .into_iter()
        .find(|r| r.name() == name)
        .ok_or_else(|| TrialError::InvalidReduction {
            name: name.to_owned(),
        })
}

fn view(v: &Value) -> Option<TensorView<'_>> {
    Some(match v {
        RTensor::Float16(a) => TensorView::F16(a.view()),
        RTensor::Float32(a) => TensorView::F32(a.view()),
        RTensor::Float64(a) => TensorView::F64(a.view()),
        RTensor::Int8(a) => TensorView::I8(a.view()),
        RTensor::Int16(a) => TensorView::I16(a.view()),
        RTensor::Int32(a) => TensorView::I32(a.view()),
        RTensor::Int64(a) => TensorView::I64(a.view()),
        RTensor::UInt8(a) => TensorView::U8(a.view()),
        RTensor::UInt16(a) => TensorView::U16(a.view()),
        RTensor::UInt32(a) => TensorView::U32(a.view()),
        RTensor::UInt64(a) => TensorView::U64(a.view()),
        RTensor::Bool(a) => TensorView::Bool(a.view()),
        RTensor::Complex64(_) | RTensor::Complex128(_) | RTensor::Str(_) => return None,
    })
}

/// A reduction result as a 0-d value (numpy returns a scalar of that dtype).
fn scalar_value(s: Scalar) -> Value {
    let d = IxDyn(&[]);
    match s {
        Scalar::Bool(x) => RTensor::Bool(ArrayD::from_elem(d, x)),
        Scalar::I8(x) => RTensor::Int8(ArrayD::from_elem(d, x)),
        Scalar::I16(x) => RTensor::Int16(ArrayD::from_elem(d, x)),
        Scalar::I32(x) => RTensor::Int32(ArrayD::from_elem(d, x)),
        Scalar::I64(x) => RTensor::Int64(ArrayD::from_elem(d, x)),
        Scalar::U8(x) => RTensor::UInt8(ArrayD::from_elem(d, x)),
        Scalar::U16(x) => RTensor::UInt16(ArrayD::from_elem(d, x)),
        Scalar::U32(x) => RTensor::UInt32(ArrayD::from_elem(d, x)),
        Scalar::U64(x) => RTensor::UInt64(ArrayD::from_elem(d, x)),
        Scalar::F16(x) => RTensor::Float16(ArrayD::from_elem(d, x)),
        Scalar::F32(x) => RTensor::Float32(ArrayD::from_elem(d, x)),
        Scalar::F64(x) => RTensor::Float64(ArrayD::from_elem(d, x)),
    }
}

/// `get_numpy_reduction(op, value, abs)`.
pub(crate) fn compute(tensor: &str, value: &Value, op: &str, abs: bool) -> Result<Value> {
    let reduction = parse_op(op)?;
    let request = ReductionRequest::new(reduction, abs);
    if let Some(v) = view(value) {
        let mut out = v.reduce(&[request], Flavor::Numpy);
        return match out.pop() {
            Some(Ok(s)) => Ok(scalar_value(s)),
            Some(Err(source)) => Err(TrialError::Reduce {
                tensor: tensor.to_owned(),
                source,
            }),
            None => Err(TrialError::InvalidReduction {
                name: op.to_owned(),
            }),
        };
    }
    let unsupported = |python: &'static str| TrialError::UnsupportedReduction {
        tensor: tensor.to_owned(),
        reduction: request.name(),
        dtype: value.dtype().name(),
        python,
    };
    let complex: ArrayD<Complex64> = match value {
        RTensor::Complex64(a) => a.mapv(|c| Complex64::new(f64::from(c.re), f64::from(c.im))),
        RTensor::Complex128(a) => a.clone(),
        // numpy: np.absolute and the ufunc reductions reject strings (UFuncTypeError);
        // np.linalg.norm fails converting them to float (ValueError).
        _ if matches!(reduction, Reduction::L1 | Reduction::L2) && !abs => {
            return Err(unsupported("ValueError"))
        }
        _ => return Err(unsupported("UFuncTypeError")),
    };
    if abs {
        // |z| is a float64 array: the ordinary numpy path applies.
        let magnitudes = complex.mapv(|c| c.norm());
        let v = RTensor::Float64(magnitudes);
        return compute(tensor, &v, op, false);
    }
    complex_reduction(tensor, &complex, reduction, value).map_err(|()| unsupported("TypeError"))
}

/// numpy's reductions of a complex128 array (sequential sums; numpy's pairwise order only
/// differs beyond 8 elements, within rounding).
fn complex_reduction(
    tensor: &str,
    a: &ArrayD<Complex64>,
    reduction: Reduction,
    original: &Value,
) -> std::result::Result<Value, ()> {
    let d = IxDyn(&[]);
    let c = |z: Complex64| Ok(RTensor::Complex128(ArrayD::from_elem(d.clone(), z)));
    let f = |x: f64| Ok(RTensor::Float64(ArrayD::from_elem(d.clone(), x)));
    let n = a.len();
    let sum: Complex64 = a.iter().fold(Complex64::new(0.0, 0.0), |s, &z| s + z);
    let mean = sum / n as f64;
    let var = a.iter().map(|z| (z - mean).norm_sqr()).sum::<f64>() / n as f64;
    // numpy orders complex numbers lexicographically (real part, then imaginary); a NaN
    // anywhere propagates.
    let lex = |pick_max: bool| -> Option<Complex64> {
        let mut it = a.iter().copied();
        let first = it.next()?;
        Some(it.fold(first, |best, z| {
            if best.re.is_nan() || best.im.is_nan() {
                return best;
            }
            if z.re.is_nan() || z.im.is_nan() {
                return z;
            }
            let greater = (z.re, z.im) > (best.re, best.im);
            if greater == pick_max && z != best {
                z
            } else {
                best
            }
        }))
    };
    match reduction {
        Reduction::Min => lex(false).map_or(Err(()), c),
        Reduction::Max => lex(true).map_or(Err(()), c),
        Reduction::Sum => c(sum),
        Reduction::Prod => c(a.iter().fold(Complex64::new(1.0, 0.0), |p, &z| p * z)),
        Reduction::Mean => c(mean),
        Reduction::Variance => f(var),
        Reduction::Std => f(var.sqrt()),
        Reduction::L1 | Reduction::L2 if a.ndim() == 1 => {
            let mags = RTensor::Float64(a.mapv(|z| z.norm()));
            compute(
                tensor,
                &mags,
                if reduction == Reduction::L1 {
                    "l1"
                } else {
                    "l2"
                },
                false,
            )
            .map_err(|_| ())
        }
        Reduction::L1 if a.ndim() == 2 => {
            let mags = RTensor::Float64(a.mapv(|z| z.norm()));
            compute(tensor, &mags, "l1", false).map_err(|_| ())
        }
        _ => {
            let _ = original;
            Err(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr1;

    #[test]
    fn complex_and_string_reductions() {
        let z = RTensor::Complex128(
            arr1(&[Complex64::new(1.0, 2.0), Complex64::new(3.0, -1.0)]).into_dyn(),
        );
        let sum = compute("z", &z, "sum", false).unwrap();
        assert_eq!(
            sum.as_array::<Complex64>().unwrap().iter().next(),
            Some(&Complex64::new(4.0, 1.0))
        );
        let max = compute("z", &z, "max", false).unwrap();
        assert_eq!(
            max.as_array::<Complex64>().unwrap().iter().next(),
            Some(&Complex64::new(3.0, -1.0))
        );
        let l1 = compute("z", &z, "l1", false).unwrap();
        let want = 5f64.sqrt() + 10f64.sqrt();
        assert!((l1.as_array::<f64>().unwrap().iter().next().unwrap() - want).abs() < 1e-12);
        let s = RTensor::Str(arr1(&["a".to_owned()]).into_dyn());
        let e = compute("s", &s, "min", false).unwrap_err();
        assert_eq!(e.python_name(), "UFuncTypeError");
        assert_eq!(
            compute("s", &s, "l2", false).unwrap_err().python_name(),
            "ValueError"
        );
        assert_eq!(
            compute("s", &s, "median", false).unwrap_err().python_name(),
            "SMDebugValueError"
        );
    }
}
