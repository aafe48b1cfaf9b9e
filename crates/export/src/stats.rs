//! The summary statistics of a raw value, from one fused pass over its elements.

use smdebug_record::TensorValue;
use smdebug_reduce::FiniteStats;

/// Summary statistics of one raw value (see `docs/src/export.md`, table `tensors`).
///
/// `min`, `max`, `mean`, `std` (population), `l1` (Σ|x|) and `l2` (√Σx²) are over the
/// *finite* elements, in `f64`, and `None` when there is none; NaN and ±Inf are counted
/// instead, so one NaN does not hide the rest of the tensor.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Statistics {
    /// Smallest finite element.
    pub min: Option<f64>,
    /// Largest finite element.
    pub max: Option<f64>,
    /// Mean of the finite elements.
    pub mean: Option<f64>,
    /// Population standard deviation of the finite elements.
    pub std: Option<f64>,
    /// Sum of the absolute values of the finite elements.
    pub l1: Option<f64>,
    /// Square root of the sum of squares of the finite elements.
    pub l2: Option<f64>,
    /// Number of NaN elements.
    pub nan_count: u64,
    /// Number of +Inf elements.
    pub pos_inf_count: u64,
    /// Number of -Inf elements.
    pub neg_inf_count: u64,
    /// Number of elements equal to zero (`false` for bool).
    pub zero_count: u64,
}

/// Statistics of a raw value; `None` for values that have none (complex numbers, strings).
///
/// A mapping onto [`smdebug_reduce::finite_stats`], the workspace's one kernel for
/// statistics of finite elements (blocks converted to `f64` while in cache, Chan et al.'s
/// merge, vectorized): this crate keeps only the table's names for its results.
pub fn statistics(value: &TensorValue) -> Option<Statistics> {
    Some(Statistics::from(value.reduce_view()?.finite_stats()))
}

impl From<FiniteStats> for Statistics {
    /// The table's names for the kernel's results (from a decoded value or straight from a
    /// record's bytes, [`smdebug_trial::OnceValue::finite_stats`]).
    fn from(s: FiniteStats) -> Self {
        Statistics {
            min: s.min(),
            max: s.max(),
            mean: s.mean(),
            std: s.std(),
            l1: s.l1(),
            l2: s.l2(),
            nan_count: s.nan,
            pos_inf_count: s.pos_inf,
            neg_inf_count: s.neg_inf,
            zero_count: s.zeros,
        }
    }
}

/// The elements of a real-valued value as `f64` (`None` for complex numbers and strings).
pub fn values_f64(value: &TensorValue) -> Option<Vec<f64>> {
    value.to_f64_vec()
}

/// The single element of a one-element real value as `f64` (a saved reduction, a scalar).
pub fn scalar_f64(value: &TensorValue) -> Option<f64> {
    if value.len() != 1 {
        return None;
    }
    values_f64(value).and_then(|v| v.first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64]) -> Statistics {
        let fin: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
        let n = fin.len() as f64;
        let mean = fin.iter().sum::<f64>() / n;
        let var = fin.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let some = |v: f64| (!fin.is_empty()).then_some(v);
        Statistics {
            min: some(fin.iter().copied().fold(f64::INFINITY, f64::min)),
            max: some(fin.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            mean: some(mean),
            std: some(var.sqrt()),
            l1: some(fin.iter().map(|v| v.abs()).sum()),
            l2: some(fin.iter().map(|v| v * v).sum::<f64>().sqrt()),
            nan_count: x.iter().filter(|v| v.is_nan()).count() as u64,
            pos_inf_count: x.iter().filter(|&&v| v == f64::INFINITY).count() as u64,
            neg_inf_count: x.iter().filter(|&&v| v == f64::NEG_INFINITY).count() as u64,
            zero_count: x.iter().filter(|&&v| v == 0.0).count() as u64,
        }
    }

    fn close(a: Option<f64>, b: Option<f64>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300),
            (None, None) => true,
            _ => false,
        }
    }

    fn check(x: &[f64]) {
        let got = statistics(&TensorValue::from(ndarray::arr1(x).into_dyn())).unwrap();
        let want = naive(x);
        assert!(
            close(got.min, want.min) && close(got.max, want.max),
            "{got:?} {want:?}"
        );
        assert!(
            close(got.mean, want.mean) && close(got.l1, want.l1),
            "{got:?} {want:?}"
        );
        assert!(close(got.l2, want.l2), "{got:?} {want:?}");
        let std_ok = match (got.std, want.std) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.max(1e-12),
            (a, b) => a == b,
        };
        assert!(std_ok, "{got:?} {want:?}");
        assert_eq!(
            (
                got.nan_count,
                got.pos_inf_count,
                got.neg_inf_count,
                got.zero_count
            ),
            (
                want.nan_count,
                want.pos_inf_count,
                want.neg_inf_count,
                want.zero_count
            )
        );
    }

    #[test]
    fn matches_a_naive_two_pass_computation() {
        let x: Vec<f64> = (0..10_000)
            .map(|i| ((i * 7919) % 1000) as f64 * 0.37 - 100.0)
            .collect();
        check(&x);
        check(&[]);
        check(&[0.0]);
        let mut y = x.clone();
        y[3] = f64::NAN;
        y[5000] = f64::INFINITY;
        y[7777] = f64::NEG_INFINITY;
        y[9999] = 0.0;
        check(&y);
        check(&[f64::NAN, f64::INFINITY]);
        // Squares overflow: numpy's std is +inf too.
        let big = [f64::NAN, -0.25, f64::MAX, 5e-324, 0.1];
        let s = statistics(&TensorValue::from(ndarray::arr1(&big).into_dyn())).unwrap();
        assert_eq!((s.std, s.l2), (Some(f64::INFINITY), Some(f64::INFINITY)));
    }

    #[test]
    fn std_keeps_its_precision_far_from_zero() {
        // Σx² − n·mean² would lose every digit here.
        let x: Vec<f64> = (0..6000).map(|i| 1e9 + (i % 3) as f64).collect();
        check(&x);
        let s = statistics(&TensorValue::from(ndarray::arr1(&x).into_dyn())).unwrap();
        assert!((s.std.unwrap() - (2.0f64 / 3.0).sqrt()).abs() < 1e-6);
    }

    #[test]
    fn integers_bools_and_non_numeric_values() {
        let b = TensorValue::from(ndarray::arr1(&[true, false, true]).into_dyn());
        let s = statistics(&b).unwrap();
        assert_eq!((s.zero_count, s.max, s.l1), (1, Some(1.0), Some(2.0)));
        let i = TensorValue::from(ndarray::arr1(&[i64::MIN, 0, 5]).into_dyn());
        assert_eq!(statistics(&i).unwrap().min, Some(i64::MIN as f64));
        let c = TensorValue::from(ndarray::arr1(&["a".to_string()]).into_dyn());
        assert_eq!(statistics(&c), None);
        assert_eq!(
            scalar_f64(&TensorValue::from(ndarray::arr0(2.5f32).into_dyn())),
            Some(2.5)
        );
    }
}
