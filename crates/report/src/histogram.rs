//! A histogram of one value, counted in one streaming pass per bound: a 64 Mi-element
//! tensor costs no copy of its elements.

use crate::data::Histogram;
use smdebug_record::TensorValue;

/// Calls `f` with every element of a real value as `f64` (as `TensorValue::to_f64_vec`
/// converts them), without collecting them; `false` for complex numbers and strings.
fn for_each_f64(value: &TensorValue, mut f: impl FnMut(f64)) -> bool {
    match value {
        TensorValue::Float16(a) => a.iter().for_each(|x| f(x.to_f64())),
        TensorValue::Float32(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::Float64(a) => a.iter().for_each(|&x| f(x)),
        TensorValue::Int8(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::Int16(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::Int32(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::Int64(a) => a.iter().for_each(|&x| f(x as f64)),
        TensorValue::UInt8(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::UInt16(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::UInt32(a) => a.iter().for_each(|&x| f(f64::from(x))),
        TensorValue::UInt64(a) => a.iter().for_each(|&x| f(x as f64)),
        TensorValue::Bool(a) => a.iter().for_each(|&x| f(if x { 1.0 } else { 0.0 })),
        TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
            return false
        }
    }
    true
}

/// The histogram of `value` in `bins` equal bins between its finite minimum and maximum
/// (a constant value gets a bin of width one around it); `None` when it is not real or
/// holds no finite element.
pub fn histogram_of(
    tensor: &str,
    step: i64,
    value: &TensorValue,
    bins: usize,
) -> Option<Histogram> {
    let bins = bins.max(1);
    let (mut lo, mut hi, mut non_finite) = (f64::INFINITY, f64::NEG_INFINITY, 0u64);
    let real = for_each_f64(value, |x| {
        if x.is_finite() {
            lo = lo.min(x);
            hi = hi.max(x);
        } else {
            non_finite += 1;
        }
    });
    if !real || lo > hi {
        return None;
    }
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, hi + 0.5)
    };
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for_each_f64(value, |x| {
        if x.is_finite() {
            let b = (((x - lo) / width) as usize).min(bins - 1);
            counts[b] += 1;
        }
    });
    Some(Histogram {
        tensor: tensor.to_owned(),
        step,
        edges: (0..=bins).map(|i| lo + width * i as f64).collect(),
        counts,
        non_finite,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_count_every_finite_element_once() {
        let v = TensorValue::from(ndarray::arr1(&[0.0f32, 1.0, 2.0, 3.0, f32::NAN]).into_dyn());
        let h = histogram_of("w", 4, &v, 3).unwrap();
        assert_eq!(h.counts, [1, 1, 2]);
        assert_eq!(h.non_finite, 1);
        assert_eq!(h.edges.len(), 4);
        assert_eq!((h.edges[0], h.edges[3]), (0.0, 3.0));
        let c = TensorValue::from(ndarray::arr1(&[5i32, 5]).into_dyn());
        assert_eq!(histogram_of("c", 0, &c, 2).unwrap().counts, [0, 2]);
        let nan = TensorValue::from(ndarray::arr1(&[f64::NAN]).into_dyn());
        assert!(histogram_of("n", 0, &nan, 2).is_none());
    }
}
