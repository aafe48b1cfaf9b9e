//! The fused pass over one full numpy buffer of `f32` with explicit AVX2 instructions.
//!
//! numpy's summation tree (see `kernel.rs`) sums each leaf of 128 elements in 8
//! interleaved accumulators: exactly one AVX2 register of `f32`. Each leaf's sum is one
//! chain of 16 dependent additions, so a loop over one leaf at a time waits on the adder's
//! latency; this kernel walks two leaves side by side (two independent chains) and keeps
//! every other quantity of the pass in registers: `|x|` sums, min, max, the zero count, and
//! the per-leaf moments' second look. It performs the same floating-point operations in
//! the same order as the portable kernel's `leaf` for a 128-element leaf (additions and
//! multiplications stay separate: no FMA), so every sum and moment is bit-identical; only
//! the sign of a zero min/max may differ, as it does between numpy's own code paths.
//!
//! `unsafe` is confined to this module (and the two one-line AVX2 wrappers of
//! `kernel.rs` and `finite.rs`): calling the `#[target_feature]` functions, sound because
//! [`available`] checked the CPU first; unaligned loads and stores at offsets the code
//! checked; and viewing `&[T]` as `&[f32]` after a `TypeId` check said `T` is `f32`.

#![allow(unsafe_code)]

use crate::pairwise::{BUFSIZE, LANES, PW_BLOCK};
use std::any::TypeId;
use std::arch::x86_64::*;

/// Leaves per numpy buffer.
const LEAVES: usize = BUFSIZE / PW_BLOCK;

/// True when the CPU has AVX2 (`std` caches the detection: one atomic load).
#[inline(always)]
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// `x` as `&[f32]` when `T` is `f32`.
#[inline(always)]
pub(crate) fn as_f32<T: 'static>(x: &[T]) -> Option<&[f32]> {
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        // SAFETY: `T` is `f32` (same `TypeId`), so this is the same slice with its own type.
        Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) })
    } else {
        None
    }
}

/// `v` as `T` when `T` is `f32`.
#[inline(always)]
pub(crate) fn from_f32<T: 'static + Copy>(v: f32) -> Option<T> {
    (&v as &dyn std::any::Any).downcast_ref::<T>().copied()
}

/// What one full buffer gives.
pub(crate) struct Buffer {
    /// numpy's pairwise sum of the buffer.
    pub sum: f32,
    /// The same of `|x|`.
    pub abs: f32,
    /// The buffer's minimum (meaningless when it holds a NaN).
    pub min: f32,
    /// The buffer's maximum, like `min`.
    pub max: f32,
    /// Elements equal to zero (only when asked for).
    pub zeros: u64,
}

/// The fused pass over one buffer of exactly [`BUFSIZE`] elements; with `MOMENTS`, each
/// leaf's `(n, mean, m2)` goes to `merge`, left to right, as the portable kernel hands them
/// to its running moments.
///
/// # Panics
/// If `x` does not hold [`BUFSIZE`] elements or the CPU lacks AVX2 (callers check both).
#[inline(always)]
pub(crate) fn buffer<const MOMENTS: bool, const ZEROS: bool>(
    x: &[f32],
    merge: impl FnMut(f64, f64, f64),
) -> Buffer {
    assert!(x.len() == BUFSIZE && available());
    // SAFETY: the CPU has AVX2 (checked above).
    unsafe { buffer_avx2::<MOMENTS, ZEROS>(x.try_into().expect("checked length"), merge) }
}

/// numpy's combination `((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))` of the 8 accumulators of
/// each of four leaves' registers, in registers: two rounds of horizontal adds pair the
/// lanes as numpy does within each 128-bit half, and the halves' sums add last.
///
/// # Safety
/// The CPU must have AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn combine4(a: __m256, b: __m256, c: __m256, d: __m256) -> [f32; 4] {
    let u = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    let s = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps::<1>(u));
    let mut out = [0.0f32; 4];
    _mm_storeu_ps(out.as_mut_ptr(), s);
    out
}

