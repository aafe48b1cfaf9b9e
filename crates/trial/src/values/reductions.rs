//! Reductions computed on the fly from a raw value, as the Python trial does
//! (`get_numpy_reduction`): numpy semantics via `smdebug-reduce` (`Flavor::Numpy`), plus the
//! complex and string cases that crate does not cover.

use crate::error::{Result, TrialError};
use crate::ErrorKind;
use ndarray::{ArrayD, IxDyn};
use smdebug_record::{Complex64, TensorValue};
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

fn view(v: &TensorValue) -> Option<TensorView<'_>> {
    Some(match v {
        TensorValue::Float16(a) => TensorView::F16(a.view()),
        TensorValue::Float32(a) => TensorView::F32(a.view()),
        TensorValue::Float64(a) => TensorView::F64(a.view()),
        TensorValue::Int8(a) => TensorView::I8(a.view()),
        TensorValue::Int16(a) => TensorView::I16(a.view()),
        TensorValue::Int32(a) => TensorView::I32(a.view()),
        TensorValue::Int64(a) => TensorView::I64(a.view()),
        TensorValue::UInt8(a) => TensorView::U8(a.view()),
        TensorValue::UInt16(a) => TensorView::U16(a.view()),
        TensorValue::UInt32(a) => TensorView::U32(a.view()),
        TensorValue::UInt64(a) => TensorView::U64(a.view()),
        TensorValue::Bool(a) => TensorView::Bool(a.view()),
        TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
            return None
        }
    })
}

/// A reduction result as a 0-d value (numpy returns a scalar of that dtype).
fn scalar_value(s: Scalar) -> TensorValue {
    let d = IxDyn(&[]);
    match s {
        Scalar::Bool(x) => TensorValue::Bool(ArrayD::from_elem(d, x)),
        Scalar::I8(x) => TensorValue::Int8(ArrayD::from_elem(d, x)),
        Scalar::I16(x) => TensorValue::Int16(ArrayD::from_elem(d, x)),
        Scalar::I32(x) => TensorValue::Int32(ArrayD::from_elem(d, x)),
        Scalar::I64(x) => TensorValue::Int64(ArrayD::from_elem(d, x)),
        Scalar::U8(x) => TensorValue::UInt8(ArrayD::from_elem(d, x)),
        Scalar::U16(x) => TensorValue::UInt16(ArrayD::from_elem(d, x)),
        Scalar::U32(x) => TensorValue::UInt32(ArrayD::from_elem(d, x)),
        Scalar::U64(x) => TensorValue::UInt64(ArrayD::from_elem(d, x)),
        Scalar::F16(x) => TensorValue::Float16(ArrayD::from_elem(d, x)),
        Scalar::F32(x) => TensorValue::Float32(ArrayD::from_elem(d, x)),
        Scalar::F64(x) => TensorValue::Float64(ArrayD::from_elem(d, x)),
    }
}

/// `get_numpy_reduction(op, value, abs)`.
pub(crate) fn compute(
    tensor: &str,
    value: &TensorValue,
    op: &str,
    abs: bool,
) -> Result<TensorValue> {
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
    let unsupported = |kind: ErrorKind| TrialError::UnsupportedReduction {
        tensor: tensor.to_owned(),
        reduction: request.name(),
        dtype: value.dtype().name(),
        kind,
    };
    let complex: ArrayD<Complex64> = match value {
        TensorValue::Complex64(a) => a.mapv(|c| Complex64::new(f64::from(c.re), f64::from(c.im))),
        TensorValue::Complex128(a) => a.clone(),
        // numpy: np.linalg.norm first casts a non-float array to float (`x.astype(float)`,
        // which parses each string as Python's float() does: "nan" is NaN, "1_0" is 10),
        // then takes the norm; a string that is not a number raises ValueError.
        TensorValue::Str(a) if matches!(reduction, Reduction::L1 | Reduction::L2) && !abs => {
            let floats = strings_to_f64(tensor, op, a)?;
            return compute(tensor, &TensorValue::Float64(floats), op, false);
        }
        // np.absolute and the ufunc reductions reject strings (UFuncTypeError).
        _ => return Err(unsupported(ErrorKind::NoUfuncLoop)),
    };
    if abs {
        // |z| is a float64 array: the ordinary numpy path applies.
        let magnitudes = complex.mapv(|c| c.norm());
        let v = TensorValue::Float64(magnitudes);
        return compute(tensor, &v, op, false);
    }
    complex_reduction(tensor, &complex, reduction, value)
        .map_err(|()| unsupported(ErrorKind::UnsupportedType))
}

