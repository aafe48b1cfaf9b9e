//! [`Framework`]: every way the frameworks smdebug supports differ from one another, in one
//! place — their names, default collections, always-saved collections, save interval and
//! how their hooks store reductions.

use crate::collection::keys;
use smdebug_reduce::Flavor;
use std::fmt;
use std::str::FromStr;

/// A framework whose hook smdebug-rs writes as the original's does. Each arm owns its
/// names ([`FromStr`], [`Framework::name`]), its default collections and their regexes,
/// the collections always saved, the default save interval, and the shape and semantics of
/// the reductions its hook stores. Adding a framework starts here (docs/src/python.md,
/// "Adding a framework").
///
/// ```
/// use smdebug_config::{Framework, ReductionShape};
/// use smdebug_reduce::Flavor;
///
/// let fw: Framework = "torch".parse().unwrap();
/// assert_eq!(fw, Framework::PyTorch);
/// assert_eq!(fw.to_string(), "pytorch");
/// assert_eq!(fw.reduction_shape(), ReductionShape::Scalar);
/// let mx: Framework = "MXNet".parse().unwrap();
/// assert_eq!(mx.reduction_flavor(), Flavor::MXNet);
/// let err = "keras".parse::<Framework>().unwrap_err();
/// assert!(err.to_string().contains("numpy, pytorch, torch, mxnet"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    /// PyTorch (`"pytorch"`, `"torch"`).
    PyTorch,
    /// MXNet (`"mxnet"`): its hook reduces with `mx.nd` operators, so `l1`/`l2` are norms
    /// of the flattened tensor.
    MXNet,
    /// The original's numpy path (`"numpy"`): MXNet's collections, reductions as
    /// `np.linalg.norm` computes them (matrix norms for 2-D arrays).
    Numpy,
    /// TensorFlow in graph mode (TF1 / TF2 non-eager, `"tensorflow"`): biases regex `bias`.
    TensorFlow,
    /// TensorFlow 2 executing eagerly (`"tensorflow2"`, `"tf2"`): biases regex
    /// `^(?!gradient).*bias`.
    TensorFlow2Eager,
    /// XGBoost (`"xgboost"`).
    XGBoost,
}

/// The shape of a saved reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReductionShape {
    /// 0-d, as the PyTorch and TensorFlow hooks save them (a 0-d framework tensor).
    Scalar,
    /// Shape `[1]`, as smdebug's MXNet hook (an `mx.nd` result) and numpy path (a numpy
    /// scalar made an array) store them.
    OneElement,
}

/// A framework name that no [`Framework`] answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("framework {name:?}: expected one of {}", Framework::accepted_names().join(", "))]
pub struct ParseFrameworkError {
    /// The name given.
    pub name: String,
}

impl Framework {
    /// Every framework, in the order their names are listed.
    pub const ALL: [Framework; 6] = [
        Framework::Numpy,
        Framework::PyTorch,
        Framework::MXNet,
        Framework::TensorFlow,
        Framework::TensorFlow2Eager,
        Framework::XGBoost,
    ];

