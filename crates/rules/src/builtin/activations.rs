//! Rules on activations and inputs: DeadRelu, SaturatedActivation, CheckInputImages,
//! NLPSequenceRatio.

use super::defaults;
use crate::error::{Result, RuleError};
use crate::params::{ParamKind::*, ParamReader, ParamSpec};
use crate::rule::{Rule, RuleBase};
use crate::util::{f64_at, regex_tensors, select, unit_activity};
use ndarray::Axis;
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Parameters of [`DeadRelu`].
#[derive(Debug, Clone, PartialEq)]
pub struct DeadReluConfig {
    /// Regexes of the ReLU outputs (one tensor per layer).
    pub tensor_regex: Vec<String>,
    /// A unit active on fewer than this percentage of samples is dead.
    pub threshold_inactivity: f64,
    /// Fire when more than this percentage of a layer's units are dead.
    pub threshold_layer: f64,
}

impl DeadReluConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "tensor_regex",
            List,
            Some(".*relu_output"),
            "regexes of the ReLU outputs, one tensor per layer",
        ),
        ParamSpec::new(
            "threshold_inactivity",
            Float,
            Some("1.0"),
            "percentage of samples below which a unit counts as dead",
        ),
        ParamSpec::new(
            "threshold_layer",
            Float,
            Some("50.0"),
            "fires when more than this percentage of a layer's units are dead",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(DeadReluConfig {
            tensor_regex: p.list("tensor_regex")?,
            threshold_inactivity: p.f64("threshold_inactivity")?,
            threshold_layer: p.f64("threshold_layer")?,
        })
    }
}

impl Default for DeadReluConfig {
    fn default() -> Self {
        defaults("DeadRelu", Self::PARAMS, Self::from_params)
    }
}

/// DeadRelu (RULES.md §14): per ReLU output tensor at the step (axis 0 = batch, every
/// position of the other axes a unit; a rank-1 tensor is one unit), a unit's activity is
/// the percentage of samples with output > 0; a unit is dead below `threshold_inactivity`;
/// fires when more than `threshold_layer` percent of a layer's units are dead (strictly).
/// Per step, no accumulation; names containing `gradient` are skipped.
#[derive(Debug)]
pub struct DeadRelu {
    base: RuleBase,
    config: DeadReluConfig,
}

impl DeadRelu {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: DeadReluConfig) -> Self {
        DeadRelu {
            base: RuleBase::new("DeadRelu", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for DeadRelu {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        for name in regex_tensors(&trial, &c.tensor_regex)? {
            if name.contains("gradient") {
                continue;
            }
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            let activity = unit_activity(&a, |x| x > 0.0);
            if activity.is_empty() {
                continue;
            }
            let dead = activity
                .iter()
                .filter(|&&p| p < c.threshold_inactivity)
                .count();
            let pct = 100.0 * dead as f64 / activity.len() as f64;
            if pct > c.threshold_layer {
                self.base.note(
                    Some(&name),
                    format!(
                        "{dead} of {} units ({pct:.1}%) are active on fewer than {}% of samples (threshold_layer {}%)",
                        activity.len(),
                        c.threshold_inactivity,
                        c.threshold_layer
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`SaturatedActivation`].
#[derive(Debug, Clone, PartialEq)]
pub struct SaturatedActivationConfig {
    /// Collections of activation inputs.
    pub collection_names: Vec<String>,
    /// Regexes of activation inputs.
    pub tensor_regex: Vec<String>,
    /// tanh inputs at or below this are saturated.
    pub threshold_tanh_min: f64,
    /// tanh inputs at or above this are saturated.
    pub threshold_tanh_max: f64,
    /// sigmoid inputs at or below this are saturated.
    pub threshold_sigmoid_min: f64,
    /// sigmoid inputs at or above this are saturated.
    pub threshold_sigmoid_max: f64,
    /// A unit active (inside the limits) on fewer than this percentage of samples is
    /// saturated.
    pub threshold_inactivity: f64,
    /// Fire when more than this percentage of a layer's units are saturated.
    pub threshold_layer: f64,
}

fn tuple(p: &ParamReader<'_>, name: &str) -> Result<Option<(f64, f64)>> {
    let Some(raw) = p.opt_string(name)? else {
        return Ok(None);
    };
    let inner = raw
        .trim()
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']']);
    let parts: Vec<&str> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    match parts.as_slice() {
        [a, b] => match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(a), Ok(b)) => Ok(Some((a, b))),
            _ => Err(bad_tuple(p, name, &raw)),
        },
        _ => Err(bad_tuple(p, name, &raw)),
    }
}

fn bad_tuple(p: &ParamReader<'_>, name: &str, raw: &str) -> RuleError {
    RuleError::InvalidValue {
        rule: p.rule().to_owned(),
        parameter: name.to_owned(),
        value: raw.to_owned(),
        expected: "a pair of numbers such as (-9.4999, 9.4999)".into(),
    }
}

impl SaturatedActivationConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "collection_names",
            List,
            None,
            "collections of activation inputs",
        ),
        ParamSpec::new(
            "tensor_regex",
            List,
            Some(".*tanh_input|.*sigmoid_input"),
            "regexes of activation inputs; the name must contain tanh or sigmoid",
        ),
        ParamSpec::new(
            "threshold_tanh_min",
            Float,
            Some("-9.4999"),
            "tanh inputs at or below this are saturated",
        ),
        ParamSpec::new(
            "threshold_tanh_max",
            Float,
            Some("9.4999"),
            "tanh inputs at or above this are saturated",
        ),
        ParamSpec::new(
            "threshold_sigmoid_min",
            Float,
            Some("-23"),
            "sigmoid inputs at or below this are saturated",
        ),
        ParamSpec::new(
            "threshold_sigmoid_max",
            Float,
            Some("16.99999"),
            "sigmoid inputs at or above this are saturated",
        ),
        ParamSpec::new(
            "threshold_inactivity",
            Float,
            Some("1.0"),
            "percentage of samples inside the limits below which a unit is saturated",
        ),
        ParamSpec::new(
            "threshold_layer",
            Float,
            Some("50.0"),
            "fires when more than this percentage of a layer's units are saturated",
        ),
        ParamSpec::new(
            "threshold_tanh",
            Str,
            None,
            "before 2020-11: the pair (min, max) for tanh; wins over the split parameters",
        ),
        ParamSpec::new(
            "threshold_sigmoid",
            Str,
            None,
            "before 2020-11: the pair (min, max) for sigmoid; wins over the split parameters",
        ),
    ];

