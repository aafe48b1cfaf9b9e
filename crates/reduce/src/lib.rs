//! Tensor reductions for smdebug-rs — `min max median mean std variance sum prod l1 l2` and
//! their `abs_` variants — computed the way the Python smdebug 1.0.34 computes them, over
//! every numeric dtype, in one fused pass over the data.
//!
//! The same reduction name means different numbers in different parts of the original, so
//! every call names its [`Flavor`]:
//!
//! * [`Flavor::Numpy`] is `smdebug.core.reductions.get_numpy_reduction` (the Python `Trial`'s
//!   on-the-fly reductions, the TensorFlow/XGBoost writer path): numpy's result dtypes,
//!   population std/variance, and `l1`/`l2` as `np.linalg.norm(x, ord)` — vector norms for
//!   1-d input but **matrix norms for 2-d input** (largest absolute column sum; largest
//!   singular value) and errors for 0-d and ≥3-d input.
//! * [`Flavor::PyTorch`] is what the PyTorch hook saves: unbiased std/variance and norms of
//!   the flattened tensor.
//! * [`Flavor::MXNet`] is what the MXNet hook saves: [`Flavor::Numpy`] but `l1`/`l2` of the
//!   flattened tensor (`mx.nd.norm`), for any rank.
//!
//! Failures are typed ([`ReduceError`]), one variant per failure numpy or PyTorch has;
//! [`ReduceError::is_value_error`] says whether smdebug's writer would skip it.
//!
//! ```
//! use ndarray::array;
//! use smdebug_reduce::{reduce, DType, Flavor, ReductionRequest, Scalar};
//!
//! let x = array![[1i32, -2], [3, 4]];
//! let requests: Vec<ReductionRequest> =
//!     ["sum", "mean", "l1", "l2", "abs_min"].iter().map(|s| s.parse().unwrap()).collect();
//! let out = reduce(x.view(), &requests, Flavor::Numpy);
//! assert_eq!(out[0], Ok(Scalar::I64(6)));      // int32 sums to int64
//! assert_eq!(out[1], Ok(Scalar::F64(1.5)));    // and averages to float64
//! assert_eq!(out[2], Ok(Scalar::F64(6.0)));    // matrix 1-norm: max column sum of |x|
//! let l2 = out[3].as_ref().unwrap();           // spectral norm, not sqrt(30)
//! assert!((l2.to_f64() - 5.116_672_736_016_927).abs() < 1e-12);
//! assert_eq!(out[4].as_ref().unwrap().dtype(), DType::I32);
//!
//! // A 0-d array has no norm in numpy (unless abs turned it into a scalar first).
//! let zero_d = ndarray::arr0(3.0f32);
//! let err = reduce(zero_d.view(), &["l2".parse().unwrap()], Flavor::Numpy).remove(0);
//! assert!(matches!(err, Err(smdebug_reduce::ReduceError::ImproperDimensions { ndim: 0, .. })));
//! ```
//!
//! # The one reduction type
//!
//! [`Reduction`] and [`ReductionRequest`] are the workspace's only names for reductions:
//! `smdebug-config` holds them in its `ReductionConfig` (and re-exports them), the hook hands
//! exactly the requests a config names to [`reduce`], and the trial parses reduction tensor
//! names into them. They are defined here, and `smdebug-config` depends on this crate rather
//! than the reverse: this crate needs only `ndarray`, `half` and `thiserror` (which every
//! crate that reads or writes tensors has already, through `smdebug-record`), whereas
//! depending on config would pull `regex`, `fancy-regex`, `serde` and `serde_json` into the
//! kernels. Which reductions a `ReductionConfig` accepts where (smdebug's
//! `ALLOWED_REDUCTIONS` and `ALLOWED_NORMS`, never `median`) is config's rule, not this
//! crate's.
//!
//! # Numerical guarantees
//!
//! With [`Flavor::Numpy`], `min`, `max`, `sum`, `mean`, `prod`, `median`, `variance`, `std`
//! and the 1-d/2-d `l1` reproduce numpy's order of operations (buffers of 8192 elements,
//! numpy's pairwise summation tree with 8 accumulators, float16 rounding where numpy rounds)
//! and are bit-identical to numpy 1.26 for contiguous arrays. `l2` of 1-d input is computed
//! in `f64` and rounded to the result dtype. numpy calls BLAS `dot`, which for float32 sums
//! in float32 in the order of the machine's BLAS kernel, so numpy's value can be many ulp
//! from the exact one for long vectors (13 ulp for 5,000 elements on one OpenBLAS kernel).
//! `l2` of 2-d input (the largest singular value) is computed in
//! `f64` from the Gram matrix (Householder tridiagonalization, then Sturm bisection for the
//! largest eigenvalue): relative error below 1e-12 before rounding to the
//! result dtype, against LAPACK's ~1e-15 (float64) or ~1e-7 (float32). The
//! [`Flavor::PyTorch`] std/variance come from per-leaf two-pass moments merged in `f64`
//! (relative error ~1e-6 for float32 data, 1e-14 for float64, whatever the offset).
#![deny(missing_docs, unsafe_code)]

