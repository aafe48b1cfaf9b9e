//! The summary statistics of a raw value, from one fused pass over its elements.

use half::f16;
use smdebug_record::TensorValue;

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

/// Elements are converted to `f64` in blocks of this many, so that a block's mean and its
/// squared deviations are computed while the block is in cache: one pass over memory, with
/// the precision of a two-pass variance.
const BLOCK: usize = 2048;
/// Independent accumulators, so that the compiler can keep them in vector registers.
const LANES: usize = 8;

/// Running totals, merged block by block (Chan et al.'s parallel variance).
#[derive(Default)]
struct Acc {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    l1: f64,
    sumsq: f64,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    zero: u64,
}

impl Acc {
    fn new() -> Self {
        Acc {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            ..Acc::default()
        }
    }

    /// Adds a block of finite values.
    fn block(&mut self, x: &[f64]) {
        if x.is_empty() {
            return;
        }
        let mut sum = [0.0f64; LANES];
        let mut abs = [0.0f64; LANES];
        let mut sq = [0.0f64; LANES];
        let mut lo = [f64::INFINITY; LANES];
        let mut hi = [f64::NEG_INFINITY; LANES];
        let mut zero = [0u64; LANES];
        let chunks = x.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for j in 0..LANES {
                let v = c[j];
                sum[j] += v;
                abs[j] += v.abs();
                sq[j] += v * v;
                lo[j] = if v < lo[j] { v } else { lo[j] };
                hi[j] = if v > hi[j] { v } else { hi[j] };
                zero[j] += u64::from(v == 0.0);
            }
        }
        for &v in rest {
            sum[0] += v;
            abs[0] += v.abs();
            sq[0] += v * v;
            lo[0] = lo[0].min(v);
            hi[0] = hi[0].max(v);
            zero[0] += u64::from(v == 0.0);
        }
        let n = x.len() as f64;
        let block_mean = sum.iter().sum::<f64>() / n;
        let mut dev = [0.0f64; LANES];
        let chunks = x.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for j in 0..LANES {
                let d = c[j] - block_mean;
                dev[j] += d * d;
            }
        }
        for &v in rest {
            let d = v - block_mean;
            dev[0] += d * d;
        }
        let block_m2: f64 = dev.iter().sum();
        if self.n == 0 {
            // Not merged: the merge's 0 × ∞ would turn an overflowed m2 into NaN.
            self.mean = block_mean;
            self.m2 = block_m2;
        } else {
            let total = self.n as f64 + n;
            let delta = block_mean - self.mean;
            self.mean += delta * n / total;
            self.m2 += block_m2 + delta * delta * (self.n as f64) * n / total;
        }
        self.n += x.len() as u64;
        self.l1 += abs.iter().sum::<f64>();
        self.sumsq += sq.iter().sum::<f64>();
        self.min = lo.iter().copied().fold(self.min, f64::min);
        self.max = hi.iter().copied().fold(self.max, f64::max);
        self.zero += zero.iter().sum::<u64>();
    }

    fn finish(self) -> Statistics {
        let some = |v: f64| (self.n > 0).then_some(v);
        Statistics {
            min: some(self.min),
            max: some(self.max),
            mean: some(self.mean),
            std: some((self.m2 / self.n as f64).max(0.0).sqrt()),
            l1: some(self.l1),
            l2: some(self.sumsq.sqrt()),
            nan_count: self.nan,
            pos_inf_count: self.pos_inf,
            neg_inf_count: self.neg_inf,
            zero_count: self.zero,
        }
    }
}

/// Statistics of a slice of elements that convert to `f64`.
fn of_slice<T: Copy>(data: &[T], to_f64: impl Fn(T) -> f64) -> Statistics {
    let mut acc = Acc::new();
    let mut buf = [0.0f64; BLOCK];
    for block in data.chunks(BLOCK) {
        let buf = &mut buf[..block.len()];
        for (b, &x) in buf.iter_mut().zip(block) {
            *b = to_f64(x);
        }
        // A NaN or an infinity makes the sum non-finite; a sum of finite f64 values can
        // overflow too, which the careful path below also handles.
        let sum: f64 = buf.iter().sum();
        if sum.is_finite() {
            acc.block(buf);
            continue;
        }
        let mut kept = 0;
        for i in 0..buf.len() {
            let v = buf[i];
            if v.is_finite() {
                buf[kept] = v;
                kept += 1;
            } else if v.is_nan() {
                acc.nan += 1;
            } else if v > 0.0 {
                acc.pos_inf += 1;
            } else {
                acc.neg_inf += 1;
            }
        }
        acc.block(&buf[..kept]);
    }
    acc.finish()
}

/// Statistics of a raw value; `None` for values that have none (complex numbers, strings).
pub fn statistics(value: &TensorValue) -> Option<Statistics> {
    fn flat<T: Clone>(a: &ndarray::ArrayD<T>) -> std::borrow::Cow<'_, [T]> {
        match a.as_slice() {
            Some(s) => std::borrow::Cow::Borrowed(s),
            None => std::borrow::Cow::Owned(a.iter().cloned().collect()),
        }
    }
    Some(match value {
        TensorValue::Float16(a) => of_slice(&flat(a), f16::to_f64),
        TensorValue::Float32(a) => of_slice(&flat(a), f64::from),
        TensorValue::Float64(a) => of_slice(&flat(a), |x| x),
        TensorValue::Int8(a) => of_slice(&flat(a), f64::from),
        TensorValue::Int16(a) => of_slice(&flat(a), f64::from),
        TensorValue::Int32(a) => of_slice(&flat(a), f64::from),
        TensorValue::Int64(a) => of_slice(&flat(a), |x| x as f64),
        TensorValue::UInt8(a) => of_slice(&flat(a), f64::from),
        TensorValue::UInt16(a) => of_slice(&flat(a), f64::from),
        TensorValue::UInt32(a) => of_slice(&flat(a), f64::from),
        TensorValue::UInt64(a) => of_slice(&flat(a), |x| x as f64),
        TensorValue::Bool(a) => of_slice(&flat(a), |x| if x { 1.0 } else { 0.0 }),
        TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
            return None
        }
    })
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
