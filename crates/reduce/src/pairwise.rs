//! The geometry of numpy's pairwise summation, shared by the portable kernel (`kernel.rs`)
//! and the AVX2 one (`simd.rs`): both must cut the data at the same places to add in the
//! same order.

/// numpy's ufunc buffer size (`NPY_BUFSIZE`), in elements.
pub(crate) const BUFSIZE: usize = 8192;
/// numpy's pairwise-summation leaf size (`PW_BLOCKSIZE`).
pub(crate) const PW_BLOCK: usize = 128;
/// Accumulator lanes (numpy's unroll factor).
pub(crate) const LANES: usize = 8;
