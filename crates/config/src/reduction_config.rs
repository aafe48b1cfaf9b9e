//! What to save of a tensor: [`ReductionConfig`].

use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, PyValue};
use smdebug_reduce::{Reduction, ReductionRequest};
use std::fmt;

/// Which reductions of a tensor to save, and whether to save the tensor itself and its shape
/// (smdebug's `ReductionConfig`).
///
/// Lists keep order and repetitions, as smdebug's do (they are written back as given).
/// The four lists hold the one reduction type of the workspace, [`Reduction`]:
/// `reductions` and `abs_reductions` take only [`ReductionConfig::ALLOWED_REDUCTIONS`],
/// `norms` and `abs_norms` only [`ReductionConfig::ALLOWED_NORMS`]. The parsers enforce
/// this; a config built in code is checked by [`ReductionConfig::validate`], which the hook
/// calls when it is built.
///
/// ```
/// use smdebug_config::{Reduction, ReductionConfig};
/// let c = ReductionConfig::from_sagemaker_str("min, abs_max,l1_norm,abs_l2_norm").unwrap();
/// assert_eq!(c.reductions, [Reduction::Min]);
/// assert_eq!(c.abs_norms, [Reduction::L2]);
/// assert!(!c.save_raw_tensor);
/// assert_eq!(c.reductions_string(), "min,l1_norm,abs_max,abs_l2_norm");
/// assert_eq!(c.requests().map(|r| r.to_string()).collect::<Vec<_>>(),
///            ["min", "l1", "abs_max", "abs_l2"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReductionConfig {
    /// Reductions of the tensor (only [`ReductionConfig::ALLOWED_REDUCTIONS`]).
    pub reductions: Vec<Reduction>,
    /// Reductions of the absolute value of the tensor (only
    /// [`ReductionConfig::ALLOWED_REDUCTIONS`]).
    pub abs_reductions: Vec<Reduction>,
    /// Norms of the tensor (only [`ReductionConfig::ALLOWED_NORMS`]).
    pub norms: Vec<Reduction>,
    /// Norms of the absolute value of the tensor (only [`ReductionConfig::ALLOWED_NORMS`]).
    pub abs_norms: Vec<Reduction>,
    /// Save the tensor itself too (default false; the hook's default config sets it).
    pub save_raw_tensor: bool,
    /// Save the tensor's shape.
    pub save_shape: bool,
    /// Save a health summary of the tensor (counts of NaN, ±Inf and zeros, the finite range,
    /// optionally an exponent histogram; docs/src/format.md, "Health summaries"). Not an
    /// smdebug option: written to the collections file as an extra key, which smdebug's
    /// `ReductionConfig.from_dict` ignores, and only when not [`HealthSummary::Off`].
    pub health: HealthSummary,
}

/// Whether and how much of a health summary the writer records for each tensor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HealthSummary {
    /// No summary (smdebug's behaviour).
    #[default]
    Off,
    /// Counts and finite range.
    Counts,
    /// Counts, finite range and the exponent histogram.
    Histogram,
}

impl HealthSummary {
    /// The JSON key in a reduction config object.
    pub const KEY: &'static str = "health";

    /// The value's text (`"off"`, `"counts"`, `"histogram"`).
    pub fn name(self) -> &'static str {
        match self {
            HealthSummary::Off => "off",
            HealthSummary::Counts => "counts",
            HealthSummary::Histogram => "histogram",
        }
    }

    /// Parses [`HealthSummary::name`]'s text.
    pub fn from_name(s: &str) -> Option<HealthSummary> {
        [
            HealthSummary::Off,
            HealthSummary::Counts,
            HealthSummary::Histogram,
        ]
        .into_iter()
        .find(|h| h.name() == s)
    }
}

/// Which lists of a [`ReductionConfig`] a name was meant for, and so which names are
/// allowed there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReductionKind {
    /// `reductions` and `abs_reductions`: [`ReductionConfig::ALLOWED_REDUCTIONS`].
    Reduction,
    /// `norms` and `abs_norms`: [`ReductionConfig::ALLOWED_NORMS`].
    Norm,
}

