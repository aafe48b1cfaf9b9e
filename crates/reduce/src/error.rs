//! Why a reduction has no value.

use crate::{DType, Flavor, ReductionRequest};

/// Why a requested reduction could not be computed. Each variant mirrors a failure numpy
/// (or PyTorch) has in the same situation.
///
/// Not `#[non_exhaustive]`: the trial reader sorts every variant into a kind of failure
/// (`smdebug_trial::ErrorKind`), so a new variant must fail to compile there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReduceError {
    /// min/max (or the matrix norms' final maximum) of zero elements (numpy `ValueError`).
    #[error("{request}: zero-size array to reduction operation {operation} which has no identity")]
    EmptyArray {
        /// The reduction that failed.
        request: ReductionRequest,
        /// numpy's ufunc name: `"minimum"` or `"maximum"`.
        operation: &'static str,
    },
    /// `np.linalg.norm` of a 0-d array (without `abs`) or of an array with 3 or more
    /// dimensions (numpy `ValueError`).
    #[error("{request}: Improper number of dimensions to norm. (the array has {ndim})")]
    ImproperDimensions {
        /// The reduction that failed.
        request: ReductionRequest,
        /// Number of dimensions of the input.
        ndim: usize,
    },
    /// The spectral norm of a 2-d array containing NaN (numpy's LAPACK SVD fails:
    /// `LinAlgError`, a subclass of `ValueError`).
    #[error("{request}: SVD did not converge")]
    SvdDidNotConverge {
        /// The reduction that failed.
        request: ReductionRequest,
    },
    /// A dtype numpy's linear algebra does not support, e.g. the spectral norm of a 2-d
    /// `float16` array (numpy `TypeError`).
    #[error("{request}: array type {dtype} is unsupported in linalg")]
    UnsupportedLinalgDtype {
        /// The reduction that failed.
        request: ReductionRequest,
        /// The input dtype.
        dtype: DType,
    },
    /// The framework refuses this dtype for this operation, e.g. `torch.mean` of an integer
    /// tensor (PyTorch `RuntimeError`).
    #[error("{request}: {flavor:?} cannot compute it for dtype {dtype}")]
    UnsupportedDtype {
        /// The reduction that failed.
        request: ReductionRequest,
        /// The input dtype.
        dtype: DType,
        /// Whose semantics were asked for.
        flavor: Flavor,
    },
    /// min/max/median of an empty tensor under PyTorch semantics (`RuntimeError`).
    #[error("{request}: {flavor:?} cannot reduce an empty tensor without a dimension")]
    EmptyTensor {
        /// The reduction that failed.
        request: ReductionRequest,
        /// Whose semantics were asked for.
        flavor: Flavor,
    },
}

impl ReduceError {
    /// The request that failed.
    pub fn request(&self) -> ReductionRequest {
        match self {
            ReduceError::EmptyArray { request, .. }
            | ReduceError::ImproperDimensions { request, .. }
            | ReduceError::SvdDidNotConverge { request }
            | ReduceError::UnsupportedLinalgDtype { request, .. }
            | ReduceError::UnsupportedDtype { request, .. }
            | ReduceError::EmptyTensor { request, .. } => *request,
        }
    }

    /// Whether numpy fails with a `ValueError` or a subclass of it (`LinAlgError`): an empty
    /// array, a norm of improper dimensions, an SVD that did not converge. smdebug's writer
    /// skips such reductions with a warning, and lets any other failure through.
    pub fn is_value_error(&self) -> bool {
        matches!(
            self,
            ReduceError::EmptyArray { .. }
                | ReduceError::ImproperDimensions { .. }
                | ReduceError::SvdDidNotConverge { .. }
        )
    }
}
