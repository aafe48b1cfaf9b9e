//! Numeric health summaries: how many elements are NaN, +Inf, -Inf or zero, the range of
//! the finite ones, and optionally a histogram of their binary exponents — from the same
//! trip through memory as the reductions (docs/src/format.md, "Health summaries").

use crate::element::Element;
use crate::kernel::Fused;

/// Buckets of the exponent histogram ([`Health::histogram`]).
pub const HISTOGRAM_BUCKETS: usize = 128;

/// The binary exponent of bucket 0: bucket `i` counts the finite, non-zero elements whose
/// magnitude lies in `[2^(i + MIN), 2^(i + MIN + 1))`; bucket 0 also takes every smaller
/// magnitude and the last bucket every larger one. The range `2^-64 .. 2^64` covers every
/// normal `f16` and the magnitudes training produces; the clamped ends say "at least this
/// far out".
pub const HISTOGRAM_MIN_EXPONENT: i32 = -64;

/// The histogram bucket of `v`: `None` for zero, NaN and infinities (counted apart).
///
/// ```
/// use smdebug_reduce::{histogram_bucket, HISTOGRAM_MIN_EXPONENT};
/// let one = (0 - HISTOGRAM_MIN_EXPONENT) as usize;
/// assert_eq!(histogram_bucket(1.0), Some(one));
/// assert_eq!(histogram_bucket(-1.5), Some(one));
/// assert_eq!(histogram_bucket(0.5), Some(one - 1));
/// assert_eq!(histogram_bucket(0.0), None);
/// assert_eq!(histogram_bucket(f64::NAN), None);
/// assert_eq!(histogram_bucket(1e300), Some(smdebug_reduce::HISTOGRAM_BUCKETS - 1));
/// ```
#[inline(always)]
pub fn histogram_bucket(v: f64) -> Option<usize> {
    if v == 0.0 || !v.is_finite() {
        return None;
    }
    // The biased exponent field: exact for normal values; subnormal f64 (field 0) lies far
    // below bucket 0 and is clamped into it.
    let e = ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    Some((e - HISTOGRAM_MIN_EXPONENT).clamp(0, HISTOGRAM_BUCKETS as i32 - 1) as usize)
}

/// The health summary of one tensor.
///
/// For integer and bool tensors the non-finite counts are 0 and the range is the tensor's
/// range. `finite_min`, `finite_max` and `amax` are NaN when no element is finite (or the
/// tensor is empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Number of elements.
    pub elements: u64,
    /// Number of NaN elements.
    pub nan: u64,
    /// Number of `+inf` elements.
    pub pos_inf: u64,
    /// Number of `-inf` elements.
    pub neg_inf: u64,
    /// Number of elements equal to zero (`-0.0` included, `false` for bool).
    pub zeros: u64,
    /// Smallest finite element.
    pub finite_min: f64,
    /// Largest finite element.
    pub finite_max: f64,
    /// Largest magnitude of a finite element (Transformer Engine's `amax`, without the
    /// infinities, which the counts report).
    pub amax: f64,
    /// Counts per binary exponent of the finite non-zero elements
    /// ([`HISTOGRAM_BUCKETS`] entries, see [`histogram_bucket`]), when asked for.
    pub histogram: Option<Vec<u64>>,
}

impl Health {
    /// Number of NaN and infinite elements.
    pub fn non_finite(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf
    }

    /// True when every element is finite.
    pub fn all_finite(&self) -> bool {
        self.non_finite() == 0
    }
}

/// The per-buffer part of the summary, filled while the buffer is in cache (the zero count
/// comes from the fused pass itself).
pub(crate) struct Scan {
    pub histogram: Option<Vec<u64>>,
}

impl Scan {
    pub(crate) fn new(histogram: bool) -> Scan {
        Scan {
            histogram: histogram.then(|| vec![0; HISTOGRAM_BUCKETS]),
        }
    }

    /// Fills the histogram from one buffer.
    #[inline(always)]
    pub(crate) fn buffer<T: Element>(&mut self, buf: &[T]) {
        if let Some(h) = &mut self.histogram {
            for v in buf {
                if let Some(b) = histogram_bucket(v.to_f64()) {
                    h[b] += 1;
                }
            }
        }
    }
}

/// The summary from the fused pass `f` (with `ZEROS`) over `x` and the per-buffer scan.
pub(crate) fn from_fused<T: Element>(x: &[T], f: &Fused<T>, scan: Scan) -> Health {
    let mut h = Health {
        elements: f.n as u64,
        nan: 0,
        pos_inf: 0,
        neg_inf: 0,
        zeros: f.zeros,
        finite_min: f64::NAN,
        finite_max: f64::NAN,
        amax: f64::NAN,
        histogram: scan.histogram,
    };
    if f.n == 0 {
        return h;
    }
    if f.nan == 0 && f.inf == 0 {
        h.finite_min = f.min.to_f64();
        h.finite_max = f.max.to_f64();
        h.amax = h.finite_min.abs().max(h.finite_max.abs());
        return h;
    }
    // Rare path: the tensor holds NaN or infinities, so the pass's extremes include them;
    // one more look tells +inf from -inf and finds the finite range.
    let s = crate::finite::finite_stats(x);
    (h.nan, h.pos_inf, h.neg_inf) = (s.nan, s.pos_inf, s.neg_inf);
    if let (Some(lo), Some(hi), Some(amax)) = (s.min(), s.max(), s.amax()) {
        h.finite_min = lo;
        h.finite_max = hi;
        h.amax = amax;
    }
    h
}
