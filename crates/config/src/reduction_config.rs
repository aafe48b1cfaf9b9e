//! What to save of a tensor: [`ReductionConfig`].

use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, PyValue};
use std::fmt;
use std::str::FromStr;

/// A reduction smdebug accepts (`ALLOWED_REDUCTIONS`). `median`, although documented, is
/// rejected by smdebug and therefore here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// `min`
    Min,
    /// `max`
    Max,
    /// `mean`
    Mean,
    /// `std` (population for numpy, unbiased for PyTorch writers)
    Std,
    /// `variance`
    Variance,
    /// `sum`
    Sum,
    /// `prod`
    Prod,
}

/// A norm smdebug accepts (`ALLOWED_NORMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Norm {
    /// `l1`
    L1,
    /// `l2`
    L2,
}

const REDUCTION_NAMES: &str = "min, max, mean, std, variance, sum, prod";
const NORM_NAMES: &str = "l1, l2";

impl Reduction {
    /// All reductions in smdebug's order.
    pub const ALL: [Reduction; 7] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Mean,
        Reduction::Std,
        Reduction::Variance,
        Reduction::Sum,
        Reduction::Prod,
    ];

    /// The name used in configs and in the `smdebug/reductions/<name>/…` tensor names.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Min => "min",
            Reduction::Max => "max",
            Reduction::Mean => "mean",
            Reduction::Std => "std",
            Reduction::Variance => "variance",
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
        }
    }
}

impl Norm {
    /// Both norms.
    pub const ALL: [Norm; 2] = [Norm::L1, Norm::L2];

    /// `"l1"` or `"l2"`.
    pub fn name(self) -> &'static str {
        match self {
            Norm::L1 => "l1",
            Norm::L2 => "l2",
        }
    }
}

/// A name that is not an allowed reduction or norm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reduction or norm {0:?}")]
pub struct UnknownOpError(pub String);

impl FromStr for Reduction {
    type Err = UnknownOpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reduction::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownOpError(s.to_string()))
    }
}

impl FromStr for Norm {
    type Err = UnknownOpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Norm::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownOpError(s.to_string()))
    }
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Norm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which reductions of a tensor to save, and whether to save the tensor itself and its shape
/// (smdebug's `ReductionConfig`).
///
/// Lists keep order and repetitions, as smdebug's do (they are written back as given).
///
/// ```
/// use smdebug_config::{Norm, Reduction, ReductionConfig};
/// let c = ReductionConfig::from_sagemaker_str("min, abs_max,l1_norm,abs_l2_norm").unwrap();
/// assert_eq!(c.reductions, [Reduction::Min]);
/// assert_eq!(c.abs_norms, [Norm::L2]);
/// assert!(!c.save_raw_tensor);
/// assert_eq!(c.reductions_string(), "min,l1_norm,abs_max,abs_l2_norm");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReductionConfig {
    /// Reductions of the tensor.
    pub reductions: Vec<Reduction>,
    /// Reductions of the absolute value of the tensor.
    pub abs_reductions: Vec<Reduction>,
    /// Norms of the tensor.
    pub norms: Vec<Norm>,
    /// Norms of the absolute value of the tensor.
    pub abs_norms: Vec<Norm>,
    /// Save the tensor itself too (default false; the hook's default config sets it).
    pub save_raw_tensor: bool,
    /// Save the tensor's shape.
    pub save_shape: bool,
}

impl ReductionConfig {
    /// The hook's default when no reduction config is given: the raw tensor only
    /// (`ReductionConfig(save_raw_tensor=True)`).
    pub fn raw_only() -> Self {
        ReductionConfig {
            save_raw_tensor: true,
            ..Self::default()
        }
    }

    /// Parses the comma-separated string form used by SageMaker and by the collections file
    /// (`"min,max,abs_l2_norm"`), with the exact rules of `ReductionConfig.from_dict`: items are
    /// stripped and empty ones skipped; an item starting with `abs_` names its second
    /// `_`-separated piece (an abs norm if it ends with `_norm`); otherwise an item ending with
    /// `_norm` names its first piece as a norm; anything else is a reduction name.
    /// `save_raw_tensor` and `save_shape` are false.
    pub fn from_sagemaker_str(s: &str) -> Result<Self, ConfigError> {
        let mut c = ReductionConfig::default();
        c.add_reductions_str(s, "reductions")?;
        Ok(c)
    }

    fn add_reductions_str(&mut self, s: &str, path: &str) -> Result<(), ConfigError> {
        for item in s.split(',').map(str::trim) {
            if item.is_empty() {
                continue;
            }
            if let Some(rest) = item.strip_prefix("abs_") {
                let op = rest.split('_').next().unwrap_or("");
                if item.ends_with("_norm") {
                    self.abs_norms.push(norm(op, path, "abs_norms")?);
                } else {
                    self.abs_reductions
                        .push(reduction(op, path, "abs_reductions")?);
                }
            } else if item.ends_with("_norm") {
                let op = item.split('_').next().unwrap_or("");
                self.norms.push(norm(op, path, "norms")?);
            } else {
                self.reductions.push(reduction(item, path, "reductions")?);
            }
        }
        Ok(())
    }

