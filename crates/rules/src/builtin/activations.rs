//! Rules on activations and inputs: DeadRelu, SaturatedActivation, CheckInputImages,
//! NLPSequenceRatio.

use super::{first_tensor, Finding};
use crate::error::Result;
use crate::params::{ParamKind, ParamReader, ParamValue};
use crate::rule::RuleBase;
use crate::util::{f64_at, regex_tensors, select, unit_activity};
use ndarray::{ArrayD, Axis};
use smdebug_trial::Trial;
use std::collections::BTreeMap;

/// How a layer's units are judged by DeadRelu and SaturatedActivation.
struct Layer<'a> {
    name: &'a str,
    step: i64,
    /// The layer's input, when its non-finite values were carried into `a` (a framework's
    /// ReLU turns NaN into 0, which looks like a dead unit).
    input: Option<&'a str>,
    /// Below this percentage of active samples a unit counts (as dead or saturated).
    threshold_inactivity: f64,
    /// Above this percentage of counted units the layer fires.
    threshold_layer: f64,
}

impl Layer<'_> {
    /// The number of inactive units and of units judged, when more than `threshold_layer`
    /// percent of them are inactive. Non-finite samples are left out and, with units that
    /// have no finite sample at all, recorded as a remark on `base`: NaN activations are a
    /// sign of divergence (ExplodingTensor's finding), not of dead or saturated units.
    fn judge(
        &self,
        base: &mut RuleBase,
        a: &ArrayD<f64>,
        active: impl Fn(f64) -> bool,
    ) -> Option<(usize, usize, String)> {
        let activity = unit_activity(a, active);
        let mut skipped = String::new();
        if activity.non_finite > 0 {
            let unjudged = activity.units - activity.percent.len();
            let input = match self.input {
                Some(input) => format!(" (here or in the input {input})"),
                None => String::new(),
            };
            skipped = format!(
                "; {} non-finite values{input} of {} left out, {unjudged} of {} units have no finite value",
                activity.non_finite,
                a.len(),
                activity.units
            );
            base.remark(
                self.step,
                Some(self.name),
                format!(
                    "{} of {} values are NaN or infinite{input} and were left out; {unjudged} of {} units have no finite value and were not judged",
                    activity.non_finite,
                    a.len(),
                    activity.units
                ),
            );
        }
        let judged = activity.percent.len();
        if judged == 0 {
            return None;
        }
        let inactive = activity
            .percent
            .iter()
            .filter(|&&p| p < self.threshold_inactivity)
            .count();
        let pct = 100.0 * inactive as f64 / judged as f64;
        (pct > self.threshold_layer).then_some((inactive, judged, skipped))
    }
}

rule_params! {
    /// Parameters of [`DeadRelu`].
    DeadReluConfig for "DeadRelu" {
        tensor_regex: Vec<String> = ".*relu_output"
            => "regexes of the ReLU outputs, one tensor per layer",
        threshold_inactivity: f64 = "1.0"
            => "percentage of samples below which a unit counts as dead",
        threshold_layer: f64 = "50.0"
            => "fires when more than this percentage of a layer's units are dead",
    }
}

builtin_rule! {
    /// DeadRelu (docs/src/rules.md §14): per ReLU output tensor at the step (axis 0 = batch, every
    /// position of the other axes a unit; a rank-1 tensor is one unit), a unit's activity is
    /// the percentage of samples with output > 0; a unit is dead below `threshold_inactivity`;
    /// fires when more than `threshold_layer` percent of a layer's units are dead (strictly).
    /// Per step, no accumulation; names containing `gradient` are skipped.
    ///
    /// NaN and infinite outputs are left out of the activity (a unit without a finite output
    /// is not judged) and recorded as a [`Remark`](crate::Remark): diverged activations are
    /// ExplodingTensor's finding, not dead units. So are outputs whose input is NaN or
    /// infinite, when the layer's input is saved beside it (`…relu_input…` for
    /// `…relu_output…`, same shape): frameworks' ReLU turns a NaN input into 0, which would
    /// otherwise look like a dead unit.
    DeadRelu(DeadReluConfig)
}

