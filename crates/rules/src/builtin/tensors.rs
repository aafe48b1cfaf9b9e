//! Rules on any tensors: AllZero, UnchangedTensor, TensorVariance, SimilarAcrossRuns.

use crate::error::{Result, RuleError};
use crate::params::{ParamKind::*, ParamReader, ParamSpec};
use crate::rule::{Rule, RuleBase};
use crate::util::{allclose, f64_at, select, to_f64};
use smdebug_config::Mode;
use smdebug_exceptions::StepState;
use smdebug_trial::Trial;
use std::sync::Arc;

const SELECTION: [ParamSpec; 2] = [
    ParamSpec::new(
        "collection_names",
        List,
        None,
        "collections whose tensors are checked",
    ),
    ParamSpec::new("tensor_regex", List, None, "regexes of tensors to check"),
];

fn require_selection(p: &ParamReader<'_>, c: &[String], r: &[String]) -> Result<()> {
    if c.is_empty() && r.is_empty() {
        return Err(p.config_error("either collection_names or tensor_regex must be given"));
    }
    Ok(())
}

/// Parameters of [`AllZero`].
#[derive(Debug, Clone, PartialEq)]
pub struct AllZeroConfig {
    /// Collections to check.
    pub collection_names: Vec<String>,
    /// Regexes of tensors to check.
    pub tensor_regex: Vec<String>,
    /// Percentage of zero elements at which the rule fires.
    pub threshold: f64,
}

impl AllZeroConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        SELECTION[0],
        SELECTION[1],
        ParamSpec::new(
            "threshold",
            Float,
            Some("100"),
            "percentage of elements that must be zero for the rule to fire",
        ),
    ];

    /// Reads the parameters (one of `collection_names`, `tensor_regex` is required).
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let c = AllZeroConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
            threshold: p.f64("threshold")?,
        };
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
        Ok(c)
    }
}

/// AllZero (RULES.md §5): fires when a selected tensor has at least `threshold` percent
/// zero elements (`≥`; empty tensors are skipped). A selection is required.
#[derive(Debug)]
pub struct AllZero {
    base: RuleBase,
    config: AllZeroConfig,
}