/// Each register's 8 lanes widened to `f64` and summed in lane order (as `Iterator::sum`
/// over the lanes: `-0.0 + l0 + l1 + … + l7`, where `-0.0 + l0` is `l0`), for four
/// registers at once: a 4 × 8 transpose puts lane `j` of the four side by side, so the
/// eight additions run on `f64` vectors.
///
/// # Safety
/// The CPU must have AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn lane_sums_f64(a: __m256, b: __m256, c: __m256, d: __m256) -> [f64; 4] {
    let t0 = _mm256_unpacklo_ps(a, b); // a0 b0 a1 b1 | a4 b4 a5 b5
    let t1 = _mm256_unpackhi_ps(a, b); // a2 b2 a3 b3 | a6 b6 a7 b7
    let t2 = _mm256_unpacklo_ps(c, d);
    let t3 = _mm256_unpackhi_ps(c, d);
    let j0 = _mm256_shuffle_ps::<0x44>(t0, t2); // a0 b0 c0 d0 | a4 b4 c4 d4
    let j1 = _mm256_shuffle_ps::<0xEE>(t0, t2); // lanes 1 | 5
    let j2 = _mm256_shuffle_ps::<0x44>(t1, t3); // lanes 2 | 6
    let j3 = _mm256_shuffle_ps::<0xEE>(t1, t3); // lanes 3 | 7
    let (l0, l1, l2, l3) = (
        _mm256_castps256_ps128(j0),
        _mm256_castps256_ps128(j1),
        _mm256_castps256_ps128(j2),
        _mm256_castps256_ps128(j3),
    );
    let (h0, h1, h2, h3) = (
        _mm256_extractf128_ps::<1>(j0),
        _mm256_extractf128_ps::<1>(j1),
        _mm256_extractf128_ps::<1>(j2),
        _mm256_extractf128_ps::<1>(j3),
    );
    let mut acc = _mm256_cvtps_pd(l0);
    for v in [l1, l2, l3, h0, h1, h2, h3] {
        acc = _mm256_add_pd(acc, _mm256_cvtps_pd(v));
    }
    let mut out = [0.0f64; 4];
    _mm256_storeu_pd(out.as_mut_ptr(), acc);
    out
}

/// numpy's halving tree over the leaf sums of one full buffer. Every split of a full buffer
/// falls on a leaf boundary (8192 → 4096 → … → 128) and halves a power of two, so the
/// recursion's additions are exactly the levels of a bottom-up pairing.
#[inline(always)]
fn tree(mut s: [f32; LEAVES]) -> f32 {
    let mut n = LEAVES;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            s[i] = s[2 * i] + s[2 * i + 1];
        }
    }
    s[0]
}

/// # Safety
/// The CPU must have AVX2 (as for every function of this module with `target_feature`:
/// `unsafe fn` rather than a safe `target_feature` function keeps the crate's Rust 1.85).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn lanes(v: __m256) -> [f32; LANES] {
    let mut out = [0.0f32; LANES];
    // `out` holds 8 `f32`.
    _mm256_storeu_ps(out.as_mut_ptr(), v);
    out
}

/// # Safety
/// The CPU must have AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load(x: &[f32; BUFSIZE], i: usize) -> __m256 {
    assert!(i + LANES <= BUFSIZE);
    // Elements `i..i + 8` lie inside `x` (asserted; the compiler drops the check where the
    // loop bounds prove it).
    _mm256_loadu_ps(x.as_ptr().add(i))
}

