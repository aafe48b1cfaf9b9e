//! The fused single pass, and numpy's pairwise summation.
//!
//! numpy sums a contiguous array in buffers of [`BUFSIZE`] elements: each buffer is summed
//! by `pairwise_sum` (`numpy/core/src/umath/loops_utils.h.src`) — halve until at most
//! [`PW_BLOCK`] elements remain, sum those with 8 interleaved accumulators, combine them as
//! `((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))`, add the leftover elements one by one — and the
//! buffer sums are added to a running total stored in the output dtype. Reproducing that
//! order makes our `sum`, `mean` and vector `l1` bit-identical to numpy's, and the 8
//! interleaved accumulators are exactly what a SIMD unit wants.

use crate::element::{AccFloat, Element};
use crate::pairwise::{BUFSIZE, LANES, PW_BLOCK};

/// Everything one pass over the data gives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fused<T: Element> {
    /// Number of elements.
    pub n: usize,
    /// Number of NaN elements.
    pub nan: u64,
    /// Number of ±infinite elements.
    pub inf: u64,
    /// numpy's `min` when `nan == 0` (otherwise meaningless); `T::HIGHEST` when empty.
    pub min: T,
    /// numpy's `max` when `nan == 0`, like `min`.
    pub max: T,
    /// numpy's `sum` without a dtype: buffer sums added to a total stored as `T`.
    pub sum_store: T::Acc,
    /// numpy's sum in the accumulator dtype (`mean`'s `dtype=f4/f8` path).
    pub sum_acc: T::Acc,
    /// `sum_store` of `|x|`.
    pub abs_store: T::Acc,
    /// `sum_acc` of `|x|`.
    pub abs_acc: T::Acc,
    /// Wrapping 64-bit integer sum (integers and bool only).
    pub isum: u64,
    /// Mean from the per-leaf moments (only with `MOMENTS`).
    pub mean: f64,
    /// Sum of squared deviations from the mean (only with `MOMENTS`).
    pub m2: f64,
    /// Sum of squares (only with `MOMENTS`).
    pub sumsq: f64,
    /// Number of elements equal to zero (only with `ZEROS`).
    pub zeros: u64,
}

/// Lanes of the state that does not follow numpy's summation tree. Four lanes (one SSE
/// register each) instead of eight: the baseline x86-64 target has 16 vector registers and
/// the eight-lane sums already take four of them.
const SIDE: usize = 4;

impl<T: Element> Fused<T> {
    /// The pass over `|x|` as far as it follows from the pass over `x` of a float tensor:
    /// counts, sums of `|x|` (bit-identical: the same tree over the same values) and Σx².
    /// Its min, max and moments are not valid.
    pub(crate) fn abs_of_float(&self) -> Fused<T> {
        debug_assert!(T::IS_FLOAT);
        Fused {
            sum_store: self.abs_store,
            sum_acc: self.abs_acc,
            min: T::HIGHEST,
            max: T::LOWEST,
            mean: f64::NAN,
            m2: f64::NAN,
            ..*self
        }
    }
}

/// Per-lane running state that does not follow numpy's summation tree.
struct Lanes<T> {
    min: [T; SIDE],
    max: [T; SIDE],
}

/// Folds one value into lane `j` (the block loop below is the vectorized twin). A NaN is
/// skipped by the comparisons; [`fused`] counts NaNs separately, and any NaN makes numpy's
/// min/max NaN.
#[inline(always)]
fn update<T: Element>(l: &mut Lanes<T>, j: usize, v: T) {
    l.min[j] = if v < l.min[j] { v } else { l.min[j] };
    l.max[j] = if v > l.max[j] { v } else { l.max[j] };
}

/// Running moments (Chan et al.'s parallel merge of per-leaf two-pass moments), and the
/// leaf buffers their second look uses (zeroed once per pass rather than once per leaf).
struct Moments<A> {
    n: f64,
    mean: f64,
    m2: f64,
    sumsq: f64,
    /// Deviations of the leaf's values from its mean.
    d: [A; PW_BLOCK],
    /// Their squares.
    sq: [A; PW_BLOCK],
}