impl DeadRelu {
    /// The ReLU's input saved beside its output (`…relu_input…` for `…relu_output…`, as the
    /// hooks name a module's input and output), when it has the output's shape at `step`.
    fn input_of(
        trial: &Trial,
        output: &str,
        step: i64,
        shape: &[usize],
    ) -> Result<Option<(String, ArrayD<f64>)>> {
        let input = output.replacen("relu_output", "relu_input", 1);
        if input == output || !trial.has_tensor(&input)? {
            return Ok(None);
        }
        Ok(f64_at(trial, &input, step)?
            .filter(|a| a.shape() == shape)
            .map(|a| (input, a)))
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let (c, base) = (&self.config, &mut self.base);
        let names = regex_tensors(trial, &c.tensor_regex)?;
        let layers = names.iter().filter(|n| !n.contains("gradient"));
        first_tensor(trial, layers, step, |name, a| {
            // A NaN input comes out of most frameworks' ReLU as 0: judge those samples as
            // non-finite, not as inactive.
            let input = Self::input_of(trial, name, step, a.shape())?;
            let masked;
            let a = match &input {
                Some((_, x)) if x.iter().any(|v| !v.is_finite()) => {
                    let mut m = a.clone();
                    m.zip_mut_with(x, |o, &i| {
                        if !i.is_finite() {
                            *o = f64::NAN;
                        }
                    });
                    masked = m;
                    &masked
                }
                _ => a,
            };
            let layer = Layer {
                name,
                step,
                input: input.as_ref().map(|(n, _)| n.as_str()),
                threshold_inactivity: c.threshold_inactivity,
                threshold_layer: c.threshold_layer,
            };
            Ok(layer.judge(base, a, |x| x > 0.0).map(|(dead, units, skipped)| {
                let pct = 100.0 * dead as f64 / units as f64;
                format!(
                    "{dead} of {units} units ({pct:.1}%) are active on fewer than {}% of samples (threshold_layer {}%){skipped}",
                    c.threshold_inactivity, c.threshold_layer
                )
            }))
        })
    }
}

/// The 2020 spelling of a pair of limits: `"(-9.4999, 9.4999)"`.
impl ParamValue for Option<(f64, f64)> {
    const KIND: ParamKind = ParamKind::Str;

    fn read(p: &ParamReader<'_>, name: &str) -> Result<Self> {
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
        if let [a, b] = parts.as_slice() {
            if let (Ok(a), Ok(b)) = (a.parse::<f64>(), b.parse::<f64>()) {
                return Ok(Some((a, b)));
            }
        }
        Err(p.invalid_value(name, &raw, "a pair of numbers such as (-9.4999, 9.4999)"))
    }
}

rule_params! {
    /// Parameters of [`SaturatedActivation`] (the pair spellings of 2020 are accepted too).
    SaturatedActivationConfig for "SaturatedActivation" {
        collection_names: Vec<String> => "collections of activation inputs",
        tensor_regex: Vec<String> = ".*tanh_input|.*sigmoid_input"
            => "regexes of activation inputs; the name must contain tanh or sigmoid",
        threshold_tanh_min: f64 = "-9.4999" => "tanh inputs at or below this are saturated",
        threshold_tanh_max: f64 = "9.4999" => "tanh inputs at or above this are saturated",
        threshold_sigmoid_min: f64 = "-23" => "sigmoid inputs at or below this are saturated",
        threshold_sigmoid_max: f64 = "16.99999"
            => "sigmoid inputs at or above this are saturated",
        threshold_inactivity: f64 = "1.0"
            => "percentage of samples inside the limits below which a unit is saturated",
        threshold_layer: f64 = "50.0"
            => "fires when more than this percentage of a layer's units are saturated",
        threshold_tanh: Option<(f64, f64)>
            => "before 2020-11: the pair (min, max) for tanh; wins over the split parameters",
        threshold_sigmoid: Option<(f64, f64)>
            => "before 2020-11: the pair (min, max) for sigmoid; wins over the split parameters",
    }
    check |_p, c| {
        if let Some((lo, hi)) = c.threshold_tanh {
            (c.threshold_tanh_min, c.threshold_tanh_max) = (lo, hi);
        }
        if let Some((lo, hi)) = c.threshold_sigmoid {
            (c.threshold_sigmoid_min, c.threshold_sigmoid_max) = (lo, hi);
        }
    }
}

builtin_rule! {
    /// SaturatedActivation (docs/src/rules.md §15): for each selected tensor whose name contains `tanh`
    /// (tanh limits) or `sigmoid` (sigmoid limits) — others are skipped — a unit (as in
    /// [`DeadRelu`]) is active on a sample if `min < x < max`; it is saturated if active on
    /// fewer than `threshold_inactivity` percent of samples; fires when more than
    /// `threshold_layer` percent of units are saturated. Non-finite inputs are left out and
    /// remarked, as in [`DeadRelu`].
    SaturatedActivation(SaturatedActivationConfig)
}