impl AllZero {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: AllZeroConfig) -> Self {
        AllZero {
            base: RuleBase::new("AllZero", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for AllZero {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        for name in select(&trial, &c.collection_names, &c.tensor_regex, false)? {
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            if a.is_empty() {
                continue;
            }
            let z = 100.0 * a.iter().filter(|&&x| x == 0.0).count() as f64 / a.len() as f64;
            if z >= c.threshold {
                let threshold = c.threshold;
                self.base.note(
                    Some(&name),
                    format!("{z:.2}% of the elements are zero (threshold {threshold}%)"),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`UnchangedTensor`].
#[derive(Debug, Clone, PartialEq)]
pub struct UnchangedTensorConfig {
    /// Collections to check.
    pub collection_names: Vec<String>,
    /// Regexes of tensors to check.
    pub tensor_regex: Vec<String>,
    /// Number of saved steps that must be equal.
    pub num_steps: usize,
    /// `allclose` relative tolerance.
    pub rtol: f64,
    /// `allclose` absolute tolerance.
    pub atol: f64,
    /// Whether NaN equals NaN.
    pub equal_nan: bool,
}

impl UnchangedTensorConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        SELECTION[0],
        SELECTION[1],
        ParamSpec::new(
            "num_steps",
            Int,
            Some("3"),
            "number of last saved steps whose values must all be close",
        ),
        ParamSpec::new(
            "rtol",
            Float,
            Some("1e-05"),
            "relative tolerance (numpy.allclose)",
        ),
        ParamSpec::new(
            "atol",
            Float,
            Some("1e-08"),
            "absolute tolerance (numpy.allclose)",
        ),
        ParamSpec::new("equal_nan", Bool, Some("False"), "whether NaN equals NaN"),
    ];

    /// Reads the parameters (one of `collection_names`, `tensor_regex` is required).
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let c = UnchangedTensorConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
            num_steps: p.usize("num_steps")?,
            rtol: p.f64("rtol")?,
            atol: p.f64("atol")?,
            equal_nan: p.bool("equal_nan")?,
        };
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
        if c.num_steps < 2 {
            return Err(p.config_error("num_steps must be at least 2"));
        }
        Ok(c)
    }
}

/// UnchangedTensor (RULES.md §6): fires when a selected tensor that has a value at the
/// step has its last `num_steps` saved values (this step included, not necessarily
/// consecutive steps, history before the invocation range counts) all `allclose` to the
/// value at this step. Choice: each earlier value is compared with the current one.
#[derive(Debug)]
pub struct UnchangedTensor {
    base: RuleBase,
    config: UnchangedTensorConfig,
}

impl UnchangedTensor {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: UnchangedTensorConfig) -> Self {
        UnchangedTensor {
            base: RuleBase::new("UnchangedTensor", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for UnchangedTensor {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        'names: for name in select(&trial, &c.collection_names, &c.tensor_regex, false)? {
            let Some(now) = f64_at(&trial, &name, step)? else {
                continue;
            };
            let prev = trial
                .tensor(&name)?
                .prev_steps(step, Some(c.num_steps), Mode::Global)?;
            if prev.len() < c.num_steps {
                continue;
            }
            for &p in prev.iter().filter(|&&p| p != step) {
                let Some(old) = f64_at(&trial, &name, p)? else {
                    continue 'names;
                };
                if !allclose(&old, &now, c.rtol, c.atol, c.equal_nan) {
                    continue 'names;
                }
            }
            let n = c.num_steps;
            self.base.note(
                Some(&name),
                format!("unchanged over the last {n} saved steps {prev:?}"),
            );
            return Ok(true);
        }
        Ok(false)
    }
}

/// Parameters of [`TensorVariance`].
#[derive(Debug, Clone, PartialEq)]
pub struct TensorVarianceConfig {
    /// Collections to check.
    pub collection_names: Vec<String>,
    /// Regexes of tensors to check.
    pub tensor_regex: Vec<String>,
    /// Fire when the variance is above this.
    pub max_threshold: Option<f64>,
    /// Fire when the variance is below this.
    pub min_threshold: Option<f64>,
}

impl TensorVarianceConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        SELECTION[0],
        SELECTION[1],
        ParamSpec::new(
            "max_threshold",
            Float,
            None,
            "fires when the variance is above this",
        ),
        ParamSpec::new(
            "min_threshold",
            Float,
            None,
            "fires when the variance is below this",
        ),
    ];

    /// Reads the parameters (one of `collection_names`, `tensor_regex` is required).
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let c = TensorVarianceConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
            max_threshold: p.opt_f64("max_threshold")?,
            min_threshold: p.opt_f64("min_threshold")?,
        };
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
        Ok(c)
    }
}

/// TensorVariance (RULES.md §13): the population variance (`numpy.var`, a saved
/// `variance` reduction if there is one) of a selected tensor fires above `max_threshold`
/// or below `min_threshold`; with neither set the rule never fires.
#[derive(Debug)]
pub struct TensorVariance {
    base: RuleBase,
    config: TensorVarianceConfig,
}

