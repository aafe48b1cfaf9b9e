//! Rules on gradients and weights: VanishingGradient, ExplodingTensor, WeightUpdateRatio,
//! PoorWeightInitialization.

use super::defaults;
use crate::error::{Result, RuleError};
use crate::params::{ParamKind::*, ParamReader, ParamSpec};
use crate::rule::{Rule, RuleBase};
use crate::util::{
    collection_tensors, f64_at, percentile_sorted, regex_tensors, scalar, select, to_f64, value_at,
    variance,
};
use smdebug_config::Mode;
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::Arc;

fn mean_abs(trial: &Trial, name: &str, step: i64) -> Result<Option<f64>> {
    let t = trial.tensor(name)?;
    match t.reduction_value(step, "mean", Mode::Global, None, true) {
        Ok(v) => Ok(to_f64(&v).as_ref().and_then(scalar)),
        Err(e) => {
            let e = RuleError::from(e);
            if e.is_tensor_unavailable_for_step() {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// Parameters of [`VanishingGradient`].
#[derive(Debug, Clone, PartialEq)]
pub struct VanishingGradientConfig {
    /// Fire when a gradient's mean absolute value is below this (default 1e-7).
    pub threshold: f64,
}

impl VanishingGradientConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[ParamSpec::new(
        "threshold",
        Float,
        Some("0.0000001"),
        "fires when the mean of the absolute values of a gradient is lower than this",
    )];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(VanishingGradientConfig {
            threshold: p.f64("threshold")?,
        })
    }
}

impl Default for VanishingGradientConfig {
    fn default() -> Self {
        defaults("VanishingGradient", Self::PARAMS, Self::from_params)
    }
}

/// VanishingGradient (RULES.md §1): fires at a step where **any** tensor of collection
/// `gradients` has `mean(|g|) < threshold` (strict). The mean is a saved `(mean, abs)`
/// reduction when there is one, else computed from the raw value. No `gradients`
/// collection → never fires; NaN never fires.
#[derive(Debug)]
pub struct VanishingGradient {
    base: RuleBase,
    config: VanishingGradientConfig,
}

impl VanishingGradient {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: VanishingGradientConfig) -> Self {
        VanishingGradient {
            base: RuleBase::new("VanishingGradient", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for VanishingGradient {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        for name in collection_tensors(&trial, "gradients")? {
            let Some(m) = mean_abs(&trial, &name, step)? else {
                continue;
            };
            if m < self.config.threshold {
                self.base.note(
                    Some(&name),
                    format!(
                        "mean(|g|) = {m:e} is below the threshold {:e}",
                        self.config.threshold
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`ExplodingTensor`].
#[derive(Debug, Clone, PartialEq)]
pub struct ExplodingTensorConfig {
    /// Collections to check.
    pub collection_names: Vec<String>,
    /// Regexes of tensors to check.
    pub tensor_regex: Vec<String>,
    /// Only NaN counts (not ±Inf).
    pub only_nan: bool,
}

impl ExplodingTensorConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "collection_names",
            List,
            None,
            "collections whose tensors are checked",
        ),
        ParamSpec::new(
            "tensor_regex",
            List,
            None,
            "regexes of tensors to check; with neither, every tensor is checked",
        ),
        ParamSpec::new(
            "only_nan",
            Bool,
            Some("False"),
            "True: only NaN fires, not infinity",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(ExplodingTensorConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
            only_nan: p.bool("only_nan")?,
        })
    }
}

impl Default for ExplodingTensorConfig {
    fn default() -> Self {
        defaults("ExplodingTensor", Self::PARAMS, Self::from_params)
    }
}

/// ExplodingTensor (RULES.md §2): fires when a selected tensor (all tensors when no
/// selection is given) has a NaN element, or (unless `only_nan`) an infinite one. Values
/// that cannot be non-finite (integers, bools, strings) are skipped; a tensor with only
/// saved reductions at the step is judged by those.
#[derive(Debug)]
pub struct ExplodingTensor {
    base: RuleBase,
    config: ExplodingTensorConfig,
}

impl ExplodingTensor {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: ExplodingTensorConfig) -> Self {
        ExplodingTensor {
            base: RuleBase::new("ExplodingTensor", trial, Vec::new()),
            config,
        }
    }

    fn bad(&self, x: f64) -> bool {
        x.is_nan() || (!self.config.only_nan && x.is_infinite())
    }
}

impl Rule for ExplodingTensor {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        for name in select(&trial, &c.collection_names, &c.tensor_regex, true)? {
            let values: Vec<f64> = match value_at(&trial, &name, step, Mode::Global)? {
                Some(v) => match to_f64(&v) {
                    Some(a) => a.into_iter().collect(),
                    None => continue,
                },
                None => {
                    let t = trial.tensor(&name)?;
                    // Reductions of an empty tensor are NaN by definition, not a sign of
                    // divergence.
                    if t.shape(step, Mode::Global, None)
                        .is_ok_and(|s| s.iter().product::<u64>() == 0)
                    {
                        continue;
                    }
                    match t.reduction_values(step, Mode::Global, None) {
                        Ok(r) => r
                            .values()
                            .filter_map(|v| to_f64(v))
                            .flat_map(|a| a.into_iter())
                            .collect(),
                        Err(_) => continue,
                    }
                }
            };
            let nan = values.iter().filter(|x| x.is_nan()).count();
            let inf = values.iter().filter(|x| x.is_infinite()).count();
            if values.iter().any(|&x| self.bad(x)) {
                self.base.note(
                    Some(&name),
                    format!(
                        "{nan} NaN and {inf} infinite values among {} elements",
                        values.len()
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`WeightUpdateRatio`].
#[derive(Debug, Clone, PartialEq)]
pub struct WeightUpdateRatioConfig {
    /// Compare with a step at most this many steps back (None: the previous saved step).
    pub num_steps: Option<i64>,
    /// Fire when the ratio exceeds this.
    pub large_threshold: f64,
    /// Fire when the ratio is below this.
    pub small_threshold: f64,
    /// Added to the denominator.
    pub epsilon: f64,
}

impl WeightUpdateRatioConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new("num_steps", Int, None, "compare with the oldest saved step at most this many steps back (default: the previous saved step)"),
        ParamSpec::new("large_threshold", Float, Some("10.0"), "fires when the update ratio is above this"),
        ParamSpec::new("small_threshold", Float, Some("0.00000001"), "fires when the update ratio is below this"),
        ParamSpec::new("epsilon", Float, Some("0.000000001"), "added to the norm of the previous weights"),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let num_steps = p.opt_i64("num_steps")?;
        if num_steps.is_some_and(|n| n <= 0) {
            return Err(p.config_error("num_steps must be positive"));
        }
        Ok(WeightUpdateRatioConfig {
            num_steps,
            large_threshold: p.f64("large_threshold")?,
            small_threshold: p.f64("small_threshold")?,
            epsilon: p.f64("epsilon")?,
        })
    }
}

impl Default for WeightUpdateRatioConfig {
    fn default() -> Self {
        defaults("WeightUpdateRatio", Self::PARAMS, Self::from_params)
    }
}

/// WeightUpdateRatio (RULES.md §4): for each tensor of collection `weights`, the ratio
/// `‖w_s − w_p‖₂ / (‖w_p‖₂ + epsilon)` fires above `large_threshold` or below
/// `small_threshold` (a frozen weight gives 0 and fires).
///
/// Choices: if the trial has TRAIN steps the rule runs only at TRAIN steps and compares
/// TRAIN mode steps; otherwise global steps. The previous step `p` is the tensor's
/// previous saved step, or with `num_steps = n` the **oldest** saved step in `[s − n, s)`.
/// No previous step, or a shape change → no decision.
#[derive(Debug)]
pub struct WeightUpdateRatio {
    base: RuleBase,
    config: WeightUpdateRatioConfig,
}

impl WeightUpdateRatio {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: WeightUpdateRatioConfig) -> Self {
        WeightUpdateRatio {
            base: RuleBase::new("WeightUpdateRatio", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for WeightUpdateRatio {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let (mode, t) = if trial.modes().contains(&Mode::Train) {
            match trial.mode_modestep(step)? {
                Some((Mode::Train, ms)) => (Mode::Train, ms),
                _ => return Ok(false),
            }
        } else {
            (Mode::Global, step)
        };
        for name in collection_tensors(&trial, "weights")? {
            let tensor = trial.tensor(&name)?;
            let steps = tensor.steps(mode, false)?;
            if steps.binary_search(&t).is_err() {
                continue;
            }
            let earlier = &steps[..steps.partition_point(|&x| x < t)];
            let prev = match self.config.num_steps {
                None => earlier.last().copied(),
                Some(n) => earlier.iter().copied().find(|&p| p >= t - n),
            };
            let Some(p) = prev else { continue };
            let (Some(ws), Some(wp)) = (
                value_at(&trial, &name, t, mode)?.and_then(|v| to_f64(&v)),
                value_at(&trial, &name, p, mode)?.and_then(|v| to_f64(&v)),
            ) else {
                continue;
            };
            if ws.shape() != wp.shape() {
                continue;
            }
            let diff = ws
                .iter()
                .zip(wp.iter())
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            let norm = wp.iter().map(|x| x * x).sum::<f64>().sqrt();
            let r = diff / (norm + self.config.epsilon);
            let c = &self.config;
            if r > c.large_threshold || r < c.small_threshold {
                self.base.note(
                    Some(&name),
                    format!(
                        "update ratio {r:e} between steps {p} and {t} ({}) is outside [{:e}, {:e}]",
                        mode.name(),
                        c.small_threshold,
                        c.large_threshold
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`PoorWeightInitialization`].
#[derive(Debug, Clone, PartialEq)]
pub struct PoorWeightInitializationConfig {
    /// Regexes of the activation inputs (one tensor per layer).
    pub activation_inputs_regex: Vec<String>,
    /// Largest allowed ratio of the largest to the smallest layer variance.
    pub threshold: f64,
    /// Smallest allowed spread between the 5th and 95th gradient percentiles.
    pub distribution_range: f64,
    /// Saved steps without a new lowest loss before firing.
    pub patience: i64,
    /// Only global steps below this are analysed.
    pub steps: i64,
}

impl PoorWeightInitializationConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "activation_inputs_regex",
            List,
            Some(".*relu_input"),
            "regexes of the activation inputs, one tensor per layer",
        ),
        ParamSpec::new(
            "threshold",
            Float,
            Some("10.0"),
            "fires when max/min variance of the activation inputs exceeds this",
        ),
        ParamSpec::new(
            "distribution_range",
            Float,
            Some("0.001"),
            "fires when a gradient's 95th minus 5th percentile is below this",
        ),
        ParamSpec::new(
            "patience",
            Int,
            Some("5"),
            "fires after this many saved steps without a new lowest loss",
        ),
        ParamSpec::new(
            "steps",
            Int,
            Some("10"),
            "only global steps below this are analysed",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(PoorWeightInitializationConfig {
            activation_inputs_regex: p.list("activation_inputs_regex")?,
            threshold: p.f64("threshold")?,
            distribution_range: p.f64("distribution_range")?,
            patience: p.i64("patience")?,
            steps: p.i64("steps")?,
        })
    }
}

impl Default for PoorWeightInitializationConfig {
    fn default() -> Self {
        defaults("PoorWeightInitialization", Self::PARAMS, Self::from_params)
    }
}

/// PoorWeightInitialization (RULES.md §16), evaluated only at global steps `< steps`.
/// Fires if (a) with ≥ 2 activation-input layers, `max V / min V > threshold` for their
/// population variances (or `min V = 0 < max V`); (b) some tensor of `gradients` has
/// `P95 − P5 < distribution_range` (NumPy linear percentiles); or (c) the lowest value of a
/// scalar `losses` tensor has not improved for `patience` consecutive saved steps.
#[derive(Debug)]
pub struct PoorWeightInitialization {
    base: RuleBase,
    config: PoorWeightInitializationConfig,
    loss_state: BTreeMap<String, (f64, i64)>,
}

impl PoorWeightInitialization {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: PoorWeightInitializationConfig) -> Self {
        PoorWeightInitialization {
            base: RuleBase::new("PoorWeightInitialization", trial, Vec::new()),
            config,
            loss_state: BTreeMap::new(),
        }
    }
}

impl Rule for PoorWeightInitialization {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        if step >= self.config.steps {
            return Ok(false);
        }
        let trial = self.base.base_trial().clone();
        let mut finding: Option<(Option<String>, String)> = None;

        // (a) activation-input variances, one per layer.
        let mut vars = Vec::new();
        for name in regex_tensors(&trial, &self.config.activation_inputs_regex)? {
            if let Some(a) = f64_at(&trial, &name, step)? {
                if !a.is_empty() {
                    vars.push((variance(&a), name));
                }
            }
        }
        if vars.len() >= 2 {
            let (min_v, min_n) = vars
                .iter()
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .cloned()
                .unwrap_or_default();
            let (max_v, max_n) = vars
                .iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .cloned()
                .unwrap_or_default();
            let fires = (min_v > 0.0 && max_v / min_v > self.config.threshold)
                || (min_v == 0.0 && max_v > 0.0);
            if fires {
                finding = Some((
                    Some(max_n.clone()),
                    format!(
                        "activation-input variance ratio {max_n} ({max_v:e}) / {min_n} ({min_v:e}) exceeds {}",
                        self.config.threshold
                    ),
                ));
            }
        }

        // (b) gradient spread.
        if finding.is_none() {
            for name in collection_tensors(&trial, "gradients")? {
                let Some(a) = f64_at(&trial, &name, step)? else {
                    continue;
                };
                let mut sorted: Vec<f64> = a.iter().copied().filter(|x| !x.is_nan()).collect();
                if sorted.is_empty() {
                    continue;
                }
                sorted.sort_by(f64::total_cmp);
                let q = percentile_sorted(&sorted, 95.0) - percentile_sorted(&sorted, 5.0);
                if q < self.config.distribution_range {
                    finding = Some((
                        Some(name.clone()),
                        format!(
                            "gradient P95 - P5 = {q:e} is below distribution_range {:e}",
                            self.config.distribution_range
                        ),
                    ));
                    break;
                }
            }
        }

        // (c) loss not improving; updated every step so the counters stay right.
        for name in collection_tensors(&trial, "losses")? {
            let Some(v) = f64_at(&trial, &name, step)?.as_ref().and_then(scalar) else {
                continue;
            };
            let entry = self.loss_state.entry(name.clone()).or_insert((v, -1));
            if entry.1 < 0 || v < entry.0 {
                *entry = (v, 0);
            } else {
                entry.1 += 1;
            }
            if entry.1 >= self.config.patience && finding.is_none() {
                finding = Some((
                    Some(name.clone()),
                    format!(
                        "loss has not gone below {} for {} saved steps (patience {})",
                        entry.0, entry.1, self.config.patience
                    ),
                ));
            }
        }

        match finding {
            Some((tensor, message)) => {
                self.base.note(tensor.as_deref(), message);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