impl<T: Element> Lanes<T> {
    /// Empty lanes: every comparison replaces their bounds.
    fn new() -> Self {
        Lanes {
            min: [T::HIGHEST; SIDE],
            max: [T::LOWEST; SIDE],
        }
    }
}

impl<A: Copy> Moments<A> {
    /// No values yet; `zero` fills the leaf buffers.
    fn new(zero: A) -> Self {
        Moments {
            n: 0.0,
            mean: 0.0,
            m2: 0.0,
            sumsq: 0.0,
            d: [zero; PW_BLOCK],
            sq: [zero; PW_BLOCK],
        }
    }

    #[inline]
    fn merge(&mut self, n: f64, mean: f64, m2: f64) {
        let total = self.n + n;
        let delta = mean - self.mean;
        self.mean += delta * (n / total);
        self.m2 += m2 + delta * delta * (self.n * n / total);
        self.n = total;
        self.sumsq += m2 + n * mean * mean;
    }
}

#[inline(always)]
fn map<T: Element, const ABS: bool>(v: T) -> T {
    if ABS {
        v.np_abs()
    } else {
        v
    }
}

/// numpy's fixed combination of the 8 accumulators. Not inlined on purpose: when the
/// vectorizer sees this shape next to the accumulation loop it picks a lane layout that
/// needs shuffles on every element; called once per 128 elements it costs nothing.
#[inline(never)]
fn combine<A: AccFloat>(r: &[A; LANES]) -> A {
    ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
}

/// One numpy leaf (at most [`PW_BLOCK`] elements): its pairwise sums of `x` and `|x|`, and
/// everything else folded into the lanes and moments.
#[inline(always)]
fn leaf<T: Element, const ABS: bool, const MOMENTS: bool>(
    x: &[T],
    lanes: &mut Lanes<T>,
    mom: &mut Moments<T::Acc>,
    isum: &mut u64,
) -> (T::Acc, T::Acc) {
    let n = x.len();
    let body = if n < LANES { 0 } else { n - n % LANES };
    // Starting from 0 instead of numpy's first 8 elements only differs for -0.0, which the
    // buffer total (itself starting at +0.0) erases anyway.
    let mut r = [T::Acc::ZERO; LANES];
    let mut ra = [T::Acc::ZERO; LANES];
    let mut ints = [0u64; LANES];
    // Local copies: through `&mut` the compiler would reload and store them every step.
    let mut mn = lanes.min;
    let mut mx = lanes.max;
    for c in x[..body].chunks_exact(LANES) {
        // One simple loop per quantity over a fixed-size block: each becomes a few SIMD
        // instructions (addps/andps/minps/cmpps), with no branch per element.
        let v: [T; LANES] = std::array::from_fn(|j| map::<T, ABS>(c[j]));
        for j in 0..LANES {
            r[j] = r[j] + v[j].to_acc();
        }
        for j in 0..LANES {
            ra[j] = ra[j] + v[j].to_acc().abs();
        }
        // The side state folds the two halves of the block first. If the first of a pair
        // is NaN the pair's other value is lost from min/max, which only matters when
        // there is a NaN — and then numpy's answer is NaN anyway.
        for j in 0..SIDE {
            let (a, b) = (v[j], v[j + SIDE]);
            let lo = if b < a { b } else { a };
            let hi = if b > a { b } else { a };
            mn[j] = if lo < mn[j] { lo } else { mn[j] };
            mx[j] = if hi > mx[j] { hi } else { mx[j] };
        }
        if !T::IS_FLOAT {
            for j in 0..LANES {
                ints[j] = ints[j].wrapping_add(v[j].wrap_bits());
            }
        }
    }
    lanes.min = mn;
    lanes.max = mx;
    let (mut res, mut resa) = if body == 0 {
        (T::Acc::ZERO, T::Acc::ZERO)
    } else {
        (combine(&r), combine(&ra))
    };
    for &e in &x[body..] {
        let v = map::<T, ABS>(e);
        let a = v.to_acc();
        res = res + a;
        resa = resa + a.abs();
        update(lanes, 0, v);
        if !T::IS_FLOAT {
            ints[0] = ints[0].wrapping_add(v.wrap_bits());
        }
    }
    if !T::IS_FLOAT {
        *isum = ints.iter().fold(*isum, |s, &v| s.wrapping_add(v));
    }
    if MOMENTS && n > 0 {
        // Second look at the leaf while it is in L1: corrected two-pass moments around the
        // leaf's own mean, so no catastrophic cancellation whatever the data's offset.
        let m = res / T::Acc::from_f64(n as f64);
        // The deviations first, into a buffer, by a plain loop the compiler vectorizes;
        // then the sums by the same block pattern as the first loop. Computed inside the
        // block loop, the deviations were loaded, subtracted and squared one scalar at a
        // time and shuffled into vectors, which made this loop cost more than the first.
        let (d, sq) = (&mut mom.d[..n], &mut mom.sq[..n]);
        for (d, &e) in d.iter_mut().zip(x) {
            *d = map::<T, ABS>(e).to_acc() - m;
        }
        for (sq, &d) in sq.iter_mut().zip(d.iter()) {
            *sq = d * d;
        }
        let s1 = lane_sums(d, body);
        let s2 = lane_sums(sq, body);
        let d1: f64 = s1.iter().map(|v| v.to_f64()).sum();
        let d2: f64 = s2.iter().map(|v| v.to_f64()).sum();
        let nf = n as f64;
        let leaf_mean = m.to_f64() + d1 / nf;
        let leaf_m2 = (d2 - d1 * d1 / nf).max(0.0);
        mom.merge(nf, leaf_mean, leaf_m2);
    }
    (res, resa)
}