mod dtype;
mod element;
mod error;
mod finite;
mod groups;
mod health;
mod kernel;
mod linalg;
mod numpy;
mod pairwise;
mod reduction;
#[cfg(target_arch = "x86_64")]
mod simd;
mod stats;
mod torch;
mod view;

pub use dtype::{DType, Scalar};
pub use element::{AccFloat, Element};
pub use error::ReduceError;
pub use finite::FiniteStats;
pub use health::{histogram_bucket, Health, HISTOGRAM_BUCKETS, HISTOGRAM_MIN_EXPONENT};
pub use reduction::{Flavor, ParseReductionError, Reduction, ReductionRequest};
pub use stats::Stats;
pub use view::TensorView;

use ndarray::{ArrayView, Dimension};
use std::borrow::Cow;

/// The elements of `view` in logical (row-major) order, borrowed when already contiguous.
fn contiguous<'a, T: Element, D: Dimension>(view: &ArrayView<'a, T, D>) -> Cow<'a, [T]> {
    match view.to_slice() {
        Some(s) => Cow::Borrowed(s),
        // The copy is no larger than the view, which the caller already holds in memory.
        None => Cow::Owned(view.iter().copied().collect()),
    }
}

/// Runs `flavor`'s kernels on the contiguous `data` of an array of `shape`.
fn dispatch<T: Element>(
    data: &[T],
    shape: &[usize],
    requests: &[ReductionRequest],
    flavor: Flavor,
    plain: Option<&kernel::Fused<T>>,
) -> Vec<Result<Scalar, ReduceError>> {
    match flavor {
        Flavor::Numpy => numpy::reduce(data, shape, requests, plain),
        // `mx.nd.norm` flattens: numpy's semantics on the same elements seen as a vector,
        // which changes only the norms (the one place numpy looks at the shape).
        Flavor::MXNet => numpy::reduce(data, &[data.len()], requests, plain),
        Flavor::PyTorch => torch::reduce(data, requests, plain),
    }
}

/// Computes every request on `view` with `flavor`'s semantics; one result per request, in
/// order. One fused pass serves all requests on `x` and one all requests on `abs(x)`
/// (`prod` and `median`, whose semantics need their own order, take their own pass).
pub fn reduce<T: Element, D: Dimension>(
    view: ArrayView<'_, T, D>,
    requests: &[ReductionRequest],
    flavor: Flavor,
) -> Vec<Result<Scalar, ReduceError>> {
    let data = contiguous(&view);
    dispatch(&data, view.shape(), requests, flavor, None)
}

/// One reduction (see [`reduce`]).
pub fn reduce_one<T: Element, D: Dimension>(
    view: ArrayView<'_, T, D>,
    request: ReductionRequest,
    flavor: Flavor,
) -> Result<Scalar, ReduceError> {
    reduce(view, &[request], flavor)
        .pop()
        .expect("one result per request")
}

/// [`reduce`] plus the tensor's [`Stats`], from the same pass.
pub fn reduce_with_stats<T: Element, D: Dimension>(
    view: ArrayView<'_, T, D>,
    requests: &[ReductionRequest],
    flavor: Flavor,
) -> (Vec<Result<Scalar, ReduceError>>, Stats) {
    let data = contiguous(&view);
    let plain = kernel::fused::<T, false, true>(&data);
    let stats = stats::from_fused(&data, &plain, true);
    let out = dispatch(&data, view.shape(), requests, flavor, Some(&plain));
    (out, stats)
}

/// NaN/Inf counts and finite min/max/mean of `view`, in one pass.
pub fn stats<T: Element, D: Dimension>(view: ArrayView<'_, T, D>) -> Stats {
    let data = contiguous(&view);
    let f = kernel::fused::<T, false, false>(&data);
    stats::from_fused(&data, &f, false)
}

