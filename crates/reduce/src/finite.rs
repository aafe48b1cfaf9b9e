//! Statistics of the finite elements of a tensor in `f64`, with NaN / ±Inf / zero counts:
//! the one kernel behind export's `tensors` table, [`crate::Stats`] and the health
//! summary's finite range when a tensor holds NaN or infinities.
//!
//! Elements are converted to `f64` in blocks of [`BLOCK`], so that a block's mean and its
//! squared deviations are computed while the block is in cache: one pass over memory, with
//! the precision of a two-pass variance; blocks merge by Chan et al.'s parallel formula.
//! On x86-64 with AVX2 the kernel is compiled for AVX2 (the lane loops become 256-bit
//! instructions).

use crate::element::Element;

/// Elements per block.
const BLOCK: usize = 2048;
/// Independent accumulators, so that the compiler can keep them in vector registers.
const LANES: usize = 8;

/// Counts of NaN, ±Inf and zero elements, and `f64` statistics of the finite elements.
///
/// ```
/// let x = ndarray::arr1(&[1.0f32, f32::NAN, -3.0, 0.0, f32::NEG_INFINITY]);
/// let s = smdebug_reduce::finite_stats(x.view());
/// assert_eq!((s.finite, s.nan, s.pos_inf, s.neg_inf, s.zeros), (3, 1, 0, 1, 1));
/// assert_eq!((s.min(), s.max(), s.l1()), (Some(-3.0), Some(1.0), Some(4.0)));
/// assert_eq!(s.mean(), Some(-2.0 / 3.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiniteStats {
    /// Number of finite elements.
    pub finite: u64,
    /// Number of NaN elements.
    pub nan: u64,
    /// Number of `+inf` elements.
    pub pos_inf: u64,
    /// Number of `-inf` elements.
    pub neg_inf: u64,
    /// Number of elements equal to zero (`-0.0` included, `false` for bool).
    pub zeros: u64,
    min: f64,
    max: f64,
    mean: f64,
    m2: f64,
    l1: f64,
    sumsq: f64,
}

impl FiniteStats {
    fn some(&self, v: f64) -> Option<f64> {
        (self.finite > 0).then_some(v)
    }

    /// Smallest finite element (`None` when there is none).
    pub fn min(&self) -> Option<f64> {
        self.some(self.min)
    }

    /// Largest finite element.
    pub fn max(&self) -> Option<f64> {
        self.some(self.max)
    }

    /// Mean of the finite elements.
    pub fn mean(&self) -> Option<f64> {
        self.some(self.mean)
    }

    /// Sum of squared deviations of the finite elements from their mean.
    pub fn m2(&self) -> Option<f64> {
        self.some(self.m2)
    }

    /// Population standard deviation of the finite elements (`+inf` when their squares
    /// overflow, as numpy's).
    pub fn std(&self) -> Option<f64> {
        self.some((self.m2 / self.finite as f64).max(0.0).sqrt())
    }

    /// Sum of the absolute values of the finite elements.
    pub fn l1(&self) -> Option<f64> {
        self.some(self.l1)
    }

    /// Square root of the sum of squares of the finite elements.
    pub fn l2(&self) -> Option<f64> {
        self.some(self.sumsq.sqrt())
    }

    /// Largest magnitude of a finite element.
    pub fn amax(&self) -> Option<f64> {
        self.some(self.min.abs().max(self.max.abs()))
    }
}

/// Running totals, merged block by block.
struct Acc {
    s: FiniteStats,
    /// Whether whole chunks of lanes may go through the AVX2 loops of `crate::simd` (which
    /// check the CPU themselves); off, the portable loops (the tests compare both).
    simd: bool,
}

impl Acc {
    fn new(simd: bool) -> Self {
        Acc {
            simd,
            s: FiniteStats {
                finite: 0,
                nan: 0,
                pos_inf: 0,
                neg_inf: 0,
                zeros: 0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                mean: 0.0,
                m2: 0.0,
                l1: 0.0,
                sumsq: 0.0,
            },
        }
    }

    /// Adds a block of finite values.
    #[inline(always)]
    fn block(&mut self, x: &[f64]) {
        self.add(x, false);
    }

    /// Adds block `x` if its sum is finite, which it is unless it holds a NaN or an
    /// infinity (or its finite values overflow): returns whether it did. The sum is the
    /// block's own (same lanes, same order), so a block of finite values costs no pass of
    /// its own to tell that it is one.
    #[inline(always)]
    fn try_block(&mut self, x: &[f64]) -> bool {
        self.add(x, true)
    }