/// `a.astype(float)` of a numpy string array: every element through [`python_float`]; the
/// first one that is not a number fails as numpy does (ValueError, naming the string).
fn strings_to_f64(tensor: &str, op: &str, a: &ArrayD<String>) -> Result<ArrayD<f64>> {
    let mut out = Vec::with_capacity(a.len());
    for (i, s) in a.iter().enumerate() {
        match python_float(s) {
            Some(x) => out.push(x),
            None => {
                return Err(TrialError::ValueError {
                    message: format!(
                        "{tensor}: reduction {op}: could not convert string to float: {s:?} \
                         (element {i} in logical order)"
                    ),
                })
            }
        }
    }
    Ok(ArrayD::from_shape_vec(a.raw_dim(), out).expect("same number of elements"))
}

/// The zero of every run of Unicode decimal digits (general category Nd, Unicode 14.0, the
/// version of Python 3.11): each run is the ten digits 0–9 in order.
const DECIMAL_ZEROS: &[u32] = &[
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
    0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
    0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

fn decimal_value(c: char) -> Option<u8> {
    let c = c as u32;
    DECIMAL_ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&c))
        .map(|zero| (c - zero) as u8)
}

/// What float() strips: ASCII space, \t \n \v \f \r, and non-ASCII Unicode whitespace
/// (Python maps those to spaces first; U+001C–U+001F are `isspace` but not stripped).
// Not `smdebug_config::is_python_whitespace` (str.strip's rule): float() strips only the six
// ASCII spaces below 128 (U+001C..U+001F stay and make it raise) and Unicode spaces above.
fn python_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
    } else {
        c.is_whitespace()
    }
}

/// Python 3.11's `float(s)` for a string, `None` where it raises ValueError: surrounding
/// whitespace is stripped, Unicode decimal digits count as their ASCII digits, single
/// underscores may separate digits (PEP 515), then an optional sign and a decimal number
/// (`5.`, `.5`, `1e-3`) or `inf`, `infinity`, `nan` in any case. No hexadecimal.
pub(crate) fn python_float(s: &str) -> Option<f64> {
    let s = s.trim_matches(python_space);
    let mut ascii = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else if let Some(d) = decimal_value(c) {
            ascii.push(char::from(b'0' + d));
        } else {
            return None;
        }
    }
    let bytes = ascii.as_bytes();
    if bytes.contains(&b'_') {
        let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'_' && (i == 0 || !digit_at(i - 1) || !digit_at(i + 1)) {
                return None;
            }
        }
        ascii.retain(|c| c != '_');
    }
    // Rust's grammar is Python's: sign, digits with optional point and exponent, or
    // inf/infinity/nan case-insensitively; neither accepts hex, spaces or "nan(...)".
    ascii.parse::<f64>().ok()
}