/// Sums of `x` in [`LANES`] interleaved lanes over the first `body` elements, the rest added
/// to lane 0 (the order of the moments' sums). One quantity per loop: with two, the
/// compiler interleaved them into shuffled vectors.
#[inline(always)]
fn lane_sums<A: AccFloat>(x: &[A], body: usize) -> [A; LANES] {
    let mut s = [A::ZERO; LANES];
    for c in x[..body].chunks_exact(LANES) {
        for j in 0..LANES {
            s[j] = s[j] + c[j];
        }
    }
    for &v in &x[body..] {
        s[0] = s[0] + v;
    }
    s
}

/// numpy's recursive halving over one buffer, visiting leaves left to right.
fn pairwise<T: Element, const ABS: bool, const MOMENTS: bool>(
    x: &[T],
    lanes: &mut Lanes<T>,
    mom: &mut Moments<T::Acc>,
    isum: &mut u64,
) -> (T::Acc, T::Acc) {
    if x.len() <= PW_BLOCK {
        leaf::<T, ABS, MOMENTS>(x, lanes, mom, isum)
    } else {
        let mut n2 = x.len() / 2;
        n2 -= n2 % LANES;
        let (a, b) = x.split_at(n2);
        let (s1, a1) = pairwise::<T, ABS, MOMENTS>(a, lanes, mom, isum);
        let (s2, a2) = pairwise::<T, ABS, MOMENTS>(b, lanes, mom, isum);
        (s1 + s2, a1 + a2)
    }
}

/// The fused pass over `x` (or `|x|` with `ABS`): min, max, NaN/Inf counts, numpy-exact
/// sums of `x` and `|x|`, wrapping integer sum, and with `MOMENTS` mean / M2 / Σx².
pub(crate) fn fused<T: Element, const ABS: bool, const MOMENTS: bool>(x: &[T]) -> Fused<T> {
    fused_with::<T, ABS, MOMENTS, false>(x, |_| {})
}

/// [`fused`], with `ZEROS` counting the elements equal to zero in the same pass, and handing
/// each buffer of [`BUFSIZE`] elements to `per_buffer` right after the summation tree has
/// read it, while it is still in the core's cache (the health summary's histogram rides on
/// the same trip through memory).
///
/// On x86-64 with AVX2 the whole pass is compiled for AVX2, and full `f32` buffers take the
/// explicit-SIMD kernel of `simd.rs` (bit-identical sums and moments).
pub(crate) fn fused_with<T: Element, const ABS: bool, const MOMENTS: bool, const ZEROS: bool>(
    x: &[T],
    per_buffer: impl FnMut(&[T]),
) -> Fused<T> {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::available() {
        return fused_avx2::<T, ABS, MOMENTS, ZEROS>(x, per_buffer);
    }
    fused_body::<T, ABS, MOMENTS, ZEROS>(x, per_buffer)
}

