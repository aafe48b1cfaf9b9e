//! Rules on updates and optimizer state: UpdateRatio, AdamEpsilon (docs/src/rules.md §25,
//! §26).

use super::Finding;
use crate::error::Result;
use crate::util::{f64_at, first_weight_update, regex_tensors, scalar, update_norms};
use smdebug_trial::Trial;

rule_params! {
    /// Parameters of [`UpdateRatio`].
    UpdateRatioConfig for "UpdateRatio" {
        min_ratio: f64 = "0.0001"
            => "fires when ‖W_t − W_p‖/‖W_p‖ is below this (a decade under CS231n's 1e-3)",
        max_ratio: f64 = "0.01"
            => "fires when ‖W_t − W_p‖/‖W_p‖ is above this (a decade over CS231n's 1e-3)",
        start_step: i64 = "0" => "global steps before this are not judged (learning-rate warm-up)",
        min_ndim: usize = "2"
            => "tensors of fewer dimensions are not judged: the rule of thumb is for weight matrices (norm gains and biases move by the learning rate, not in proportion)",
    }
    check |p, c| {
        if !(c.min_ratio >= 0.0 && c.min_ratio < c.max_ratio) {
            return Err(p.config_error("min_ratio must be >= 0 and below max_ratio"));
        }
    }
}

builtin_rule! {
    /// UpdateRatio (docs/src/rules.md §25): per tensor of collection `weights`, the update
    /// ratio `‖W_t − W_p‖₂ / ‖W_p‖₂` between its saved step `t` and its previous saved step
    /// `p` (TRAIN mode steps when the trial has TRAIN steps, as WeightUpdateRatio), outside
    /// `[min_ratio, max_ratio]`: CS231n's rule of thumb that an update should be about 1e-3
    /// of the weights, with a decade of slack each way. The band is for one update: with
    /// saves `k` steps apart the ratio covers `k` updates. Tensors of fewer than `min_ndim`
    /// dimensions are not judged. Weights with a zero norm, a changed shape or non-finite
    /// values are remarked and skipped.
    UpdateRatio(UpdateRatioConfig)
}

impl UpdateRatio {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        if step < c.start_step {
            return Ok(None);
        }
        let base = &mut self.base;
        let previous = |earlier: &[i64], _| earlier.last().copied();
        first_weight_update(trial, step, previous, |u| {
            if u.now.ndim() < c.min_ndim {
                return Ok(None);
            }
            if u.now.shape() != u.before.shape() {
                let why = format!(
                    "shape changed from {:?} to {:?}: no update ratio",
                    u.before.shape(),
                    u.now.shape()
                );
                base.remark(step, Some(&u.name), why);
                return Ok(None);
            }
            let (diff, norm) = update_norms(&u.now, &u.before);
            if !(diff.is_finite() && norm.is_finite()) || norm == 0.0 {
                let why = format!("‖ΔW‖ = {diff}, ‖W‖ = {norm}: no update ratio");
                base.remark(step, Some(&u.name), why);
                return Ok(None);
            }
            let r = diff / norm;
            if r < c.min_ratio || r > c.max_ratio {
                let why = format!(
                    "update ratio ‖ΔW‖/‖W‖ = {r:e} between steps {} and {} ({}) is outside [{:e}, {:e}]",
                    u.from,
                    u.to,
                    u.mode.name(),
                    c.min_ratio,
                    c.max_ratio
                );
                return Ok(Some(Finding::on(u.name, why)));
            }
            Ok(None)
        })
    }
}

rule_params! {
    /// Parameters of [`AdamEpsilon`].
    AdamEpsilonConfig for "AdamEpsilon" {
        tensor_regex: Vec<String> = "^optimizer/.+/exp_avg_sq$"
            => "regexes of the second-moment tensors; `step`, `beta2` and `eps` are read beside each",
        eps: Option<f64>
            => "the ε to compare with (default: the saved `eps` of each parameter)",
        threshold_percent: f64 = "50"
            => "fires when more than this percentage of a parameter's √v̂ are below ε",
    }
    check |p, c| {
        if !(0.0..=100.0).contains(&c.threshold_percent) {
            return Err(p.config_error("threshold_percent must be in [0, 100]"));
        }
    }
}

builtin_rule! {
    /// AdamEpsilon (docs/src/rules.md §26): Wortsman et al. (2023) §3.4, the update shrinking
    /// once the gradient's root mean square falls to Adam's ε. For each
    /// `optimizer/<P>/exp_avg_sq` at the step, with `optimizer/<P>/step` and
    /// `optimizer/<P>/beta2` (and `optimizer/<P>/eps` unless `eps` is given) beside it:
    /// `√v̂ = √(exp_avg_sq / (1 − beta2^step))`, PyTorch's bias correction; fires when more
    /// than `threshold_percent` percent of the elements have `√v̂ < ε`.
    ///
    /// A parameter whose `step`, `beta2` or `eps` is missing, not a scalar, or out of range
    /// (`step ≥ 1`, `0 < beta2 < 1`, `eps ≥ 0`) is remarked and skipped; negative or
    /// non-finite second moments are left out and remarked. Only the raw second moments
    /// tell a share: saved reductions alone are skipped.
    AdamEpsilon(AdamEpsilonConfig)
}

impl AdamEpsilon {
    fn beside(trial: &Trial, exp_avg_sq: &str, key: &str, step: i64) -> Result<Option<f64>> {
        let Some(prefix) = exp_avg_sq.strip_suffix("exp_avg_sq") else {
            return Ok(None);
        };
        let name = format!("{prefix}{key}");
        if !trial.has_tensor(&name)? {
            return Ok(None);
        }
        Ok(f64_at(trial, &name, step)?.as_ref().and_then(scalar))
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        for name in regex_tensors(trial, &c.tensor_regex)? {
            let Some(v) = f64_at(trial, &name, step)? else {
                continue;
            };
            let t = Self::beside(trial, &name, "step", step)?;
            let beta2 = Self::beside(trial, &name, "beta2", step)?;
            let eps = match c.eps {
                Some(e) => Some(e),
                None => Self::beside(trial, &name, "eps", step)?,
            };
            let (Some(t), Some(beta2), Some(eps)) = (
                t.filter(|&t| t >= 1.0 && t.is_finite()),
                beta2.filter(|&b| b > 0.0 && b < 1.0),
                eps.filter(|&e| e >= 0.0 && e.is_finite()),
            ) else {
                let why = format!(
                    "step {t:?}, beta2 {beta2:?}, eps {eps:?} beside it are missing or out of range: skipped"
                );
                self.base.remark(step, Some(&name), why);
                continue;
            };
            let correction = 1.0 - beta2.powf(t);
            let (mut below, mut judged, mut bad) = (0usize, 0usize, 0usize);
            for &x in v.iter() {
                if !(x.is_finite() && x >= 0.0) {
                    bad += 1;
                    continue;
                }
                judged += 1;
                if (x / correction).sqrt() < eps {
                    below += 1;
                }
            }
            if bad > 0 {
                let why = format!(
                    "{bad} of {} second moments are negative or not finite: left out",
                    v.len()
                );
                self.base.remark(step, Some(&name), why);
            }
            if judged == 0 {
                continue;
            }
            let pct = 100.0 * below as f64 / judged as f64;
            if pct > c.threshold_percent {
                let why = format!(
                    "{below} of {judged} parameters ({pct:.1}%) have √v̂ < ε = {eps:e} (bias-corrected with beta2 {beta2} at step {t}), more than {}%",
                    c.threshold_percent
                );
                return Ok(Some(Finding::on(name, why)));
            }
        }
        Ok(None)
    }
}