/// numpy's reductions of a complex128 array (sequential sums; numpy's pairwise order only
/// differs beyond 8 elements, within rounding).
fn complex_reduction(
    tensor: &str,
    a: &ArrayD<Complex64>,
    reduction: Reduction,
    original: &TensorValue,
) -> std::result::Result<TensorValue, ()> {
    let d = IxDyn(&[]);
    let c = |z: Complex64| Ok(TensorValue::Complex128(ArrayD::from_elem(d.clone(), z)));
    let f = |x: f64| Ok(TensorValue::Float64(ArrayD::from_elem(d.clone(), x)));
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
            let mags = TensorValue::Float64(a.mapv(|z| z.norm()));
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
            let mags = TensorValue::Float64(a.mapv(|z| z.norm()));
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
        let z = TensorValue::Complex128(
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
        let s = TensorValue::Str(arr1(&["a".to_owned()]).into_dyn());
        let e = compute("s", &s, "min", false).unwrap_err();
        assert_eq!(e.kind().as_str(), "UFuncTypeError");
        assert_eq!(
            compute("s", &s, "l2", false).unwrap_err().kind().as_str(),
            "ValueError"
        );
        // np.absolute rejects strings before the norm sees them.
        assert_eq!(
            compute("s", &s, "l2", true).unwrap_err().kind().as_str(),
            "UFuncTypeError"
        );
        assert_eq!(
            compute("s", &s, "median", false)
                .unwrap_err()
                .kind()
                .as_str(),
            "SMDebugValueError"
        );
    }

    fn f64_of(v: &TensorValue) -> f64 {
        *v.as_array::<f64>().unwrap().iter().next().unwrap()
    }

    fn strings(v: &[&str]) -> TensorValue {
        TensorValue::Str(arr1(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).into_dyn())
    }

    #[test]
    fn norms_of_numeric_strings_are_numpy_norms_of_their_floats() {
        // What the XGBoost hook writes as trees/Category: "nan" for every numeric split.
        let cat = strings(&["nan", "nan", "nan"]);
        assert!(f64_of(&compute("trees/Category", &cat, "l1", false).unwrap()).is_nan());
        assert!(f64_of(&compute("trees/Category", &cat, "l2", false).unwrap()).is_nan());
        let v = strings(&["3", " 4.0\n", "-0"]);
        assert_eq!(f64_of(&compute("v", &v, "l2", false).unwrap()), 5.0);
        assert_eq!(f64_of(&compute("v", &v, "l1", false).unwrap()), 7.0);
        // 2-D: the matrix norms of the converted array (max column sum for l1).
        let m = TensorValue::Str(
            ndarray::arr2(&[["1".to_owned(), "-2".to_owned()], ["3".into(), "4".into()]])
                .into_dyn(),
        );
        assert_eq!(f64_of(&compute("m", &m, "l1", false).unwrap()), 6.0);
        // The other reductions still reject strings, as numpy's ufuncs do.
        assert_eq!(
            compute("v", &v, "sum", false).unwrap_err().kind().as_str(),
            "UFuncTypeError"
        );
        let bad = strings(&["1", "abc"]);
        let e = compute("t", &bad, "l1", false).unwrap_err();
        assert_eq!(e.kind().as_str(), "ValueError");
        assert!(e.to_string().contains("\"abc\""), "{e}");
    }

    #[test]
    fn python_float_accepts_what_float_accepts() {
        let ok: &[(&str, f64)] = &[
            ("1.5", 1.5),
            (" 1.5 ", 1.5),
            ("1.5\n", 1.5),
            ("\u{2003} 2 ", 2.0),
            ("\x0b7\x0c", 7.0),
            ("+inf", f64::INFINITY),
            ("Infinity", f64::INFINITY),
            ("-infinity", f64::NEG_INFINITY),
            ("1_000", 1000.0),
            ("1e1_0", 1e10),
            ("1e500", f64::INFINITY),
            ("1e-400", 0.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1E+2", 100.0),
            ("\u{661}\u{662}", 12.0),
            ("\u{663}.\u{665}", 3.5),
            ("\u{ff11}", 1.0),
        ];
        for &(s, want) in ok {
            assert_eq!(python_float(s), Some(want), "{s:?}");
        }
        for s in ["nan", "NaN", "-nan", "+NAN"] {
            assert!(python_float(s).is_some_and(f64::is_nan), "{s:?}");
        }
        let bad = [
            "", " ", "abc", "0x10", "in f", "1__0", "_1", "1_", "1_.5", "1._5", "nan(1)",
            "infinit", "1e", "e5", ".", "1,5", "\u{b2}", "\u{2155}", "1 2", "\u{1f}7",
        ];
        for s in bad {
            assert_eq!(python_float(s), None, "{s:?}");
        }
    }
}
