//! Rules on losses: LossNotDecreasing, Overfit, Overtraining.

use super::Finding;
use crate::error::Result;
use crate::params::{ParamKind, ParamReader, ParamValue};
use crate::util::{
    collection_tensors, has_collection, is_scalar_tensor, regex_tensors, scalar, select, to_f64,
    value_at,
};
use smdebug_config::Mode;
use smdebug_trial::Trial;
use std::collections::{BTreeMap, BTreeSet};

fn scalar_at(trial: &Trial, name: &str, step: i64, mode: Mode) -> Result<Option<f64>> {
    Ok(value_at(trial, name, step, mode)?
        .and_then(|v| to_f64(&v))
        .as_ref()
        .and_then(scalar))
}

fn only_scalars(trial: &Trial, names: impl IntoIterator<Item = String>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for n in names {
        if is_scalar_tensor(trial, &n)? {
            out.push(n);
        }
    }
    Ok(out)
}

/// Loss tensors for Overfit/Overtraining: the regex matches if given, else collection
/// `losses` if present, else every scalar tensor; scalars only.
pub(super) fn loss_tensors(trial: &Trial, regex: &[String]) -> Result<Vec<String>> {
    let names = if !regex.is_empty() {
        regex_tensors(trial, regex)?
    } else if has_collection(trial, "losses") {
        collection_tensors(trial, "losses")?
    } else {
        trial.tensor_names()?
    };
    only_scalars(trial, names)
}

/// A mode name (`TRAIN`, `EVAL`, `PREDICT`, `GLOBAL`, any case); unset or empty: `None`.
impl ParamValue for Option<Mode> {
    const KIND: ParamKind = ParamKind::Str;

    fn read(p: &ParamReader<'_>, name: &str) -> Result<Self> {
        match p.opt_string(name)? {
            Some(m) if !m.trim().is_empty() => m
                .trim()
                .to_ascii_uppercase()
                .parse::<Mode>()
                .map(Some)
                .map_err(|_| p.invalid_value(name, &m, "TRAIN, EVAL, PREDICT or GLOBAL")),
            _ => Ok(None),
        }
    }
}

rule_params! {
    /// Parameters of [`LossNotDecreasing`].
    LossNotDecreasingConfig for "LossNotDecreasing" {
        collection_names: Vec<String> => "collections of loss tensors",
        tensor_regex: Vec<String> => "regexes of loss tensors (scalars only)",
        use_losses_collection: bool = "True" => "also use the tensors of collection `losses`",
        num_steps: i64 = "10"
            => "compare the loss with the newest saved loss at least this many steps back",
        diff_percent: f64 = "0.1" => "minimum percentage by which the loss must decrease",
        increase_threshold_percent: f64 = "5"
            => "maximum percentage by which the loss may increase",
        mode: Option<Mode> = "GLOBAL"
            => "TRAIN, EVAL or GLOBAL; None: the first of EVAL, TRAIN, GLOBAL with data",
        legacy_diff_semantics: bool = "False"
            => "smdebug-rs extension: the 2019 condition, fire iff the loss changed by >= diff_percent percent",
    }
    check |p, c| {
        if c.num_steps <= 0 {
            return Err(p.config_error("num_steps must be positive"));
        }
    }
}

builtin_rule! {
    /// LossNotDecreasing (docs/src/rules.md §7).
    ///
    /// Loss tensors: the selection plus collection `losses` (with `use_losses_collection`),
    /// scalars only; if that yields nothing, every scalar tensor. Per tensor, at series step
    /// `t` (the invoked global step's step in `mode`): `p` = newest saved step `≤ t −
    /// num_steps`; at most one evaluation per `num_steps` steps.
    ///
    /// Condition — reading (b) of docs/src/rules.md, the documented contract since 2020-11: if the loss
    /// went up, fire iff the increase is more than `increase_threshold_percent`; otherwise fire
    /// iff it decreased by less than `diff_percent` (equal always fires). With
    /// `legacy_diff_semantics=True` (an smdebug-rs extension): the 2019 reading, fire iff
    /// `(L_t − L_p)/|L_p|·100 ≥ diff_percent`. `L_p = 0`: an increase is infinite, no change
    /// is 0 %.
    LossNotDecreasing(LossNotDecreasingConfig) {
        last_eval: BTreeMap<String, i64>,
    }
}

impl LossNotDecreasing {
    fn losses(&self, trial: &Trial) -> Result<Vec<String>> {
        let c = &self.config;
        let mut names: BTreeSet<String> =
            if c.collection_names.is_empty() && c.tensor_regex.is_empty() {
                BTreeSet::new()
            } else {
                select(trial, &c.collection_names, &c.tensor_regex, false)?
                    .into_iter()
                    .collect()
            };
        if c.use_losses_collection {
            names.extend(collection_tensors(trial, "losses")?);
        }
        let mut out = only_scalars(trial, names)?;
        if out.is_empty() {
            out = only_scalars(trial, trial.tensor_names()?)?;
        }
        Ok(out)
    }