/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn buffer_avx2<const MOMENTS: bool, const ZEROS: bool>(
    x: &[f32; BUFSIZE],
    mut merge: impl FnMut(f64, f64, f64),
) -> Buffer {
    let absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    let zero = _mm256_setzero_ps();
    let mut mn = load(x, 0);
    let mut mx = mn;
    // u32 lane counters: at most 1024 per lane in one buffer.
    let mut zc = _mm256_setzero_si256();
    let mut sums = [0.0f32; LEAVES];
    let mut abss = [0.0f32; LEAVES];
    const STEPS: usize = PW_BLOCK / LANES;
    for pair in 0..LEAVES / 2 {
        let (b0, b1) = (2 * pair * PW_BLOCK, (2 * pair + 1) * PW_BLOCK);
        let (mut r0, mut r1) = (zero, zero);
        let (mut a0, mut a1) = (zero, zero);
        // One step of both leaves; written out four times per loop turn because with the
        // zero count the compiler kept the loop rolled, and the rolled loop stalled on
        // memory (its loads issued no further ahead than the additions they feed).
        macro_rules! step {
            ($i:expr) => {{
                let v0 = load(x, b0 + $i * LANES);
                let v1 = load(x, b1 + $i * LANES);
                r0 = _mm256_add_ps(r0, v0);
                r1 = _mm256_add_ps(r1, v1);
                a0 = _mm256_add_ps(a0, _mm256_and_ps(v0, absmask));
                a1 = _mm256_add_ps(a1, _mm256_and_ps(v1, absmask));
                mn = _mm256_min_ps(_mm256_min_ps(v0, v1), mn);
                mx = _mm256_max_ps(_mm256_max_ps(v0, v1), mx);
                if ZEROS {
                    // An equal lane's mask is -1 as an integer: subtracting counts it.
                    let e0 = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_EQ_OQ>(v0, zero));
                    let e1 = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_EQ_OQ>(v1, zero));
                    zc = _mm256_sub_epi32(_mm256_sub_epi32(zc, e0), e1);
                }
            }};
        }
        // The data 8 pairs (8 KiB) ahead, into L1 ahead of time: 16 lines of 64 bytes per
        // pair (past the end of the buffer this fetches the next buffer's start; a
        // prefetch never faults). Without it the loop stalled on memory whenever the
        // compiler kept it rolled; 1 KiB ahead helped half as much as 4 or 8 KiB.
        let ahead = x.as_ptr().wrapping_add((2 * pair + 16) * PW_BLOCK);
        for line in 0..2 * PW_BLOCK / 16 {
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line * 16).cast());
        }
        for i in (0..STEPS).step_by(4) {
            step!(i);
            step!(i + 1);
            step!(i + 2);
            step!(i + 3);
        }
        let [s0, s1, t0, t1] = combine4(r0, r1, a0, a1);
        sums[2 * pair] = s0;
        sums[2 * pair + 1] = s1;
        abss[2 * pair] = t0;
        abss[2 * pair + 1] = t1;
    }
    if MOMENTS {
        // The second look at the buffer while it is in L1: corrected two-pass moments
        // around each leaf's own f32 mean, as the portable kernel computes them. A loop of
        // its own rather than right after each leaf's sums: then no leaf waits for its own
        // sum, and the out-of-order core overlaps the leaves' addition chains.
        let nf = PW_BLOCK as f64;
        for pair in 0..LEAVES / 2 {
            let (b0, b1) = (2 * pair * PW_BLOCK, (2 * pair + 1) * PW_BLOCK);
            let m0 = sums[2 * pair] / PW_BLOCK as f32;
            let m1 = sums[2 * pair + 1] / PW_BLOCK as f32;
            let (vm0, vm1) = (_mm256_set1_ps(m0), _mm256_set1_ps(m1));
            let (mut d0, mut d1) = (zero, zero);
            let (mut q0, mut q1) = (zero, zero);
            for i in 0..STEPS {
                let e0 = _mm256_sub_ps(load(x, b0 + i * LANES), vm0);
                let e1 = _mm256_sub_ps(load(x, b1 + i * LANES), vm1);
                d0 = _mm256_add_ps(d0, e0);
                d1 = _mm256_add_ps(d1, e1);
                q0 = _mm256_add_ps(q0, _mm256_mul_ps(e0, e0));
                q1 = _mm256_add_ps(q1, _mm256_mul_ps(e1, e1));
            }
            let [sd0, sd1, sq0, sq1] = lane_sums_f64(d0, d1, q0, q1);
            for (m, d1, d2) in [(m0, sd0, sq0), (m1, sd1, sq1)] {
                merge(nf, f64::from(m) + d1 / nf, (d2 - d1 * d1 / nf).max(0.0));
            }
        }
    }
    let fold = |v: [f32; LANES], pick: fn(f32, f32) -> f32| v.into_iter().reduce(pick);
    let zeros = if ZEROS {
        let mut c = [0u32; LANES];
        // `c` holds 8 `u32`.
        _mm256_storeu_si256(c.as_mut_ptr().cast(), zc);
        c.iter().map(|&v| u64::from(v)).sum()
    } else {
        0
    };
    Buffer {
        sum: tree(sums),
        abs: tree(abss),
        // `<`/`>` as the portable kernel compares (a NaN lane is skipped; any NaN makes
        // the caller discard the range anyway).
        min: fold(lanes(mn), |a, b| if b < a { b } else { a }).expect("8 lanes"),
        max: fold(lanes(mx), |a, b| if b > a { b } else { a }).expect("8 lanes"),
        zeros,
    }
}