/// [`fused_body`] compiled for AVX2: the auto-vectorized loops of the portable kernel (the
/// partial last buffer, every other dtype) get 256-bit registers too.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn fused_avx2<T: Element, const ABS: bool, const MOMENTS: bool, const ZEROS: bool>(
    x: &[T],
    per_buffer: impl FnMut(&[T]),
) -> Fused<T> {
    /// # Safety
    /// The CPU must have AVX2 (an `unsafe fn` keeps the crate's Rust 1.85).
    #[target_feature(enable = "avx2")]
    unsafe fn inner<T: Element, const ABS: bool, const MOMENTS: bool, const ZEROS: bool>(
        x: &[T],
        per_buffer: impl FnMut(&[T]),
    ) -> Fused<T> {
        fused_body::<T, ABS, MOMENTS, ZEROS>(x, per_buffer)
    }
    // SAFETY: `fused_with` checked at run time that the CPU has AVX2.
    unsafe { inner::<T, ABS, MOMENTS, ZEROS>(x, per_buffer) }
}

/// The pass itself (full `f32` buffers take `simd.rs` when the CPU has AVX2).
#[inline(always)]
fn fused_body<T: Element, const ABS: bool, const MOMENTS: bool, const ZEROS: bool>(
    x: &[T],
    mut per_buffer: impl FnMut(&[T]),
) -> Fused<T> {
    let mut lanes = Lanes::new();
    let mut mom = Moments::new(T::Acc::ZERO);
    let mut out = Fused {
        n: x.len(),
        nan: 0,
        inf: 0,
        min: T::HIGHEST,
        max: T::LOWEST,
        sum_store: T::Acc::ZERO,
        sum_acc: T::Acc::ZERO,
        abs_store: T::Acc::ZERO,
        abs_acc: T::Acc::ZERO,
        isum: 0,
        mean: 0.0,
        m2: 0.0,
        sumsq: 0.0,
        zeros: 0,
    };
    for buf in x.chunks(BUFSIZE) {
        let (s, a) = match simd_buffer::<T, ABS, MOMENTS, ZEROS>(buf, &mut lanes, &mut mom) {
            Some((s, a, zeros)) => {
                out.zeros += zeros;
                (s, a)
            }
            None => {
                if ZEROS {
                    // `filter().count()` is the shape LLVM turns into vector compares whose
                    // masks are subtracted from a vector of counters.
                    out.zeros += buf.iter().filter(|&&v| v == T::ZERO_ELEMENT).count() as u64;
                }
                pairwise::<T, ABS, MOMENTS>(buf, &mut lanes, &mut mom, &mut out.isum)
            }
        };
        per_buffer(buf);
        out.sum_store = T::round_acc(out.sum_store + s);
        out.sum_acc = out.sum_acc + s;
        out.abs_store = T::round_acc(out.abs_store + a);
        out.abs_acc = out.abs_acc + a;
    }
    // Σ|x| of non-negative terms is finite exactly when no element is NaN or infinite
    // (or, rarely, when finite values overflow the sum): only then are there NaNs and
    // infinities to count. Counting them in the pass above cost more than all its
    // other work together; almost every tensor has none.
    if T::IS_FLOAT && !out.abs_acc.to_f64().is_finite() {
        (out.nan, out.inf) = count_non_finite(x);
    }
    for j in 0..SIDE {
        if lanes.min[j] < out.min {
            out.min = lanes.min[j];
        }
        if lanes.max[j] > out.max {
            out.max = lanes.max[j];
        }
    }
    if MOMENTS {
        out.mean = mom.mean;
        out.m2 = mom.m2;
        out.sumsq = mom.sumsq;
    }
    out
}