    fn fires(&self, now: f64, before: f64) -> (bool, String) {
        let c = &self.config;
        let change = if before == 0.0 {
            if now > 0.0 {
                f64::INFINITY
            } else if now == 0.0 {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        } else {
            (now - before) / before.abs() * 100.0
        };
        if c.legacy_diff_semantics {
            let fire = change >= c.diff_percent;
            return (
                fire,
                format!(
                    "loss changed by {change:+.3}% (legacy: fires at >= {}%)",
                    c.diff_percent
                ),
            );
        }
        if now > before {
            (
                change > c.increase_threshold_percent,
                format!(
                    "loss increased by {change:.3}% (allowed {}%)",
                    c.increase_threshold_percent
                ),
            )
        } else {
            let dec = -change;
            (
                now == before || dec < c.diff_percent,
                format!(
                    "loss decreased by only {dec:.3}% (required {}%)",
                    c.diff_percent
                ),
            )
        }
    }

    /// The series the tensor is judged in: `mode`, or the first of EVAL, TRAIN with steps.
    fn series(&self, tensor: &smdebug_trial::Tensor<'_>) -> Result<Mode> {
        if let Some(m) = self.config.mode {
            return Ok(m);
        }
        for m in [Mode::Eval, Mode::Train] {
            if !tensor.steps(m, false)?.is_empty() {
                return Ok(m);
            }
        }
        Ok(Mode::Global)
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let mut finding = None;
        for name in self.losses(trial)? {
            let tensor = trial.tensor(&name)?;
            let mode = self.series(&tensor)?;
            let t = if mode == Mode::Global {
                step
            } else {
                match trial.mode_modestep(step)? {
                    Some((m, ms)) if m == mode => ms,
                    _ => continue,
                }
            };
            let steps = tensor.steps(mode, false)?;
            if steps.binary_search(&t).is_err() {
                continue;
            }
            let limit = t - self.config.num_steps;
            let Some(&p) = steps[..steps.partition_point(|&x| x <= limit)].last() else {
                continue;
            };
            if let Some(&e) = self.last_eval.get(&name) {
                if t < e + self.config.num_steps {
                    continue;
                }
            }
            let (Some(now), Some(before)) = (
                scalar_at(trial, &name, t, mode)?,
                scalar_at(trial, &name, p, mode)?,
            ) else {
                continue;
            };
            self.last_eval.insert(name.clone(), t);
            let (fire, why) = self.fires(now, before);
            if fire && finding.is_none() {
                let why = format!(
                    "{why}: {before} at {} step {p} -> {now} at step {t}",
                    mode.name()
                );
                finding = Some(Finding::on(name, why));
            }
        }
        Ok(finding)
    }
}

/// Pairs of (train series, validation series) for XGBoost-style trials without EVAL steps:
/// `train-<m>` with `validation-<m>` or `eval-<m>`.
fn xgboost_pairs(names: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for n in names {
        if let Some(metric) = n.strip_prefix("train-") {
            for prefix in ["validation-", "eval-"] {
                let v = format!("{prefix}{metric}");
                if names.contains(&v) {
                    out.push((n.clone(), v));
                    break;
                }
            }
        }
    }
    out
}

rule_params! {
    /// Parameters of [`Overfit`].
    OverfitConfig for "Overfit" {
        tensor_regex: Vec<String>
            => "regexes of the loss tensors (default: collection `losses`, else all scalars)",
        start_step: i64 = "0" => "the global step from which to start comparing",
        patience: i64 = "1"
            => "number of consecutive evaluations above the ratio before firing",
        ratio_threshold: f64 = "0.1"
            => "maximum (mean validation loss - mean training loss) / mean training loss",
    }
}

builtin_rule! {
    /// Overfit (docs/src/rules.md §10, logic inferred there).
    ///
    /// With EVAL steps in the trial: at each EVAL global step `s ≥ start_step`, `mean_val` =
    /// mean of the tensor's EVAL values over the current evaluation phase (the run of EVAL
    /// steps up to `s`), `mean_train` = mean of its TRAIN values over the run of TRAIN steps
    /// just before that phase; `r = (mean_val − mean_train) / mean_train`. Without EVAL steps
    /// (XGBoost): `train-<m>` is paired with `validation-<m>` (or `eval-<m>`) at each step.
    /// `r > ratio_threshold` increments a per-tensor counter (else it resets); fire when it
    /// reaches `patience`.
    Overfit(OverfitConfig) {
        counters: BTreeMap<String, i64>,
    }
}

impl Overfit {
    fn judge(&mut self, name: &str, mean_val: f64, mean_train: f64) -> Option<String> {
        if mean_train == 0.0 || !mean_train.is_finite() || !mean_val.is_finite() {
            return None;
        }
        let r = (mean_val - mean_train) / mean_train;
        let counter = self.counters.entry(name.to_owned()).or_insert(0);
        if r > self.config.ratio_threshold {
            *counter += 1;
        } else {
            *counter = 0;
        }
        (*counter >= self.config.patience).then(|| {
            format!(
                "validation loss {mean_val} vs training loss {mean_train}: ratio {r:.4} > {} for {counter} evaluation(s)",
                self.config.ratio_threshold
            )
        })
    }