/// Per-lane sums of whole chunks of 8 `f64` (`finite.rs`'s block statistics): lane `j`
/// takes elements `j`, `j + 8`, … The AVX2 loop below does what the portable loop of
/// `finite.rs` does, operation for operation (no FMA; `min`/`max` as `v < lo ? v : lo`,
/// which is what `vminpd v, lo` computes), so the results are bit-identical; the compiler
/// left to itself spilled the 8-lane accumulators of that loop to the stack.
#[derive(Clone, Copy)]
pub(crate) struct FiniteLanes {
    pub(crate) sum: [f64; 8],
    pub(crate) abs: [f64; 8],
    pub(crate) sq: [f64; 8],
    pub(crate) lo: [f64; 8],
    pub(crate) hi: [f64; 8],
    pub(crate) zero: [u64; 8],
}

/// Adds `x` (whole chunks of 8: the length is a multiple of 8) to `s` with AVX2; false,
/// leaving `s` as it was, when the CPU has no AVX2.
#[inline(always)]
pub(crate) fn finite_lanes(x: &[f64], s: &mut FiniteLanes) -> bool {
    if !available() || x.len() % 8 != 0 {
        return false;
    }
    // SAFETY: the CPU has AVX2 (checked above).
    unsafe { finite_lanes_avx2(x, s) };
    true
}