    /// The names this framework answers to (compared without regard to ASCII case); the
    /// first is its own ([`Framework::name`]), the others aliases callers of the Python
    /// package use.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Framework::PyTorch => &["pytorch", "torch"],
            Framework::MXNet => &["mxnet"],
            Framework::Numpy => &["numpy"],
            Framework::TensorFlow => &["tensorflow"],
            Framework::TensorFlow2Eager => &["tensorflow2", "tf2"],
            Framework::XGBoost => &["xgboost"],
        }
    }

    /// The framework's own name (`"pytorch"`, `"mxnet"`, …), as [`fmt::Display`] prints it.
    pub fn name(self) -> &'static str {
        self.names()[0]
    }

    /// Every accepted name, aliases included, in [`Framework::ALL`]'s order.
    pub fn accepted_names() -> Vec<&'static str> {
        Self::ALL.iter().flat_map(|f| f.names()).copied().collect()
    }

    /// The default collections and their regexes, in the order this crate creates them.
    /// (Python iterates a `set`, so its order changes from run to run.)
    pub fn default_collections(self) -> Vec<(&'static str, Vec<&'static str>)> {
        use keys::*;
        const PT_WEIGHTS: &str = "^(?!gradient).*weight";
        const PT_BIASES: &str = "^(?!gradient).*bias";
        let gluon_like = |loss| {
            vec![
                (ALL, vec![]),
                (DEFAULT, vec![]),
                (WEIGHTS, vec![PT_WEIGHTS]),
                (BIASES, vec![PT_BIASES]),
                (GRADIENTS, vec!["^gradient"]),
                (LOSSES, vec![loss]),
            ]
        };
        let tensorflow = |bias| {
            vec![
                (ALL, vec![]),
                (DEFAULT, vec![]),
                (WEIGHTS, vec![]),
                (BIASES, vec![bias]),
                (GRADIENTS, vec![]),
                (LOSSES, vec![]),
                (METRICS, vec![]),
                (INPUTS, vec![]),
                (OUTPUTS, vec![]),
                (LAYERS, vec![]),
                (SM_METRICS, vec![]),
                (OPTIMIZER_VARIABLES, vec![]),
            ]
        };
        match self {
            Framework::PyTorch => gluon_like("[Ll]oss_(?!input).*output"),
            // The original's numpy path has no collections of its own: its callers got
            // MXNet's, and keep them.
            Framework::MXNet | Framework::Numpy => gluon_like(".*loss._(?!input).*output"),
            Framework::TensorFlow => tensorflow("bias"),
            Framework::TensorFlow2Eager => tensorflow(PT_BIASES),
            Framework::XGBoost => vec![
                (ALL, vec![]),
                (DEFAULT, vec![]),
                (HYPERPARAMETERS, vec!["^hyperparameters/.*$"]),
                (PREDICTIONS, vec!["^predictions$"]),
                (LABELS, vec!["^labels$"]),
                (FEATURE_IMPORTANCE, vec!["^feature_importance/.*"]),
                (AVERAGE_SHAP, vec!["^average_shap/.*[^/bias]$"]),
                (FULL_SHAP, vec!["^full_shap/.*[^/bias]$"]),
                (TREES, vec!["^trees/.*"]),
                (METRICS, vec!["^[a-zA-z]+-[a-zA-z0-9]+$"]),
                (LOSSES, vec!["^[a-zA-z]+-.+(?<!(auc|map))$"]),
            ],
        }
    }

    /// The collections always saved (`DEFAULT_INCLUDE_COLLECTIONS`).
    pub fn default_include_collections(self) -> &'static [&'static str] {
        match self {
            Framework::PyTorch | Framework::MXNet | Framework::Numpy => &[keys::LOSSES],
            Framework::TensorFlow | Framework::TensorFlow2Eager => {
                &[keys::METRICS, keys::LOSSES, keys::SM_METRICS]
            }
            Framework::XGBoost => &[keys::METRICS],
        }
    }

    /// The save interval when the hook gets no save config (XGBoost 10, others 500).
    pub fn default_save_interval(self) -> i64 {
        match self {
            Framework::XGBoost => 10,
            _ => crate::DEFAULT_SAVE_INTERVAL,
        }
    }

    /// The shape the framework's hook gives a saved reduction: 0-d where the hook reduces
    /// framework tensors to 0-d tensors (PyTorch, TensorFlow), `[1]` where it stores an
    /// `mx.nd` result or a numpy scalar made an array.
    pub fn reduction_shape(self) -> ReductionShape {
        match self {
            Framework::PyTorch | Framework::TensorFlow | Framework::TensorFlow2Eager => {
                ReductionShape::Scalar
            }
            Framework::MXNet | Framework::Numpy | Framework::XGBoost => ReductionShape::OneElement,
        }
    }

    /// Whose semantics the framework's hook reduces with. This crate already depends on
    /// smdebug-reduce (for `Reduction`, see the crate docs), so the arm names the kernels'
    /// own [`Flavor`] rather than a mirror of it the hook would have to map.
    pub fn reduction_flavor(self) -> Flavor {
        match self {
            Framework::PyTorch => Flavor::PyTorch,
            Framework::MXNet => Flavor::MXNet,
            // TensorFlow's hooks reduce with numpy too (`get_numpy_reduction` of the values
            // they fetched), as do XGBoost's and the numpy path.
            Framework::Numpy
            | Framework::TensorFlow
            | Framework::TensorFlow2Eager
            | Framework::XGBoost => Flavor::Numpy,
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Framework {
    type Err = ParseFrameworkError;

    /// Any of [`Framework::names`], in any ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.names().iter().any(|n| n.eq_ignore_ascii_case(s)))
            .ok_or_else(|| ParseFrameworkError { name: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_framework() {
        for f in Framework::ALL {
            for n in f.names() {
                assert_eq!(n.parse::<Framework>(), Ok(f));
                assert_eq!(n.to_ascii_uppercase().parse::<Framework>(), Ok(f));
            }
            assert_eq!(f.to_string().parse::<Framework>(), Ok(f));
        }
        assert_eq!(
            Framework::accepted_names(),
            [
                "numpy",
                "pytorch",
                "torch",
                "mxnet",
                "tensorflow",
                "tensorflow2",
                "tf2",
                "xgboost"
            ]
        );
    }

    #[test]
    fn an_unknown_name_is_a_typed_error_listing_the_names() {
        let e = "jax".parse::<Framework>().unwrap_err();
        assert_eq!(e.name, "jax");
        assert_eq!(
            e.to_string(),
            "framework \"jax\": expected one of numpy, pytorch, torch, mxnet, tensorflow, \
             tensorflow2, tf2, xgboost"
        );
        assert!(" pytorch".parse::<Framework>().is_err());
    }

    /// The numpy path and MXNet share everything but the norms, which is why they are two
    /// arms.
    #[test]
    fn numpy_and_mxnet_differ_only_in_their_reductions() {
        let (np, mx) = (Framework::Numpy, Framework::MXNet);
        assert_eq!(np.default_collections(), mx.default_collections());
        assert_eq!(
            np.default_include_collections(),
            mx.default_include_collections()
        );
        assert_eq!(np.default_save_interval(), mx.default_save_interval());
        assert_eq!(np.reduction_shape(), mx.reduction_shape());
        assert_eq!(np.reduction_flavor(), Flavor::Numpy);
        assert_eq!(mx.reduction_flavor(), Flavor::MXNet);
    }
}