    /// Reads the parameters (the tuple spellings of 2020 are accepted too).
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let mut c = SaturatedActivationConfig {
            collection_names: p.list("collection_names")?,
            tensor_regex: p.list("tensor_regex")?,
            threshold_tanh_min: p.f64("threshold_tanh_min")?,
            threshold_tanh_max: p.f64("threshold_tanh_max")?,
            threshold_sigmoid_min: p.f64("threshold_sigmoid_min")?,
            threshold_sigmoid_max: p.f64("threshold_sigmoid_max")?,
            threshold_inactivity: p.f64("threshold_inactivity")?,
            threshold_layer: p.f64("threshold_layer")?,
        };
        if let Some((lo, hi)) = tuple(p, "threshold_tanh")? {
            c.threshold_tanh_min = lo;
            c.threshold_tanh_max = hi;
        }
        if let Some((lo, hi)) = tuple(p, "threshold_sigmoid")? {
            c.threshold_sigmoid_min = lo;
            c.threshold_sigmoid_max = hi;
        }
        Ok(c)
    }
}

impl Default for SaturatedActivationConfig {
    fn default() -> Self {
        defaults("SaturatedActivation", Self::PARAMS, Self::from_params)
    }
}

/// SaturatedActivation (RULES.md §15): for each selected tensor whose name contains `tanh`
/// (tanh limits) or `sigmoid` (sigmoid limits) — others are skipped — a unit (as in
/// [`DeadRelu`]) is active on a sample if `min < x < max`; it is saturated if active on
/// fewer than `threshold_inactivity` percent of samples; fires when more than
/// `threshold_layer` percent of units are saturated.
#[derive(Debug)]
pub struct SaturatedActivation {
    base: RuleBase,
    config: SaturatedActivationConfig,
}

