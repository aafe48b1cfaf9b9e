//! Rules on gradients and weights: VanishingGradient, ExplodingTensor, WeightUpdateRatio,
//! PoorWeightInitialization.

use super::{first_tensor, Finding};
use crate::error::{Result, RuleError};
use crate::util::{
    collection_tensors, f64_at, first_weight_update, percentile_sorted, regex_tensors, scalar,
    select, to_f64, update_norms, value_at, variance,
};
use smdebug_config::Mode;
use smdebug_trial::Trial;
use std::collections::BTreeMap;

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

rule_params! {
    /// Parameters of [`VanishingGradient`].
    VanishingGradientConfig for "VanishingGradient" {
        threshold: f64 = "0.0000001"
            => "fires when the mean of the absolute values of a gradient is lower than this",
    }
}

builtin_rule! {
    /// VanishingGradient (docs/src/rules.md §1): fires at a step where **any** tensor of collection
    /// `gradients` has `mean(|g|) < threshold` (strict). The mean is a saved `(mean, abs)`
    /// reduction when there is one, else computed from the raw value. No `gradients`
    /// collection → never fires; NaN never fires.
    VanishingGradient(VanishingGradientConfig)
}

impl VanishingGradient {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let threshold = self.config.threshold;
        for name in collection_tensors(trial, "gradients")? {
            if let Some(m) = mean_abs(trial, &name, step)?.filter(|&m| m < threshold) {
                let why = format!("mean(|g|) = {m:e} is below the threshold {threshold:e}");
                return Ok(Some(Finding::on(name, why)));
            }
        }
        Ok(None)
    }
}

rule_params! {
    /// Parameters of [`ExplodingTensor`].
    ExplodingTensorConfig for "ExplodingTensor" {
        collection_names: Vec<String> => "collections whose tensors are checked",
        tensor_regex: Vec<String>
            => "regexes of tensors to check; with neither, every tensor is checked",
        only_nan: bool = "False" => "True: only NaN fires, not infinity",
    }
}

builtin_rule! {
    /// ExplodingTensor (docs/src/rules.md §2): fires when a selected tensor (all tensors when no
    /// selection is given) has a NaN element, or (unless `only_nan`) an infinite one. Values
    /// that cannot be non-finite (integers, bools, strings) are skipped; a tensor with only
    /// saved reductions at the step is judged by those.
    ExplodingTensor(ExplodingTensorConfig)
}

impl ExplodingTensor {
    /// The raw value's elements, else (a tensor saved as reductions only) the reductions'.
    fn values(trial: &Trial, name: &str, step: i64) -> Result<Option<Vec<f64>>> {
        if let Some(v) = value_at(trial, name, step, Mode::Global)? {
            // The fresh array's buffer as it is: iterating an n-dimensional array element by
            // element cost 3/4 of this rule's time on the `large` preset.
            return Ok(to_f64(&v).map(|a| {
                if a.is_standard_layout() {
                    let len = a.len();
                    let (mut vec, offset) = a.into_raw_vec_and_offset();
                    vec.drain(..offset.unwrap_or(0));
                    vec.truncate(len);
                    vec
                } else {
                    a.iter().copied().collect()
                }
            }));
        }
        let t = trial.tensor(name)?;
        // Reductions of an empty tensor are NaN by definition, not a sign of divergence.
        if t.shape(step, Mode::Global, None)
            .is_ok_and(|s| s.iter().product::<u64>() == 0)
        {
            return Ok(None);
        }
        Ok(t.reduction_values(step, Mode::Global, None).ok().map(|r| {
            r.values()
                .filter_map(|v| to_f64(v))
                .flat_map(|a| a.into_iter())
                .collect()
        }))
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        for name in select(trial, &c.collection_names, &c.tensor_regex, true)? {
            let Some(values) = Self::values(trial, &name, step)? else {
                continue;
            };
            let nan = values.iter().filter(|x| x.is_nan()).count();
            let inf = values.iter().filter(|x| x.is_infinite()).count();
            if nan > 0 || (!c.only_nan && inf > 0) {
                let n = values.len();
                let why = format!("{nan} NaN and {inf} infinite values among {n} elements");
                return Ok(Some(Finding::on(name, why)));
            }
        }
        Ok(None)
    }
}

rule_params! {
    /// Parameters of [`WeightUpdateRatio`].
    WeightUpdateRatioConfig for "WeightUpdateRatio" {
        num_steps: Option<i64> => "compare with the oldest saved step at most this many steps back (default: the previous saved step)",
        large_threshold: f64 = "10.0" => "fires when the update ratio is above this",
        small_threshold: f64 = "0.00000001" => "fires when the update ratio is below this",
        epsilon: f64 = "0.000000001" => "added to the norm of the previous weights",
    }
    check |p, c| {
        if c.num_steps.is_some_and(|n| n <= 0) {
            return Err(p.config_error("num_steps must be positive"));
        }
    }
}

builtin_rule! {
    /// WeightUpdateRatio (docs/src/rules.md §4): for each tensor of collection `weights`, the ratio
    /// `‖w_s − w_p‖₂ / (‖w_p‖₂ + epsilon)` fires above `large_threshold` or below
    /// `small_threshold` (a frozen weight gives 0 and fires).
    ///
    /// Choices: if the trial has TRAIN steps the rule runs only at TRAIN steps and compares
    /// TRAIN mode steps; otherwise global steps. The previous step `p` is the tensor's
    /// previous saved step, or with `num_steps = n` the **oldest** saved step in `[s − n, s)`.
    /// No previous step, or a shape change → no decision.
    WeightUpdateRatio(WeightUpdateRatioConfig)
}