/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn finite_lanes_avx2(x: &[f64], s: &mut FiniteLanes) {
    let absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    let zero = _mm256_setzero_pd();
    let (mut sum0, mut sum1) = (
        _mm256_loadu_pd(s.sum.as_ptr()),
        _mm256_loadu_pd(s.sum[4..].as_ptr()),
    );
    let (mut abs0, mut abs1) = (
        _mm256_loadu_pd(s.abs.as_ptr()),
        _mm256_loadu_pd(s.abs[4..].as_ptr()),
    );
    let (mut sq0, mut sq1) = (
        _mm256_loadu_pd(s.sq.as_ptr()),
        _mm256_loadu_pd(s.sq[4..].as_ptr()),
    );
    let (mut lo0, mut lo1) = (
        _mm256_loadu_pd(s.lo.as_ptr()),
        _mm256_loadu_pd(s.lo[4..].as_ptr()),
    );
    let (mut hi0, mut hi1) = (
        _mm256_loadu_pd(s.hi.as_ptr()),
        _mm256_loadu_pd(s.hi[4..].as_ptr()),
    );
    let (mut z0, mut z1) = (
        _mm256_loadu_si256(s.zero.as_ptr().cast()),
        _mm256_loadu_si256(s.zero[4..].as_ptr().cast()),
    );
    for c in x.chunks_exact(8) {
        // In bounds: `c` has 8 elements.
        let v0 = _mm256_loadu_pd(c.as_ptr());
        let v1 = _mm256_loadu_pd(c[4..].as_ptr());
        sum0 = _mm256_add_pd(sum0, v0);
        sum1 = _mm256_add_pd(sum1, v1);
        abs0 = _mm256_add_pd(abs0, _mm256_and_pd(v0, absmask));
        abs1 = _mm256_add_pd(abs1, _mm256_and_pd(v1, absmask));
        sq0 = _mm256_add_pd(sq0, _mm256_mul_pd(v0, v0));
        sq1 = _mm256_add_pd(sq1, _mm256_mul_pd(v1, v1));
        lo0 = _mm256_min_pd(v0, lo0);
        lo1 = _mm256_min_pd(v1, lo1);
        hi0 = _mm256_max_pd(v0, hi0);
        hi1 = _mm256_max_pd(v1, hi1);
        // An equal lane is all ones, i.e. -1: subtracting it counts one.
        z0 = _mm256_sub_epi64(
            z0,
            _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_EQ_OQ>(v0, zero)),
        );
        z1 = _mm256_sub_epi64(
            z1,
            _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_EQ_OQ>(v1, zero)),
        );
    }
    _mm256_storeu_pd(s.sum.as_mut_ptr(), sum0);
    _mm256_storeu_pd(s.sum[4..].as_mut_ptr(), sum1);
    _mm256_storeu_pd(s.abs.as_mut_ptr(), abs0);
    _mm256_storeu_pd(s.abs[4..].as_mut_ptr(), abs1);
    _mm256_storeu_pd(s.sq.as_mut_ptr(), sq0);
    _mm256_storeu_pd(s.sq[4..].as_mut_ptr(), sq1);
    _mm256_storeu_pd(s.lo.as_mut_ptr(), lo0);
    _mm256_storeu_pd(s.lo[4..].as_mut_ptr(), lo1);
    _mm256_storeu_pd(s.hi.as_mut_ptr(), hi0);
    _mm256_storeu_pd(s.hi[4..].as_mut_ptr(), hi1);
    _mm256_storeu_si256(s.zero.as_mut_ptr().cast(), z0);
    _mm256_storeu_si256(s.zero[4..].as_mut_ptr().cast(), z1);
}

/// Adds `(x - mean)²` of whole chunks of 8 `f64` to the lanes `dev` with AVX2 (the
/// portable loop's operations, in its order); false, leaving `dev` as it was, without
/// AVX2.
#[inline(always)]
pub(crate) fn deviation_lanes(x: &[f64], mean: f64, dev: &mut [f64; 8]) -> bool {
    if !available() || x.len() % 8 != 0 {
        return false;
    }
    // SAFETY: the CPU has AVX2 (checked above).
    unsafe { deviation_lanes_avx2(x, mean, dev) };
    true
}

/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn deviation_lanes_avx2(x: &[f64], mean: f64, dev: &mut [f64; 8]) {
    let m = _mm256_set1_pd(mean);
    let (mut d0, mut d1) = (
        _mm256_loadu_pd(dev.as_ptr()),
        _mm256_loadu_pd(dev[4..].as_ptr()),
    );
    for c in x.chunks_exact(8) {
        let a = _mm256_sub_pd(_mm256_loadu_pd(c.as_ptr()), m);
        let b = _mm256_sub_pd(_mm256_loadu_pd(c[4..].as_ptr()), m);
        d0 = _mm256_add_pd(d0, _mm256_mul_pd(a, a));
        d1 = _mm256_add_pd(d1, _mm256_mul_pd(b, b));
    }
    _mm256_storeu_pd(dev.as_mut_ptr(), d0);
    _mm256_storeu_pd(dev[4..].as_mut_ptr(), d1);
}