impl SaturatedActivation {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: SaturatedActivationConfig) -> Self {
        SaturatedActivation {
            base: RuleBase::new("SaturatedActivation", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for SaturatedActivation {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        for name in select(&trial, &c.collection_names, &c.tensor_regex, false)? {
            let lower = name.to_ascii_lowercase();
            let (lo, hi, kind) = if lower.contains("tanh") {
                (c.threshold_tanh_min, c.threshold_tanh_max, "tanh")
            } else if lower.contains("sigmoid") {
                (c.threshold_sigmoid_min, c.threshold_sigmoid_max, "sigmoid")
            } else {
                continue;
            };
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            let activity = unit_activity(&a, |x| lo < x && x < hi);
            if activity.is_empty() {
                continue;
            }
            let sat = activity
                .iter()
                .filter(|&&p| p < c.threshold_inactivity)
                .count();
            let pct = 100.0 * sat as f64 / activity.len() as f64;
            if pct > c.threshold_layer {
                self.base.note(
                    Some(&name),
                    format!(
                        "{sat} of {} units ({pct:.1}%) are saturated ({kind} input outside ({lo}, {hi}) on more than {}% of samples)",
                        activity.len(),
                        100.0 - c.threshold_inactivity
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`CheckInputImages`].
#[derive(Debug, Clone, PartialEq)]
pub struct CheckInputImagesConfig {
    /// Largest allowed |mean| of a channel.
    pub threshold_mean: f64,
    /// Images to see before deciding.
    pub threshold_samples: i64,
    /// Regex of the input tensors.
    pub regex: String,
    /// Axis of the colour channel.
    pub channel: usize,
}

impl CheckInputImagesConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "threshold_mean",
            Float,
            Some("0.2"),
            "largest allowed |mean| of a channel of the input images",
        ),
        ParamSpec::new(
            "threshold_samples",
            Int,
            Some("500"),
            "number of images to see before deciding",
        ),
        ParamSpec::new(
            "regex",
            Str,
            Some(".*hybridsequential0_input_0"),
            "regex of the input image tensors",
        ),
        ParamSpec::new(
            "channel",
            Int,
            Some("1"),
            "axis of the colour channel (1 = NCHW)",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(CheckInputImagesConfig {
            threshold_mean: p.f64("threshold_mean")?,
            threshold_samples: p.i64("threshold_samples")?,
            regex: p.string("regex")?,
            channel: p.usize("channel")?,
        })
    }
}

impl Default for CheckInputImagesConfig {
    fn default() -> Self {
        defaults("CheckInputImages", Self::PARAMS, Self::from_params)
    }
}

/// CheckInputImages (RULES.md §17): accumulates, over every step seen, per channel (axis
/// `channel`) the sum and count of the input values and the number of images (axis 0).
/// Once at least `threshold_samples` images were seen, fires at a step with input data if
/// some channel's accumulated |mean| exceeds `threshold_mean`. Choice: per channel, not the
/// overall mean (the `channel` parameter would otherwise be pointless). Tensors with too few
/// axes for `channel` are skipped.
#[derive(Debug)]
pub struct CheckInputImages {
    base: RuleBase,
    config: CheckInputImagesConfig,
    channels: BTreeMap<usize, (f64, u64)>,
    images: u64,
}

impl CheckInputImages {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: CheckInputImagesConfig) -> Self {
        CheckInputImages {
            base: RuleBase::new("CheckInputImages", trial, Vec::new()),
            config,
            channels: BTreeMap::new(),
            images: 0,
        }
    }
}

impl Rule for CheckInputImages {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let axis = self.config.channel;
        let mut seen = false;
        for name in regex_tensors(&trial, std::slice::from_ref(&self.config.regex))? {
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            if axis == 0 || axis >= a.ndim() {
                continue;
            }
            seen = true;
            self.images += a.shape()[0] as u64;
            for (ch, sub) in a.axis_iter(Axis(axis)).enumerate() {
                let e = self.channels.entry(ch).or_default();
                e.0 += sub.sum();
                e.1 += sub.len() as u64;
            }
        }
        if !seen || (self.images as i64) < self.config.threshold_samples {
            return Ok(false);
        }
        for (&ch, &(sum, n)) in &self.channels {
            if n == 0 {
                continue;
            }
            let mean = sum / n as f64;
            if mean.abs() > self.config.threshold_mean {
                self.base.note(
                    None,
                    format!(
                        "channel {ch}: mean {mean:.4} over {} images differs from 0 by more than {}",
                        self.images, self.config.threshold_mean
                    ),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Parameters of [`NLPSequenceRatio`].
#[derive(Debug, Clone, PartialEq)]
pub struct NLPSequenceRatioConfig {
    /// Regexes of the token-id tensors.
    pub tensor_regex: Vec<String>,
    /// Token values counted.
    pub token_values: Vec<f64>,
    /// Largest allowed percentage of each token, paired by position.
    pub token_thresholds_percent: Vec<f64>,
}

impl NLPSequenceRatioConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "tensor_regex",
            List,
            Some(".*embedding0_input_0"),
            "regexes of the token-id tensors fed to the embedding",
        ),
        ParamSpec::new(
            "token_values",
            FloatList,
            Some("0"),
            "token values counted, comma-separated",
        ),
        ParamSpec::new(
            "token_thresholds_percent",
            FloatList,
            Some("50"),
            "largest allowed percentage of each token, paired by position",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(NLPSequenceRatioConfig {
            tensor_regex: p.list("tensor_regex")?,
            token_values: p.f64_list("token_values")?,
            token_thresholds_percent: p.f64_list("token_thresholds_percent")?,
        })
    }
}

impl Default for NLPSequenceRatioConfig {
    fn default() -> Self {
        defaults("NLPSequenceRatio", Self::PARAMS, Self::from_params)
    }
}

/// NLPSequenceRatio (RULES.md §18): for each `(token, threshold)` pair (zipped; extra
/// entries of the longer list ignored) and each matching tensor at the step, the
/// percentage of elements equal to the token over the whole tensor; fires above the
/// threshold.
#[derive(Debug)]
pub struct NLPSequenceRatio {
    base: RuleBase,
    config: NLPSequenceRatioConfig,
}

impl NLPSequenceRatio {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: NLPSequenceRatioConfig) -> Self {
        NLPSequenceRatio {
            base: RuleBase::new("NLPSequenceRatio", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for NLPSequenceRatio {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        for name in regex_tensors(&trial, &c.tensor_regex)? {
            let Some(a) = f64_at(&trial, &name, step)? else {
                continue;
            };
            if a.is_empty() {
                continue;
            }
            for (&tok, &thr) in c.token_values.iter().zip(&c.token_thresholds_percent) {
                let pct = 100.0 * a.iter().filter(|&&x| x == tok).count() as f64 / a.len() as f64;
                if pct > thr {
                    self.base.note(
                        Some(&name),
                        format!(
                            "token {tok} makes up {pct:.1}% of the sequences (threshold {thr}%)"
                        ),
                    );
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}