impl TensorVariance {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: TensorVarianceConfig) -> Self {
        TensorVariance {
            base: RuleBase::new("TensorVariance", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for TensorVariance {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        if c.max_threshold.is_none() && c.min_threshold.is_none() {
            return Ok(false);
        }
        for name in select(&trial, &c.collection_names, &c.tensor_regex, false)? {
            let t = trial.tensor(&name)?;
            let v = match t.reduction_value(step, "variance", Mode::Global, None, false) {
                Ok(v) => match to_f64(&v).and_then(|a| a.iter().next().copied()) {
                    Some(v) => v,
                    None => continue,
                },
                Err(e) => {
                    let e = RuleError::from(e);
                    if e.is_tensor_unavailable_for_step() {
                        continue;
                    }
                    return Err(e);
                }
            };
            if let Some(max) = c.max_threshold.filter(|&m| v > m) {
                self.base.note(
                    Some(&name),
                    format!("variance {v:e} is above max_threshold {max:e}"),
                );
                return Ok(true);
            }
            if let Some(min) = c.min_threshold.filter(|&m| v < m) {
                self.base.note(
                    Some(&name),
                    format!("variance {v:e} is below min_threshold {min:e}"),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`SimilarAcrossRuns`] (the other trials are given to the constructor).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimilarAcrossRunsConfig {
    /// Collections to compare.
    pub collection_names: Vec<String>,
    /// Regexes of tensors to compare; with neither, all tensors.
    pub tensor_regex: Vec<String>,
}

impl SimilarAcrossRunsConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::required(
            "other_trials",
            List,
            "the other run(s): trial paths, comma-separated",
        ),
        SELECTION[0],
        ParamSpec::new(
            "tensor_regex",
            List,
            None,
            "regexes of tensors to compare; with neither, every tensor is compared",
        ),
    ];

    /// Reads the parameters (the caller opens `other_trials`).
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(SimilarAcrossRunsConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
        })
    }
}

/// SimilarAcrossRuns (RULES.md §3): fires when a selected tensor (selection on the base
/// trial; all tensors when none) differs at the same global step between the base trial
/// and another trial. "Differs" = different shape, or not `numpy.allclose` with its
/// defaults (rtol 1e-5, atol 1e-8) and NaN equal to NaN. Names or steps missing in the
/// other trial are skipped (a live other trial is waited for).
#[derive(Debug)]
pub struct SimilarAcrossRuns {
    base: RuleBase,
    config: SimilarAcrossRunsConfig,
}

impl SimilarAcrossRuns {
    /// The rule comparing `trial` with `others`.
    pub fn new(
        trial: Arc<Trial>,
        others: Vec<Arc<Trial>>,
        config: SimilarAcrossRunsConfig,
    ) -> Self {
        SimilarAcrossRuns {
            base: RuleBase::new("SimilarAcrossRuns", trial, others),
            config,
        }
    }
}

impl Rule for SimilarAcrossRuns {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let others = self.base.other_trials().to_vec();
        let c = &self.config;
        let mut usable = Vec::new();
        for o in &others {
            let state = o.with_refresh(|o| o.has_passed_step(step, Mode::Global))?;
            match state {
                StepState::Available => usable.push(o.clone()),
                StepState::Unavailable => {}
                StepState::NotYetAvailable => match o.wait_for_steps(&[step], Mode::Global) {
                    Ok(()) => usable.push(o.clone()),
                    Err(e) => {
                        let e = RuleError::from(e);
                        if e.analysis().is_none() {
                            return Err(e);
                        }
                    }
                },
            }
            o.set_dynamic_refresh(false);
        }
        for name in select(&trial, &c.collection_names, &c.tensor_regex, true)? {
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            for o in &usable {
                if !o.has_tensor(&name)? {
                    continue;
                }
                let Some(b) = f64_at(o, &name, step)? else {
                    continue;
                };
                if !allclose(&a, &b, 1e-5, 1e-8, true) {
                    let other = o.name().to_owned();
                    let why = if a.shape() != b.shape() {
                        format!(
                            "shape {:?} differs from {:?} in trial {other}",
                            a.shape(),
                            b.shape()
                        )
                    } else {
                        let d = a
                            .iter()
                            .zip(b.iter())
                            .map(|(x, y)| (x - y).abs())
                            .fold(0.0f64, f64::max);
                        format!("differs from trial {other} (max |difference| {d:e})")
                    };
                    self.base.note(Some(&name), why);
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}