impl ReductionKind {
    /// The reductions allowed in these lists.
    pub fn allowed(self) -> &'static [Reduction] {
        match self {
            ReductionKind::Reduction => &ReductionConfig::ALLOWED_REDUCTIONS,
            ReductionKind::Norm => &ReductionConfig::ALLOWED_NORMS,
        }
    }

    /// Their names, as the error message lists them.
    pub(crate) fn allowed_names(self) -> &'static str {
        match self {
            ReductionKind::Reduction => "min, max, mean, std, variance, sum, prod",
            ReductionKind::Norm => "l1, l2",
        }
    }
}

impl fmt::Display for ReductionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReductionKind::Reduction => "reduction",
            ReductionKind::Norm => "norm",
        })
    }
}

impl ReductionConfig {
    /// smdebug's `ALLOWED_REDUCTIONS`, the only entries of `reductions` and
    /// `abs_reductions`. `median`, although documented by smdebug, is rejected by it and
    /// therefore here.
    pub const ALLOWED_REDUCTIONS: [Reduction; 7] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Mean,
        Reduction::Std,
        Reduction::Variance,
        Reduction::Sum,
        Reduction::Prod,
    ];

    /// smdebug's `ALLOWED_NORMS`, the only entries of `norms` and `abs_norms`.
    pub const ALLOWED_NORMS: [Reduction; 2] = [Reduction::L1, Reduction::L2];

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

    /// What the writer computes, in smdebug's order: `reductions`, `norms`, then
    /// `abs_reductions`, `abs_norms` (repetitions kept; the hook drops them).
    pub fn requests(&self) -> impl Iterator<Item = ReductionRequest> + '_ {
        let plain = self.reductions.iter().chain(&self.norms);
        let abs = self.abs_reductions.iter().chain(&self.abs_norms);
        plain
            .map(|&r| ReductionRequest::new(r, false))
            .chain(abs.map(|&r| ReductionRequest::new(r, true)))
    }

    /// Checks that every list holds only what smdebug accepts there (see
    /// [`ReductionConfig`]); the parsers already guarantee it, a config built in code may
    /// not (e.g. `median`, or `l2` among `reductions`). The error names `path` and the
    /// first entry refused.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        use ReductionKind::{Norm, Reduction as Red};
        let lists: [(&[Reduction], &'static str, ReductionKind); 4] = [
            (&self.reductions, "reductions", Red),
            (&self.norms, "norms", Norm),
            (&self.abs_reductions, "abs_reductions", Red),
            (&self.abs_norms, "abs_norms", Norm),
        ];
        for (list, field, kind) in lists {
            for &r in list {
                allowed(Some(r), r.name(), path, field, kind)?;
            }
        }
        Ok(())
    }

    /// Whether any reduction or norm is asked for.
    pub fn has_reductions(&self) -> bool {
        !(self.reductions.is_empty()
            && self.abs_reductions.is_empty()
            && self.norms.is_empty()
            && self.abs_norms.is_empty())
    }

    /// The JSON object smdebug writes: `save_raw_tensor`, `reductions`, `save_shape`; then
    /// `health` when a summary is asked for (smdebug ignores the key).
    pub fn to_json_value(&self) -> PyValue {
        let mut fields = vec![
            (
                "save_raw_tensor".into(),
                PyValue::Bool(self.save_raw_tensor),
            ),
            ("reductions".into(), PyValue::Str(self.reductions_string())),
            ("save_shape".into(), PyValue::Bool(self.save_shape)),
        ];
        if self.health != HealthSummary::Off {
            fields.push((
                HealthSummary::KEY.into(),
                PyValue::Str(self.health.name().into()),
            ));
        }
        PyValue::Object(fields)
    }

    /// `json.dumps(reduction_config.to_json_dict())`.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    /// Reads the JSON object form (`ReductionConfig.from_dict`): `reductions` is the string
    /// form (default empty), `save_raw_tensor` and `save_shape` must be JSON booleans (default
    /// false), `health` one of [`HealthSummary::name`]'s texts (default off); other keys are
    /// ignored, which is what lets the same function read SageMaker
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
        match v.get(HealthSummary::KEY) {
            None => {}
            Some(PyValue::Str(s)) if HealthSummary::from_name(s).is_some() => {
                c.health = HealthSummary::from_name(s).unwrap_or_default();
            }
            Some(other) => {
                return Err(invalid(
                    crate::save_config::join(path, HealthSummary::KEY),
                    other,
                    "\"off\", \"counts\" or \"histogram\"",
                ))
            }
        }
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