impl SaturatedActivation {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let (c, base) = (&self.config, &mut self.base);
        let limits = |name: &str| {
            let lower = name.to_ascii_lowercase();
            if lower.contains("tanh") {
                Some((c.threshold_tanh_min, c.threshold_tanh_max, "tanh"))
            } else if lower.contains("sigmoid") {
                Some((c.threshold_sigmoid_min, c.threshold_sigmoid_max, "sigmoid"))
            } else {
                None
            }
        };
        let names = select(trial, &c.collection_names, &c.tensor_regex, false)?;
        let layers = names.iter().filter(|n| limits(n).is_some());
        first_tensor(trial, layers, step, |name, a| {
            let Some((lo, hi, kind)) = limits(name) else {
                return Ok(None);
            };
            let layer = Layer {
                name,
                step,
                input: None,
                threshold_inactivity: c.threshold_inactivity,
                threshold_layer: c.threshold_layer,
            };
            let judged = layer.judge(base, a, |x| lo < x && x < hi);
            Ok(judged.map(|(sat, units, skipped)| {
                let pct = 100.0 * sat as f64 / units as f64;
                format!(
                    "{sat} of {units} units ({pct:.1}%) are saturated ({kind} input outside ({lo}, {hi}) on more than {}% of samples){skipped}",
                    100.0 - c.threshold_inactivity
                )
            }))
        })
    }
}

rule_params! {
    /// Parameters of [`CheckInputImages`].
    CheckInputImagesConfig for "CheckInputImages" {
        threshold_mean: f64 = "0.2"
            => "largest allowed |mean| of a channel of the input images",
        threshold_samples: i64 = "500" => "number of images to see before deciding",
        regex: String = ".*hybridsequential0_input_0" => "regex of the input image tensors",
        channel: usize = "1" => "axis of the colour channel (1 = NCHW)",
    }
}

builtin_rule! {
    /// CheckInputImages (docs/src/rules.md §17): accumulates, over every step seen, per channel (axis
    /// `channel`) the sum and count of the input values and the number of images (axis 0).
    /// Once at least `threshold_samples` images were seen, fires at a step with input data if
    /// some channel's accumulated |mean| exceeds `threshold_mean`. Choice: per channel, not the
    /// overall mean (the `channel` parameter would otherwise be pointless). Tensors with too few
    /// axes for `channel` are skipped.
    CheckInputImages(CheckInputImagesConfig) {
        channels: BTreeMap<usize, (f64, u64)>,
        images: u64,
    }
}

impl CheckInputImages {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let axis = c.channel;
        let mut seen = false;
        for name in regex_tensors(trial, std::slice::from_ref(&c.regex))? {
            let Some(a) = f64_at(trial, &name, step)? else {
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
        if !seen || (self.images as i64) < c.threshold_samples {
            return Ok(None);
        }
        let off = self
            .channels
            .iter()
            .filter(|(_, &(_, n))| n > 0)
            .map(|(&ch, &(sum, n))| (ch, sum / n as f64))
            .find(|(_, mean)| mean.abs() > c.threshold_mean);
        Ok(off.map(|(ch, mean)| {
            Finding::general(format!(
                "channel {ch}: mean {mean:.4} over {} images differs from 0 by more than {}",
                self.images, c.threshold_mean
            ))
        }))
    }
}

rule_params! {
    /// Parameters of [`NLPSequenceRatio`].
    NLPSequenceRatioConfig for "NLPSequenceRatio" {
        tensor_regex: Vec<String> = ".*embedding0_input_0"
            => "regexes of the token-id tensors fed to the embedding",
        token_values: Vec<f64> = "0" => "token values counted, comma-separated",
        token_thresholds_percent: Vec<f64> = "50"
            => "largest allowed percentage of each token, paired by position",
    }
}

builtin_rule! {
    /// NLPSequenceRatio (docs/src/rules.md §18): for each `(token, threshold)` pair (zipped; extra
    /// entries of the longer list ignored) and each matching tensor at the step, the
    /// percentage of elements equal to the token over the whole tensor; fires above the
    /// threshold.
    NLPSequenceRatio(NLPSequenceRatioConfig)
}

impl NLPSequenceRatio {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let names = regex_tensors(trial, &c.tensor_regex)?;
        first_tensor(trial, &names, step, |_, a| {
            if a.is_empty() {
                return Ok(None);
            }
            let tokens = c.token_values.iter().zip(&c.token_thresholds_percent);
            Ok(tokens
                .map(|(&tok, &thr)| {
                    let n = a.iter().filter(|&&x| x == tok).count();
                    (tok, thr, 100.0 * n as f64 / a.len() as f64)
                })
                .find(|&(_, thr, pct)| pct > thr)
                .map(|(tok, thr, pct)| {
                    format!("token {tok} makes up {pct:.1}% of the sequences (threshold {thr}%)")
                }))
        })
    }
}