    /// The comma-joined string smdebug writes: reductions, then `<n>_norm`, then `abs_<r>`,
    /// then `abs_<n>_norm`, no spaces.
    pub fn reductions_string(&self) -> String {
        let items: Vec<String> = self
            .reductions
            .iter()
            .map(|r| r.name().to_string())
            .chain(self.norms.iter().map(|n| format!("{n}_norm")))
            .chain(self.abs_reductions.iter().map(|r| format!("abs_{r}")))
            .chain(self.abs_norms.iter().map(|n| format!("abs_{n}_norm")))
            .collect();
        items.join(",")
    }

    /// Whether any reduction or norm is asked for.
    pub fn has_reductions(&self) -> bool {
        !(self.reductions.is_empty()
            && self.abs_reductions.is_empty()
            && self.norms.is_empty()
            && self.abs_norms.is_empty())
    }

    /// The JSON object smdebug writes: `save_raw_tensor`, `reductions`, `save_shape`.
    pub fn to_json_value(&self) -> PyValue {
        PyValue::Object(vec![
            (
                "save_raw_tensor".into(),
                PyValue::Bool(self.save_raw_tensor),
            ),
            ("reductions".into(), PyValue::Str(self.reductions_string())),
            ("save_shape".into(), PyValue::Bool(self.save_shape)),
        ])
    }

    /// `json.dumps(reduction_config.to_json_dict())`.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    /// Reads the JSON object form (`ReductionConfig.from_dict`): `reductions` is the string
    /// form (default empty), `save_raw_tensor` and `save_shape` must be JSON booleans (default
    /// false); other keys are ignored, which is what lets the same function read SageMaker
    /// `HookParameters`.
    pub fn from_json_value(v: &PyValue, path: &str) -> Result<Self, ConfigError> {
        let PyValue::Object(_) = v else {
            return Err(invalid(path, v, "an object"));
        };
        let mut c = ReductionConfig::default();
        let flag = |key: &str| -> Result<bool, ConfigError> {
            match v.get(key) {
                None => Ok(false),
                Some(PyValue::Bool(b)) => Ok(*b),
                Some(other) => Err(invalid(
                    crate::save_config::join(path, key),
                    other,
                    "a JSON boolean",
                )),
            }
        };
        c.save_shape = flag("save_shape")?;
        c.save_raw_tensor = flag("save_raw_tensor")?;
        match v.get("reductions") {
            None => {}
            Some(PyValue::Str(s)) => {
                c.add_reductions_str(s, &crate::save_config::join(path, "reductions"))?
            }
            Some(other) => {
                return Err(invalid(
                    crate::save_config::join(path, "reductions"),
                    other,
                    "a comma-separated string",
                ))
            }
        }
        Ok(c)
    }

    /// Parses the JSON text form.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_value(&pyjson::parse(text)?, "reduction_config")
    }
}

fn reduction(op: &str, path: &str, field: &'static str) -> Result<Reduction, ConfigError> {
    op.parse().map_err(|_| ConfigError::InvalidReduction {
        path: format!("{path} ({field})"),
        kind: "reduction",
        value: op.to_string(),
        allowed: REDUCTION_NAMES,
    })
}

fn norm(op: &str, path: &str, field: &'static str) -> Result<Norm, ConfigError> {
    op.parse().map_err(|_| ConfigError::InvalidReduction {
        path: format!("{path} ({field})"),
        kind: "norm",
        value: op.to_string(),
        allowed: NORM_NAMES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_form_exact_rules() {
        let c =
            ReductionConfig::from_sagemaker_str("abs_mean_x, l2_foo_norm,abs_l1_x_norm,,").unwrap();
        assert_eq!(c.abs_reductions, [Reduction::Mean]);
        assert_eq!(c.norms, [Norm::L2]);
        assert_eq!(c.abs_norms, [Norm::L1]);
        for bad in [
            "l1",
            "abs_l1",
            "median",
            "mean_norm",
            "abs_",
            "_norm",
            "Min",
            "abs_median",
        ] {
            let err = ReductionConfig::from_sagemaker_str(bad).unwrap_err();
            assert!(matches!(err, ConfigError::InvalidReduction { .. }), "{bad}");
        }
        let err = ReductionConfig::from_sagemaker_str("min,median").unwrap_err();
        assert!(err.to_string().contains("\"median\""), "{err}");
    }

    #[test]
    fn json_roundtrip_like_python() {
        let c = ReductionConfig {
            reductions: vec![Reduction::Min],
            norms: vec![Norm::L2],
            ..Default::default()
        };
        assert_eq!(
            c.to_json(),
            r#"{"save_raw_tensor": false, "reductions": "min,l2_norm", "save_shape": false}"#
        );
        assert_eq!(ReductionConfig::from_json(&c.to_json()).unwrap(), c);
        for c in [ReductionConfig::default(), ReductionConfig::raw_only()] {
            assert_eq!(ReductionConfig::from_json(&c.to_json()).unwrap(), c);
        }
        assert!(ReductionConfig::from_json(r#"{"save_raw_tensor": "true"}"#).is_err());
        assert!(ReductionConfig::from_json(r#"{"reductions": ["min"]}"#).is_err());
        assert!(ReductionConfig::from_json(r#"{"reductions": null}"#).is_err());
        let d = ReductionConfig::from_json(r#"{"other": 1}"#).unwrap();
        assert_eq!(d, ReductionConfig::default());
    }
}