/// [`reduce`] plus the tensor's [`Health`] summary (with the exponent histogram when
/// `histogram`), from the same trip through memory: the summation tree reads each buffer of
/// 8192 elements and the zero counts (and histogram) read it again while it is in cache.
/// Only a tensor that holds NaN or infinities takes one more pass, to tell `+inf` from
/// `-inf` and find its finite range.
///
/// ```
/// use smdebug_reduce::{reduce_with_health, Flavor, Scalar};
/// let x = ndarray::arr1(&[0.0f32, -2.0, f32::NAN, f32::INFINITY, 3.0, -0.0]);
/// let (out, h) = reduce_with_health(x.view(), &["max".parse().unwrap()], Flavor::Numpy, false);
/// assert!(out[0].as_ref().unwrap().to_f64().is_nan()); // numpy's max with a NaN
/// assert_eq!((h.elements, h.nan, h.pos_inf, h.neg_inf, h.zeros), (6, 1, 1, 0, 2));
/// assert_eq!((h.finite_min, h.finite_max, h.amax), (-2.0, 3.0, 3.0));
/// ```
pub fn reduce_with_health<T: Element, D: Dimension>(
    view: ArrayView<'_, T, D>,
    requests: &[ReductionRequest],
    flavor: Flavor,
    histogram: bool,
) -> (Vec<Result<Scalar, ReduceError>>, Health) {
    let data = contiguous(&view);
    let mut scan = health::Scan::new(histogram);
    let plain = kernel::fused_with::<T, false, true, true>(&data, |b| scan.buffer(b));
    let out = dispatch(&data, view.shape(), requests, flavor, Some(&plain));
    (out, health::from_fused(&data, &plain, scan))
}

/// The [`Health`] summary of `view` alone (one pass; see [`reduce_with_health`]).
pub fn health<T: Element, D: Dimension>(view: ArrayView<'_, T, D>, histogram: bool) -> Health {
    let data = contiguous(&view);
    let mut scan = health::Scan::new(histogram);
    let f = kernel::fused_with::<T, false, false, true>(&data, |b| scan.buffer(b));
    health::from_fused(&data, &f, scan)
}

/// Whether every element of `view` is finite (no NaN, no ±infinity; always true for
/// integers and bool). One pass that only tests each element's exponent, several times
/// cheaper than [`health`], which a caller needs only once this says `false`.
///
/// ```
/// let x = ndarray::arr1(&[1.0f32, -0.0, f32::MAX]);
/// assert!(smdebug_reduce::all_finite(x.view()));
/// let y = ndarray::arr1(&[1.0f32, f32::NEG_INFINITY]);
/// assert!(!smdebug_reduce::all_finite(y.view()));
/// ```
pub fn all_finite<T: Element, D: Dimension>(view: ArrayView<'_, T, D>) -> bool {
    match view.as_slice_memory_order() {
        // Every element once, in whatever order memory holds them: the answer has no order.
        Some(s) => finite::all_finite(s),
        None => view.iter().all(|&v| !v.is_non_finite()),
    }
}

/// Counts of NaN, ±Inf and zero elements of `view` and `f64` statistics of its finite
/// elements (min, max, mean, M2, std, Σ|x|, √Σx²), in one pass: what a table of tensor
/// statistics wants, where one NaN must not hide the rest of the tensor.
pub fn finite_stats<T: Element, D: Dimension>(view: ArrayView<'_, T, D>) -> FiniteStats {
    finite::finite_stats(&contiguous(&view))
}

/// [`finite_stats`] of a tensor's elements as they lie in a record's `tensor_content`:
/// `bytes` holds little-endian elements of `dtype` (a bool is one byte, non-zero is true),
/// at any alignment. Bit for bit the statistics of the decoded elements (the same blocks,
/// the same order), without decoding them into an array first. `None` when `bytes` is not
/// a whole number of elements.
///
/// ```
/// use smdebug_reduce::{finite_stats, finite_stats_le, DType};
/// let x = [1.5f32, f32::NAN, -3.0, 0.0];
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// let s = finite_stats_le(DType::F32, &bytes).unwrap();
/// assert_eq!(s, finite_stats(ndarray::aview1(&x)));
/// assert_eq!((s.nan, s.zeros, s.min()), (1, 1, Some(-3.0)));
/// assert!(finite_stats_le(DType::F32, &bytes[1..]).is_none());
/// ```
pub fn finite_stats_le(dtype: DType, bytes: &[u8]) -> Option<FiniteStats> {
    use finite::{finite_stats_le as le, LeElement};
    fn whole<T: LeElement>(bytes: &[u8]) -> Option<FiniteStats> {
        (bytes.len() % T::SIZE == 0).then(|| le::<T>(bytes))
    }
    match dtype {
        DType::Bool => whole::<bool>(bytes),
        DType::I8 => whole::<i8>(bytes),
        DType::I16 => whole::<i16>(bytes),
        DType::I32 => whole::<i32>(bytes),
        DType::I64 => whole::<i64>(bytes),
        DType::U8 => whole::<u8>(bytes),
        DType::U16 => whole::<u16>(bytes),
        DType::U32 => whole::<u32>(bytes),
        DType::U64 => whole::<u64>(bytes),
        DType::F16 => whole::<half::f16>(bytes),
        DType::F32 => whole::<f32>(bytes),
        DType::F64 => whole::<f64>(bytes),
    }
}