    /// Adds block `x`; with `only_finite_sum`, only if its sum is finite.
    #[inline(always)]
    fn add(&mut self, x: &[f64], only_finite_sum: bool) -> bool {
        if x.is_empty() {
            return true;
        }
        let mut sum = [0.0f64; LANES];
        let mut abs = [0.0f64; LANES];
        let mut sq = [0.0f64; LANES];
        let mut lo = [f64::INFINITY; LANES];
        let mut hi = [f64::NEG_INFINITY; LANES];
        let mut zero = [0u64; LANES];
        let chunks = x.chunks_exact(LANES);
        let rest = chunks.remainder();
        #[cfg(target_arch = "x86_64")]
        let done = {
            let mut l = crate::simd::FiniteLanes {
                sum,
                abs,
                sq,
                lo,
                hi,
                zero,
            };
            let done = self.simd && crate::simd::finite_lanes(&x[..x.len() - rest.len()], &mut l);
            (sum, abs, sq, lo, hi, zero) = (l.sum, l.abs, l.sq, l.lo, l.hi, l.zero);
            done
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = false;
        if !done {
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
        let block_sum = sum.iter().sum::<f64>();
        if only_finite_sum && !block_sum.is_finite() {
            return false;
        }
        let block_mean = block_sum / n;
        let mut dev = [0.0f64; LANES];
        let chunks = x.chunks_exact(LANES);
        let rest = chunks.remainder();
        #[cfg(target_arch = "x86_64")]
        let done = self.simd
            && crate::simd::deviation_lanes(&x[..x.len() - rest.len()], block_mean, &mut dev);
        #[cfg(not(target_arch = "x86_64"))]
        let done = false;
        if !done {
            for c in chunks {
                for j in 0..LANES {
                    let d = c[j] - block_mean;
                    dev[j] += d * d;
                }
            }
        }
        for &v in rest {
            let d = v - block_mean;
            dev[0] += d * d;
        }
        let block_m2: f64 = dev.iter().sum();
        let s = &mut self.s;
        if s.finite == 0 {
            // Not merged: the merge's 0 × ∞ would turn an overflowed m2 into NaN.
            s.mean = block_mean;
            s.m2 = block_m2;
        } else {
            let total = s.finite as f64 + n;
            let delta = block_mean - s.mean;
            s.mean += delta * n / total;
            s.m2 += block_m2 + delta * delta * (s.finite as f64) * n / total;
        }
        s.finite += x.len() as u64;
        s.l1 += abs.iter().sum::<f64>();
        s.sumsq += sq.iter().sum::<f64>();
        s.min = lo.iter().copied().fold(s.min, f64::min);
        s.max = hi.iter().copied().fold(s.max, f64::max);
        s.zeros += zero.iter().sum::<u64>();
        true
    }
}

/// The statistics of `x`.
pub(crate) fn finite_stats<T: Element>(x: &[T]) -> FiniteStats {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::available() {
        return finite_stats_avx2(x);
    }
    finite_stats_body(x, true)
}

/// [`finite_stats_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn finite_stats_avx2<T: Element>(x: &[T]) -> FiniteStats {
    /// # Safety
    /// The CPU must have AVX2 (an `unsafe fn` keeps the crate's Rust 1.85).
    #[target_feature(enable = "avx2")]
    unsafe fn inner<T: Element>(x: &[T]) -> FiniteStats {
        finite_stats_body(x, true)
    }
    // SAFETY: `finite_stats` checked at run time that the CPU has AVX2.
    unsafe { inner(x) }
}

/// Elements [`all_finite`] tests between two looks at the answer: a NaN stops the scan
/// within one block, and inside a block the test has no branch, so that it vectorises.
const FINITE_BLOCK: usize = 4096;

/// Whether every element of `x` is finite: what a NaN watch needs, at a fraction of the
/// cost of counting (no sums, no min or max).
pub(crate) fn all_finite<T: Element>(x: &[T]) -> bool {
    if !T::IS_FLOAT {
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    if crate::simd::available() {
        return all_finite_avx2(x);
    }
    all_finite_body(x)
}

#[inline(always)]
fn all_finite_body<T: Element>(x: &[T]) -> bool {
    x.chunks(FINITE_BLOCK)
        .all(|b| !b.iter().fold(false, |bad, &v| bad | v.is_non_finite()))
}

/// [`all_finite_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn all_finite_avx2<T: Element>(x: &[T]) -> bool {
    /// # Safety
    /// The CPU must have AVX2 (an `unsafe fn` keeps the crate's Rust 1.85).
    #[target_feature(enable = "avx2")]
    unsafe fn inner<T: Element>(x: &[T]) -> bool {
        all_finite_body(x)
    }
    // SAFETY: `all_finite` checked at run time that the CPU has AVX2.
    unsafe { inner(x) }
}

/// An element type as it travels in a tensor record's `tensor_content`: `SIZE`
/// little-endian bytes each, read from any alignment.
pub(crate) trait LeElement: Element {
    const SIZE: usize;
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! le_element {
    ($($t:ty),*) => {$(
        impl LeElement for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn from_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}

le_element!(i8, i16, i32, i64, u8, u16, u32, u64, half::f16, f32, f64);

impl LeElement for bool {
    const SIZE: usize = 1;
    /// numpy (and the record codec) treat any non-zero byte as true.
    #[inline(always)]
    fn from_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// The statistics of the little-endian elements `bytes` holds (a whole number of them).
pub(crate) fn finite_stats_le<T: LeElement>(bytes: &[u8]) -> FiniteStats {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::available() {
        return finite_stats_le_avx2::<T>(bytes);
    }
    finite_stats_le_body::<T>(bytes, true)
}

/// [`finite_stats_le_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn finite_stats_le_avx2<T: LeElement>(bytes: &[u8]) -> FiniteStats {
    /// # Safety
    /// The CPU must have AVX2 (an `unsafe fn` keeps the crate's Rust 1.85).
    #[target_feature(enable = "avx2")]
    unsafe fn inner<T: LeElement>(bytes: &[u8]) -> FiniteStats {
        finite_stats_le_body::<T>(bytes, true)
    }
    // SAFETY: `finite_stats_le` checked at run time that the CPU has AVX2.
    unsafe { inner::<T>(bytes) }
}

#[inline(always)]
fn finite_stats_body<T: Element>(data: &[T], simd: bool) -> FiniteStats {
    finite_stats_blocks(data.len(), simd, |at, buf| {
        for (b, &x) in buf.iter_mut().zip(&data[at..]) {
            *b = x.to_f64();
        }
    })
}

/// The same blocks as [`finite_stats_body`] over the elements decoded from `bytes`, so
/// the result is bit for bit that of the decoded slice.
#[inline(always)]
fn finite_stats_le_body<T: LeElement>(bytes: &[u8], simd: bool) -> FiniteStats {
    let n = bytes.len() / T::SIZE;
    finite_stats_blocks(n, simd, |at, buf| {
        let from = &bytes[at * T::SIZE..(at + buf.len()) * T::SIZE];
        for (b, c) in buf.iter_mut().zip(from.chunks_exact(T::SIZE)) {
            *b = T::from_le(c).to_f64();
        }
    })
}

/// The kernel over `len` elements that `fill(at, buf)` converts to `f64`, `buf.len()` of
/// them from element `at` on, one block of at most [`BLOCK`] at a time.
#[inline(always)]
fn finite_stats_blocks(
    len: usize,
    simd: bool,
    mut fill: impl FnMut(usize, &mut [f64]),
) -> FiniteStats {
    let mut acc = Acc::new(simd);
    let mut buf = [0.0f64; BLOCK];
    let mut at = 0;
    while at < len {
        let buf = &mut buf[..BLOCK.min(len - at)];
        fill(at, buf);
        at += buf.len();
        // A NaN or an infinity makes the block's sum non-finite (a sum of finite f64
        // values can overflow too, which the careful path below also handles): then the
        // block is added again without them.
        if acc.try_block(buf) {
            continue;
        }
        let mut kept = 0;
        for i in 0..buf.len() {
            let v = buf[i];
            if v.is_finite() {
                buf[kept] = v;
                kept += 1;
            } else if v.is_nan() {
                acc.s.nan += 1;
            } else if v > 0.0 {
                acc.s.pos_inf += 1;
            } else {
                acc.s.neg_inf += 1;
            }
        }
        acc.block(&buf[..kept]);
    }
    acc.s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_all_non_finite_have_no_statistics() {
        let s = finite_stats::<f32>(&[]);
        assert_eq!((s.finite, s.min(), s.std()), (0, None, None));
        let s = finite_stats(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!((s.nan, s.pos_inf, s.neg_inf, s.mean()), (1, 1, 1, None));
    }

    #[test]
    fn simd_lanes_are_bit_identical_to_the_portable_loops() {
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        };
        for len in [1usize, 7, 8, 9, 100, 2047, 2048, 2049, 5000, 12_345] {
            for kind in 0..5 {
                let x: Vec<f32> = (0..len)
                    .map(|_| {
                        let r = next();
                        match (kind, r % 50) {
                            (1, 0) => f32::NAN,
                            (2, 1) => f32::INFINITY,
                            (2, 2) => f32::NEG_INFINITY,
                            (3, 0..=10) => 0.0,
                            (3, 11) => -0.0,
                            // Squares overflow f32 but not f64; sums stay finite.
                            (4, _) => 3e38,
                            _ => ((r >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1e3,
                        }
                    })
                    .collect();
                let (a, b) = (finite_stats_body(&x, true), finite_stats_body(&x, false));
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "len {len}, kind {kind}");
            }
        }
        let big = vec![f64::MAX; 4096];
        let (a, b) = (
            finite_stats_body(&big, true),
            finite_stats_body(&big, false),
        );
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "an overflowing sum");
    }

    /// `x` as little-endian bytes behind `shift` bytes of padding, so the elements lie at
    /// every alignment.
    fn le_bytes<T: LeElement>(x: &[T], shift: usize, put: impl Fn(T, &mut Vec<u8>)) -> Vec<u8> {
        let mut out = vec![0xAB; shift];
        for &v in x {
            put(v, &mut out);
        }
        out
    }

    fn same(a: FiniteStats, b: FiniteStats) -> bool {
        // Bit for bit, NaN payloads included: compare the debug forms of the fields and the
        // bits of the floats.
        let bits = |s: &FiniteStats| [s.min, s.max, s.mean, s.m2, s.l1, s.sumsq].map(f64::to_bits);
        (a.finite, a.nan, a.pos_inf, a.neg_inf, a.zeros)
            == (b.finite, b.nan, b.pos_inf, b.neg_inf, b.zeros)
            && bits(&a) == bits(&b)
    }

    fn check_le<T: LeElement>(x: &[T], put: impl Fn(T, &mut Vec<u8>) + Copy) {
        for shift in 0..8 {
            let bytes = le_bytes(x, shift, put);
            let from_bytes = finite_stats_le::<T>(&bytes[shift..]);
            assert!(
                same(from_bytes, finite_stats(x)),
                "{} elements at shift {shift}",
                x.len()
            );
            assert!(same(
                finite_stats_le_body::<T>(&bytes[shift..], false),
                finite_stats_body(x, false)
            ));
        }
    }

    #[test]
    fn bytes_of_every_dtype_give_the_statistics_of_the_decoded_elements() {
        let lens = [0usize, 1, 3, 2047, 2048, 2049, 4097];
        for &n in &lens {
            let ints: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 2001 - 1000).collect();
            check_le(
                &ints.iter().map(|&v| v as i8).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v as i16).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v as i32).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v << 40).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v as u8).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v as u16).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v as u32).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| (v as u64) << 20).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &ints.iter().map(|&v| v % 3 == 0).collect::<Vec<_>>(),
                |v, o| o.push(u8::from(v)),
            );
            let floats: Vec<f64> = ints
                .iter()
                .enumerate()
                .map(|(i, &v)| match i % 97 {
                    5 => f64::NAN,
                    6 => f64::INFINITY,
                    7 => f64::NEG_INFINITY,
                    8 => -0.0,
                    _ => v as f64 * 0.37,
                })
                .collect();
            check_le(
                &floats
                    .iter()
                    .map(|&v| half::f16::from_f64(v))
                    .collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(
                &floats.iter().map(|&v| v as f32).collect::<Vec<_>>(),
                |v, o| o.extend(v.to_le_bytes()),
            );
            check_le(&floats, |v, o| o.extend(v.to_le_bytes()));
        }
        // Any non-zero byte is true, as the record codec reads it.
        let s = finite_stats_le::<bool>(&[0, 1, 2, 255]);
        assert_eq!((s.finite, s.zeros, s.l1()), (4, 1, Some(3.0)));
    }

    proptest::proptest! {
        #[test]
        fn f32_bytes_match_the_decoded_value_bit_for_bit(
            bits in proptest::collection::vec(proptest::prelude::any::<u32>(), 0..5000),
            shift in 0usize..4,
        ) {
            // Arbitrary bit patterns: NaNs of every payload, infinities, subnormals, ±0.
            let x: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            let bytes = le_bytes(&x, shift, |v, o| o.extend(v.to_le_bytes()));
            proptest::prop_assert!(same(finite_stats_le::<f32>(&bytes[shift..]), finite_stats(&x)));
        }

        #[test]
        fn f64_and_f16_bytes_match_the_decoded_value_bit_for_bit(
            bits in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..3000),
            shift in 0usize..8,
        ) {
            let x: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).collect();
            let bytes = le_bytes(&x, shift, |v, o| o.extend(v.to_le_bytes()));
            proptest::prop_assert!(same(finite_stats_le::<f64>(&bytes[shift..]), finite_stats(&x)));
            let h: Vec<half::f16> = bits.iter().map(|&b| half::f16::from_bits(b as u16)).collect();
            let bytes = le_bytes(&h, shift, |v, o| o.extend(v.to_le_bytes()));
            proptest::prop_assert!(same(finite_stats_le::<half::f16>(&bytes[shift..]), finite_stats(&h)));
        }
    }
}