    /// The current evaluation phase (the run of EVAL steps up to `step`) and the run of
    /// TRAIN steps just before it.
    fn phases(&self, trial: &Trial, step: i64) -> Result<(Vec<i64>, Vec<i64>)> {
        let all: Vec<i64> = trial
            .steps(Mode::Global, false)?
            .into_iter()
            .filter(|&s| s >= self.config.start_step && s <= step)
            .collect();
        let mut i = all.len();
        let mut run = |mode: Mode| -> Result<Vec<i64>> {
            let mut steps = Vec::new();
            while i > 0 && trial.mode(all[i - 1])? == Some(mode) {
                steps.push(all[i - 1]);
                i -= 1;
            }
            Ok(steps)
        };
        let eval_steps = run(Mode::Eval)?;
        let train_steps = run(Mode::Train)?;
        Ok((eval_steps, train_steps))
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        if step < self.config.start_step {
            return Ok(None);
        }
        let names = loss_tensors(trial, &self.config.tensor_regex)?;
        let mut finding = None;
        if trial.modes().contains(&Mode::Eval) {
            if trial.mode(step)? != Some(Mode::Eval) {
                return Ok(None);
            }
            let (eval_steps, train_steps) = self.phases(trial, step)?;
            if train_steps.is_empty() {
                return Ok(None);
            }
            for name in names {
                let mean = |steps: &[i64]| -> Result<Option<f64>> {
                    let mut v = Vec::new();
                    for &s in steps {
                        if let Some(x) = scalar_at(trial, &name, s, Mode::Global)? {
                            v.push(x);
                        }
                    }
                    Ok((!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64))
                };
                let (Some(mv), Some(mt)) = (mean(&eval_steps)?, mean(&train_steps)?) else {
                    continue;
                };
                if let Some(why) = self.judge(&name, mv, mt) {
                    finding.get_or_insert(Finding::on(name, why));
                }
            }
        } else {
            for (train, val) in xgboost_pairs(&names) {
                let (Some(mt), Some(mv)) = (
                    scalar_at(trial, &train, step, Mode::Global)?,
                    scalar_at(trial, &val, step, Mode::Global)?,
                ) else {
                    continue;
                };
                if let Some(why) = self.judge(&val, mv, mt) {
                    finding.get_or_insert(Finding::on(val, why));
                }
            }
        }
        Ok(finding)
    }
}

rule_params! {
    /// Parameters of [`Overtraining`].
    OvertrainingConfig for "Overtraining" {
        patience_train: i64 = "5" => "saved training steps without improvement before firing",
        patience_validation: i64 = "10"
            => "saved validation steps without improvement before firing",
        delta: f64 = "0.01" => "minimum improvement of the loss that counts as a new optimum",
    }
}

builtin_rule! {
    /// Overtraining (docs/src/rules.md §11, early-stopping style, inferred there): per loss tensor
    /// (collection `losses`, else all scalars) and series (TRAIN and EVAL steps; in a trial
    /// without modes, `train-*` tensors are training and `validation-*`/`eval-*` validation
    /// series, others training), the first value sets `best`; a later value `v < best − delta`
    /// becomes the new best and resets the counter, otherwise the counter grows. Fires when a
    /// TRAIN counter reaches `patience_train` or an EVAL counter `patience_validation`.
    Overtraining(OvertrainingConfig) {
        series: BTreeMap<(String, bool), (f64, i64)>,
    }
}

impl Overtraining {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let names = loss_tensors(trial, &[])?;
        let has_modes = trial
            .modes()
            .iter()
            .any(|m| matches!(m, Mode::Train | Mode::Eval));
        let step_validation = match trial.mode(step)? {
            Some(Mode::Train) => Some(false),
            Some(Mode::Eval) => Some(true),
            _ => None,
        };
        let mut finding = None;
        for name in names {
            let validation = if has_modes {
                match step_validation {
                    Some(v) => v,
                    None => continue,
                }
            } else {
                name.starts_with("validation-") || name.starts_with("eval-")
            };
            let Some(v) = scalar_at(trial, &name, step, Mode::Global)? else {
                continue;
            };
            let (best, counter) = self
                .series
                .entry((name.clone(), validation))
                .and_modify(|(best, counter)| {
                    if v < *best - self.config.delta {
                        (*best, *counter) = (v, 0);
                    } else {
                        *counter += 1;
                    }
                })
                .or_insert((v, 0));
            let (best, counter) = (*best, *counter);
            let patience = if validation {
                self.config.patience_validation
            } else {
                self.config.patience_train
            };
            if counter >= patience && finding.is_none() {
                let why = format!(
                    "{} loss has not improved on {best} by more than {} for {counter} saved steps (patience {patience})",
                    if validation { "validation" } else { "training" },
                    self.config.delta
                );
                finding = Some(Finding::on(name, why));
            }
        }
        Ok(finding)
    }
}