/// One full `f32` buffer through the explicit-SIMD kernel, when it applies: `(sum, |x| sum,
/// zeros)`, with min/max folded into `lanes` and the leaves' moments into `mom`.
#[inline(always)]
fn simd_buffer<T: Element, const ABS: bool, const MOMENTS: bool, const ZEROS: bool>(
    buf: &[T],
    lanes: &mut Lanes<T>,
    mom: &mut Moments<T::Acc>,
) -> Option<(T::Acc, T::Acc, u64)> {
    #[cfg(target_arch = "x86_64")]
    if !ABS && buf.len() == BUFSIZE && crate::simd::available() {
        let x = crate::simd::as_f32(buf)?;
        let b = crate::simd::buffer::<MOMENTS, ZEROS>(x, |n, mean, m2| mom.merge(n, mean, m2));
        // `T` is `f32` here, and so is `T::Acc`: both conversions are exact.
        let back = |v: f32| T::Acc::from_f64(f64::from(v));
        let elem = |v: f32| crate::simd::from_f32::<T>(v).expect("T is f32");
        update(lanes, 0, elem(b.min));
        update(lanes, 0, elem(b.max));
        return Some((back(b.sum), back(b.abs), b.zeros));
    }
    let _ = (buf, lanes, mom);
    None
}

/// NaN and ±infinity counts (the same for `x` and `|x|`).
fn count_non_finite<T: Element>(x: &[T]) -> (u64, u64) {
    let mut nan = [0u32; LANES];
    let mut inf = [0u32; LANES];
    let (mut total_nan, mut total_inf) = (0u64, 0u64);
    // u32 lane counters, emptied every buffer, cannot overflow.
    for buf in x.chunks(BUFSIZE) {
        let chunks = buf.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for j in 0..LANES {
                nan[j] += u32::from(c[j].is_nan());
                inf[j] += u32::from(c[j].is_inf());
            }
        }
        for (j, v) in rest.iter().enumerate() {
            nan[j] += u32::from(v.is_nan());
            inf[j] += u32::from(v.is_inf());
        }
        total_nan += nan.iter().map(|&v| u64::from(v)).sum::<u64>();
        total_inf += inf.iter().map(|&v| u64::from(v)).sum::<u64>();
        nan = [0; LANES];
        inf = [0; LANES];
    }
    (total_nan, total_inf)
}

/// numpy's `add.reduce` of values produced buffer by buffer: `values(start, buf)` fills
/// `buf` with the (already rounded) values of elements `start..start + buf.len()`; the total
/// is stored through `round` between buffers, as numpy stores it in the output dtype.
pub(crate) fn chunked_pairwise<A: AccFloat>(
    n: usize,
    round: impl Fn(A) -> A,
    mut values: impl FnMut(usize, &mut [A]),
) -> A {
    let mut buf = vec![A::ZERO; n.min(BUFSIZE)];
    let mut total = A::ZERO;
    let mut start = 0;
    while start < n {
        let len = (n - start).min(BUFSIZE);
        values(start, &mut buf[..len]);
        total = round(total + pairwise_plain(&buf[..len]));
        start += len;
    }
    total
}