/// An entry of `reductions` or `abs_reductions`, by name.
fn reduction(op: &str, path: &str, field: &'static str) -> Result<Reduction, ConfigError> {
    allowed(op.parse().ok(), op, path, field, ReductionKind::Reduction)
}

/// An entry of `norms` or `abs_norms`, by name.
fn norm(op: &str, path: &str, field: &'static str) -> Result<Reduction, ConfigError> {
    allowed(op.parse().ok(), op, path, field, ReductionKind::Norm)
}

/// `r` if `kind` allows it, else the error naming `op` (the name as given) and the field it
/// was meant for.
fn allowed(
    r: Option<Reduction>,
    op: &str,
    path: &str,
    field: &'static str,
    kind: ReductionKind,
) -> Result<Reduction, ConfigError> {
    match r {
        Some(r) if kind.allowed().contains(&r) => Ok(r),
        _ => Err(ConfigError::InvalidReduction {
            collection: None,
            path: format!("{path} ({field})"),
            kind,
            name: op.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_form_exact_rules() {
        let c =
            ReductionConfig::from_sagemaker_str("abs_mean_x, l2_foo_norm,abs_l1_x_norm,,").unwrap();
        assert_eq!(c.abs_reductions, [Reduction::Mean]);
        assert_eq!(c.norms, [Reduction::L2]);
        assert_eq!(c.abs_norms, [Reduction::L1]);
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
    fn validate_refuses_what_the_parsers_refuse() {
        let ok = ReductionConfig::from_sagemaker_str("min,l1_norm,abs_prod,abs_l2_norm").unwrap();
        ok.validate("x").unwrap();
        let cases = [
            (
                ReductionConfig {
                    reductions: vec![Reduction::Min, Reduction::Median],
                    ..Default::default()
                },
                "reductions",
                "median",
            ),
            (
                ReductionConfig {
                    abs_reductions: vec![Reduction::L2],
                    ..Default::default()
                },
                "abs_reductions",
                "l2",
            ),
            (
                ReductionConfig {
                    norms: vec![Reduction::Mean],
                    ..Default::default()
                },
                "norms",
                "mean",
            ),
            (
                ReductionConfig {
                    abs_norms: vec![Reduction::L1, Reduction::Sum],
                    ..Default::default()
                },
                "abs_norms",
                "sum",
            ),
        ];
        for (c, field, bad) in cases {
            let e = c.validate("hook.reduction_config").unwrap_err();
            let ConfigError::InvalidReduction { path, name, .. } = &e else {
                panic!("{e:?}");
            };
            assert_eq!(path, &format!("hook.reduction_config ({field})"));
            assert_eq!(name, bad);
        }
    }

    #[test]
    fn requests_in_smdebug_order() {
        let c = ReductionConfig::from_sagemaker_str("abs_l1_norm,abs_min,l2_norm,max").unwrap();
        let got: Vec<String> = c.requests().map(|r| r.to_string()).collect();
        assert_eq!(got, ["max", "l2", "abs_min", "abs_l1"]);
        assert_eq!(c.requests().count(), 4);
    }

    #[test]
    fn json_roundtrip_like_python() {
        let c = ReductionConfig {
            reductions: vec![Reduction::Min],
            norms: vec![Reduction::L2],
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

    #[test]
    fn health_key_only_when_on() {
        let mut c = ReductionConfig::raw_only();
        assert!(!c.to_json().contains("health"));
        c.health = HealthSummary::Histogram;
        assert_eq!(
            c.to_json(),
            r#"{"save_raw_tensor": true, "reductions": "", "save_shape": false, "health": "histogram"}"#
        );
        assert_eq!(ReductionConfig::from_json(&c.to_json()).unwrap(), c);
        let e = ReductionConfig::from_json(r#"{"health": "all"}"#).unwrap_err();
        assert!(e.to_string().contains("reduction_config.health"), "{e}");
        assert!(ReductionConfig::from_json(r#"{"health": true}"#).is_err());
    }
}
