//! What can be asked for: the reductions, their requests and the two flavours. These are
//! the workspace's one reduction type (see the crate docs for why it lives here).

use std::fmt;
use std::str::FromStr;

/// One reduction operation (without the `abs_` modifier, see [`ReductionRequest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// Smallest element; NaN if any element is NaN.
    Min,
    /// Largest element; NaN if any element is NaN.
    Max,
    /// Median (numpy: mean of the two middle elements; PyTorch: the lower one). Not accepted
    /// by smdebug's `ReductionConfig`, provided for analysis.
    Median,
    /// Arithmetic mean.
    Mean,
    /// Standard deviation: population (ddof = 0) for numpy, unbiased (N − 1) for PyTorch.
    Std,
    /// Variance: population (ddof = 0) for numpy, unbiased (N − 1) for PyTorch.
    Variance,
    /// Sum of the elements.
    Sum,
    /// Product of the elements.
    Prod,
    /// The 1-norm: numpy `np.linalg.norm(x, 1)` (a *matrix* norm for 2-d input: the largest
    /// absolute column sum), or the flattened vector norm `Σ|x|` for framework hooks.
    L1,
    /// The 2-norm: numpy `np.linalg.norm(x, 2)` (for 2-d input the *spectral* norm: the
    /// largest singular value), or the flattened vector norm `sqrt(Σx²)` for framework hooks.
    L2,
}

impl Reduction {
    /// Every reduction, in a stable order.
    pub const ALL: [Reduction; 10] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Median,
        Reduction::Mean,
        Reduction::Std,
        Reduction::Variance,
        Reduction::Sum,
        Reduction::Prod,
        Reduction::L1,
        Reduction::L2,
    ];

    /// The nine reductions smdebug's `ReductionConfig` accepts (`median` is not one of them).
    pub const SMDEBUG: [Reduction; 9] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Mean,
        Reduction::Std,
        Reduction::Variance,
        Reduction::Sum,
        Reduction::Prod,
        Reduction::L1,
        Reduction::L2,
    ];

    /// The name smdebug uses (`"min"`, `"variance"`, `"l2"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Min => "min",
            Reduction::Max => "max",
            Reduction::Median => "median",
            Reduction::Mean => "mean",
            Reduction::Std => "std",
            Reduction::Variance => "variance",
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
            Reduction::L1 => "l1",
            Reduction::L2 => "l2",
        }
    }

    /// True for the norms `l1` and `l2` (smdebug's `norms`, as opposed to `reductions`).
    pub fn is_norm(self) -> bool {
        matches!(self, Reduction::L1 | Reduction::L2)
    }
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A reduction name that is not one of [`Reduction::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid reduction type {name:?}")]
pub struct ParseReductionError {
    /// The text that was given.
    pub name: String,
}

impl FromStr for Reduction {
    type Err = ParseReductionError;

    /// Parses a plain name (`"min"`, `"l2"`); see [`ReductionRequest`] for `abs_` names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reduction::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| ParseReductionError { name: s.to_owned() })
    }
}

/// One requested reduction: an operation, on the values or on their absolute values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReductionRequest {
    /// The operation.
    pub reduction: Reduction,
    /// Whether it applies to `abs(x)` (smdebug's `abs_reductions` / `abs_norms`).
    pub abs: bool,
}

impl ReductionRequest {
    /// A request for `reduction` of `x` (`abs = false`) or of `abs(x)`.
    pub fn new(reduction: Reduction, abs: bool) -> Self {
        ReductionRequest { reduction, abs }
    }

    /// The name smdebug gives it in a reduction tensor name: `"min"`, `"abs_l2"`, ….
    pub fn name(&self) -> String {
        if self.abs {
            format!("abs_{}", self.reduction.name())
        } else {
            self.reduction.name().to_owned()
        }
    }

    /// All 20 requests (every [`Reduction`], plain then abs).
    pub fn all() -> Vec<ReductionRequest> {
        [false, true]
            .into_iter()
            .flat_map(|abs| Reduction::ALL.map(|r| ReductionRequest::new(r, abs)))
            .collect()
    }
}

impl fmt::Display for ReductionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.abs {
            f.write_str("abs_")?;
        }
        f.write_str(self.reduction.name())
    }
}

impl FromStr for ReductionRequest {
    type Err = ParseReductionError;

    /// Parses `"mean"` or `"abs_mean"` (the forms used in reduction tensor names).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (abs, op) = match s.strip_prefix("abs_") {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let reduction = op
            .parse::<Reduction>()
            .map_err(|_| ParseReductionError { name: s.to_owned() })?;
        Ok(ReductionRequest { reduction, abs })
    }
}

/// Whose semantics a reduction follows. The same name means different numbers in different
/// parts of smdebug, so the caller must say which it wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Flavor {
    /// `smdebug.core.reductions.get_numpy_reduction`: used by the Python `Trial` to compute a
    /// reduction on the fly, and by the TensorFlow/XGBoost/numpy writer paths. Result dtypes
    /// as numpy gives them; population std/variance; `l1`/`l2` are `np.linalg.norm(x, ord)`
    /// (matrix norms for 2-d input, an error for 0-d or ≥3-d input).
    #[default]
    Numpy,
    /// What smdebug's PyTorch hook saves (`pytorch/utils.py::get_reduction_of_data` with torch
    /// tensors): unbiased (N − 1) std/variance, `torch.norm(p)` of the *flattened* tensor,
    /// float-only mean/std/variance/norms, integer sums/products in `int64`.
    PyTorch,
    /// What smdebug's MXNet hook saves (`mxnet/utils.py::get_reduction_of_data`):
    /// [`Flavor::Numpy`] in everything but `l1`/`l2`, which are `mx.nd.norm(x, ord)`, the
    /// entrywise norm of the *flattened* array whatever its rank (`Σ|x|` and `sqrt(Σx²)`;
    /// no matrix norms, no error for 0-d or ≥3-d input). `min`, `max`, `mean`, `sum` and
    /// `prod` go through `mx.nd` operators there, which agree with numpy for float
    /// tensors; `std` and `variance` (absent from `mx.nd`) fall back to numpy.
    MXNet,
}