/// numpy's `pairwise_sum` of plain accumulator values.
pub(crate) fn pairwise_plain<A: AccFloat>(x: &[A]) -> A {
    let n = x.len();
    if n <= PW_BLOCK {
        let body = if n < LANES { 0 } else { n - n % LANES };
        let mut r = [A::ZERO; LANES];
        for c in x[..body].chunks_exact(LANES) {
            for j in 0..LANES {
                r[j] = r[j] + c[j];
            }
        }
        let mut res = if body == 0 { A::ZERO } else { combine(&r) };
        for &v in &x[body..] {
            res = res + v;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % LANES;
        pairwise_plain(&x[..n2]) + pairwise_plain(&x[n2..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_matches_plain_reference_order() {
        // Sequential summation of 200 values of 0.1f32 differs from the pairwise tree; the
        // fused kernel and the plain pairwise must agree exactly.
        let x: Vec<f32> = (0..20_000)
            .map(|i| (i as f32 * 0.37).sin() * 100.0)
            .collect();
        let f = fused::<f32, false, false>(&x);
        let plain =
            chunked_pairwise::<f32>(x.len(), |v| v, |s, b| b.copy_from_slice(&x[s..s + b.len()]));
        assert_eq!(f.sum_store.to_bits(), plain.to_bits());
        let seq: f32 = x.iter().sum();
        assert_ne!(
            seq.to_bits(),
            plain.to_bits(),
            "test data should expose summation order"
        );
    }

    #[test]
    fn fused_counts_and_extremes() {
        let x = [
            1.0f32,
            f32::NAN,
            -3.0,
            f32::INFINITY,
            2.0,
            f32::NEG_INFINITY,
            0.5,
            7.0,
            -1.0,
        ];
        let f = fused::<f32, false, true>(&x);
        assert_eq!((f.n, f.nan, f.inf), (9, 1, 2));
        // Without NaN, min/max are numpy's, infinities included.
        let y: Vec<f32> = x.iter().copied().filter(|v| !v.is_nan()).collect();
        let f = fused::<f32, false, true>(&y);
        assert_eq!((f.min, f.max), (f32::NEG_INFINITY, f32::INFINITY));
        let z: Vec<f32> = (0..300).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
        let f = fused::<f32, true, false>(&z);
        assert_eq!((f.min, f.max), (0.0, 50.0));
    }

    #[test]
    fn counts_are_exact_when_the_sum_of_magnitudes_overflows_or_a_tail_is_not_finite() {
        // Finite values whose Σ|x| overflows: counted, and none found.
        let big = vec![f32::MAX; 1000];
        let f = fused::<f32, false, true>(&big);
        assert!(f.abs_acc.is_infinite());
        assert_eq!((f.nan, f.inf, f.min, f.max), (0, 0, f32::MAX, f32::MAX));
        // Non-finite values past the last full block of a leaf, and in a later buffer.
        let mut x: Vec<f32> = (0..20_003).map(|i| (i % 13) as f32 - 6.0).collect();
        x[20_001] = f32::NAN;
        x[20_002] = f32::NEG_INFINITY;
        x[9000] = f32::INFINITY;
        let f = fused::<f32, false, true>(&x);
        assert_eq!((f.nan, f.inf), (1, 2));
        let f = fused::<f32, true, false>(&x);
        assert_eq!((f.nan, f.inf), (1, 2));
        let f = fused::<f32, false, true>(&x[..20_000]);
        assert_eq!((f.nan, f.inf), (0, 1));
        // All finite: nothing to count.
        let f = fused::<f32, false, true>(&x[..9000]);
        assert_eq!((f.nan, f.inf), (0, 0));
    }

    #[test]
    fn moments_survive_large_offsets() {
        let x: Vec<f64> = (0..10_000).map(|i| 1e9 + (i % 7) as f64).collect();
        let f = fused::<f64, false, true>(&x);
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let m2: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
        assert!((f.m2 - m2).abs() <= 1e-9 * m2, "{} vs {}", f.m2, m2);
    }

    /// The explicit-SIMD buffer against the portable leaves over the same buffer: the same
    /// sums and moments bit for bit, the same range and zero count.
    #[cfg(target_arch = "x86_64")]
    fn simd_matches_portable(x: &[f32]) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prelude::*;
        if !crate::simd::available() {
            return Ok(());
        }
        let mut lanes = Lanes::<f32>::new();
        let mut mom = Moments::new(0.0);
        let mut isum = 0;
        let (s, a) = pairwise::<f32, false, true>(x, &mut lanes, &mut mom, &mut isum);
        let mut simd = Moments { n: 0.0, ..mom };
        (simd.mean, simd.m2, simd.sumsq) = (0.0, 0.0, 0.0);
        let b = crate::simd::buffer::<true, true>(x, |n, mean, m2| simd.merge(n, mean, m2));
        // Bit for bit; a NaN is only a NaN (its sign and payload depend on which operand
        // of an addition held it, which numpy does not fix either).
        let same32 = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let same64 = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        prop_assert!(same32(b.sum, s), "{} {}", b.sum, s);
        prop_assert!(same32(b.abs, a), "{} {}", b.abs, a);
        let all = |m: &Moments<f32>| [m.n, m.mean, m.m2, m.sumsq];
        prop_assert!(
            all(&simd).iter().zip(all(&mom)).all(|(&a, b)| same64(a, b)),
            "{:?} {:?}",
            all(&simd),
            all(&mom)
        );
        if !x.iter().any(|v| v.is_nan()) {
            let min = lanes.min.iter().copied().fold(f32::INFINITY, f32::min);
            let max = lanes.max.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            prop_assert_eq!((b.min, b.max), (min, max));
        }
        prop_assert_eq!(b.zeros, x.iter().filter(|&&v| v == 0.0).count() as u64);
        Ok(())
    }

    #[cfg(target_arch = "x86_64")]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Random buffers with zeros, ±0, subnormals, huge values and ±Inf anywhere (NaN
        /// too, where only the sums, counts and moments are compared).
        #[test]
        fn simd_buffer_is_bit_identical_to_the_portable_leaves(
            v in proptest::collection::vec(-1e3f32..1e3, BUFSIZE),
            offset in -1e6f32..1e6,
            specials in proptest::collection::vec(
                (0..BUFSIZE, proptest::sample::select(vec![
                    0.0f32, -0.0, 1e-45, -1e-40, 3e38, -3e38,
                    f32::INFINITY, f32::NEG_INFINITY, f32::NAN,
                ])),
                0..12,
            ),
        ) {
            let mut x: Vec<f32> = v.iter().map(|&e| e + offset).collect();
            for (i, s) in specials {
                x[i] = s;
            }
            simd_matches_portable(&x)?;
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn simd_buffer_edges() {
        let mut x = vec![0.0f32; BUFSIZE];
        simd_matches_portable(&x).unwrap();
        for (i, s) in [
            (0, f32::INFINITY),
            (BUFSIZE - 1, -0.0),
            (127, 5.0),
            (128, -7.0),
        ] {
            x[i] = s;
        }
        simd_matches_portable(&x).unwrap();
        x[BUFSIZE - 1] = f32::NEG_INFINITY;
        simd_matches_portable(&x).unwrap();
        // The whole pass over several buffers and a tail: the SIMD and portable paths meet.
        let y: Vec<f32> = (0..3 * BUFSIZE + 77)
            .map(|i| (i as f32 * 0.37).sin())
            .collect();
        let f = fused_with::<f32, false, true, true>(&y, |_| {});
        let g = fused_body_portable(&y);
        assert_eq!(
            (
                f.sum_store.to_bits(),
                f.abs_acc.to_bits(),
                f.mean.to_bits(),
                f.m2.to_bits()
            ),
            (
                g.sum_store.to_bits(),
                g.abs_acc.to_bits(),
                g.mean.to_bits(),
                g.m2.to_bits()
            )
        );
        assert_eq!((f.min, f.max, f.zeros), (g.min, g.max, g.zeros));
    }

    /// The pass through the portable leaves only.
    fn fused_body_portable(x: &[f32]) -> Fused<f32> {
        let mut lanes = Lanes::<f32>::new();
        let mut mom = Moments::new(0.0);
        let (mut store, mut abs, mut isum) = (0.0f32, 0.0f32, 0);
        for buf in x.chunks(BUFSIZE) {
            let (s, a) = pairwise::<f32, false, true>(buf, &mut lanes, &mut mom, &mut isum);
            store += s;
            abs += a;
        }
        Fused {
            n: x.len(),
            nan: 0,
            inf: 0,
            min: lanes.min.into_iter().fold(f32::INFINITY, f32::min),
            max: lanes.max.into_iter().fold(f32::NEG_INFINITY, f32::max),
            sum_store: store,
            sum_acc: store,
            abs_store: abs,
            abs_acc: abs,
            isum,
            mean: mom.mean,
            m2: mom.m2,
            sumsq: mom.sumsq,
            zeros: x.iter().filter(|&&v| v == 0.0).count() as u64,
        }
    }

    #[test]
    fn integer_sums_wrap() {
        let x = [i64::MAX, 1, 5];
        let f = fused::<i64, false, false>(&x);
        assert_eq!(f.isum as i64, i64::MIN.wrapping_add(5));
    }
}