impl WeightUpdateRatio {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let previous = |earlier: &[i64], t: i64| match c.num_steps {
            None => earlier.last().copied(),
            Some(n) => earlier.iter().copied().find(|&p| p >= t - n),
        };
        first_weight_update(trial, step, previous, |u| {
            if u.now.shape() != u.before.shape() {
                return Ok(None);
            }
            let (diff, norm) = update_norms(&u.now, &u.before);
            let r = diff / (norm + c.epsilon);
            if r > c.large_threshold || r < c.small_threshold {
                let why = format!(
                    "update ratio {r:e} between steps {} and {} ({}) is outside [{:e}, {:e}]",
                    u.from,
                    u.to,
                    u.mode.name(),
                    c.small_threshold,
                    c.large_threshold
                );
                return Ok(Some(Finding::on(u.name, why)));
            }
            Ok(None)
        })
    }
}

rule_params! {
    /// Parameters of [`PoorWeightInitialization`].
    PoorWeightInitializationConfig for "PoorWeightInitialization" {
        activation_inputs_regex: Vec<String> = ".*relu_input"
            => "regexes of the activation inputs, one tensor per layer",
        threshold: f64 = "10.0"
            => "fires when max/min variance of the activation inputs exceeds this",
        distribution_range: f64 = "0.001"
            => "fires when a gradient's 95th minus 5th percentile is below this",
        patience: i64 = "5" => "fires after this many saved steps without a new lowest loss",
        steps: i64 = "10" => "only global steps below this are analysed",
    }
}

builtin_rule! {
    /// PoorWeightInitialization (docs/src/rules.md §16), evaluated only at global steps `< steps`.
    /// Fires if (a) with ≥ 2 activation-input layers, `max V / min V > threshold` for their
    /// population variances (or `min V = 0 < max V`); (b) some tensor of `gradients` has
    /// `P95 − P5 < distribution_range` (NumPy linear percentiles); or (c) the lowest value of a
    /// scalar `losses` tensor has not improved for `patience` consecutive saved steps.
    PoorWeightInitialization(PoorWeightInitializationConfig) {
        loss_state: BTreeMap<String, (f64, i64)>,
    }
}

impl PoorWeightInitialization {
    /// (a): the activation-input variances, one per layer.
    fn variances(&self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let mut vars = Vec::new();
        for name in regex_tensors(trial, &c.activation_inputs_regex)? {
            if let Some(a) = f64_at(trial, &name, step)?.filter(|a| !a.is_empty()) {
                vars.push((variance(&a), name));
            }
        }
        if vars.len() < 2 {
            return Ok(None);
        }
        let by_variance = |a: &&(f64, String), b: &&(f64, String)| a.0.total_cmp(&b.0);
        let (min_v, min_n) = vars.iter().min_by(by_variance).cloned().unwrap_or_default();
        let (max_v, max_n) = vars.iter().max_by(by_variance).cloned().unwrap_or_default();
        let fires = (min_v > 0.0 && max_v / min_v > c.threshold) || (min_v == 0.0 && max_v > 0.0);
        Ok(fires.then(|| {
            let why = format!(
                "activation-input variance ratio {max_n} ({max_v:e}) / {min_n} ({min_v:e}) exceeds {}",
                c.threshold
            );
            Finding::on(max_n, why)
        }))
    }

    /// (b): the spread of each gradient.
    fn gradient_spread(&self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let range = self.config.distribution_range;
        let gradients = collection_tensors(trial, "gradients")?;
        first_tensor(trial, &gradients, step, |_, a| {
            let mut sorted: Vec<f64> = a.iter().copied().filter(|x| !x.is_nan()).collect();
            if sorted.is_empty() {
                return Ok(None);
            }
            sorted.sort_by(f64::total_cmp);
            let q = percentile_sorted(&sorted, 95.0) - percentile_sorted(&sorted, 5.0);
            Ok((q < range).then(|| {
                format!("gradient P95 - P5 = {q:e} is below distribution_range {range:e}")
            }))
        })
    }

    /// (c): the loss not improving; updated every step so the counters stay right.
    fn loss_stalled(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let mut finding = None;
        for name in collection_tensors(trial, "losses")? {
            let Some(v) = f64_at(trial, &name, step)?.as_ref().and_then(scalar) else {
                continue;
            };
            let entry = self.loss_state.entry(name.clone()).or_insert((v, -1));
            if entry.1 < 0 || v < entry.0 {
                *entry = (v, 0);
            } else {
                entry.1 += 1;
            }
            let patience = self.config.patience;
            if entry.1 >= patience && finding.is_none() {
                let why = format!(
                    "loss has not gone below {} for {} saved steps (patience {patience})",
                    entry.0, entry.1
                );
                finding = Some(Finding::on(name, why));
            }
        }
        Ok(finding)
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        if step >= self.config.steps {
            return Ok(None);
        }
        let mut finding = self.variances(trial, step)?;
        if finding.is_none() {
            finding = self.gradient_spread(trial, step)?;
        }
        let stalled = self.loss_stalled(trial, step)?;
        Ok(finding.or(stalled))
    }
}
