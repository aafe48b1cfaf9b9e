//! Rules on any tensors: AllZero, UnchangedTensor, TensorVariance, SimilarAcrossRuns.

use super::{first_tensor, Finding};
use crate::error::{Result, RuleError};
use crate::params::ParamReader;
use crate::util::{allclose, f64_at, select, to_f64};
use smdebug_config::Mode;
use smdebug_exceptions::StepState;
use smdebug_trial::Trial;
use std::sync::Arc;

fn require_selection(p: &ParamReader<'_>, c: &[String], r: &[String]) -> Result<()> {
    if c.is_empty() && r.is_empty() {
        return Err(p.config_error("either collection_names or tensor_regex must be given"));
    }
    Ok(())
}

rule_params! {
    /// Parameters of [`AllZero`] (one of `collection_names`, `tensor_regex` is required).
    AllZeroConfig for "AllZero" no_default {
        collection_names: Vec<String> => "collections whose tensors are checked",
        tensor_regex: Vec<String> => "regexes of tensors to check",
        threshold: f64 = "100"
            => "percentage of elements that must be zero for the rule to fire",
    }
    check |p, c| {
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
    }
}

builtin_rule! {
    /// AllZero (docs/src/rules.md §5): fires when a selected tensor has at least `threshold` percent
    /// zero elements (`≥`; empty tensors are skipped). A selection is required.
    AllZero(AllZeroConfig)
}

impl AllZero {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let names = select(trial, &c.collection_names, &c.tensor_regex, false)?;
        first_tensor(trial, &names, step, |_, a| {
            if a.is_empty() {
                return Ok(None);
            }
            let z = 100.0 * a.iter().filter(|&&x| x == 0.0).count() as f64 / a.len() as f64;
            let threshold = c.threshold;
            Ok((z >= threshold)
                .then(|| format!("{z:.2}% of the elements are zero (threshold {threshold}%)")))
        })
    }
}

rule_params! {
    /// Parameters of [`UnchangedTensor`] (one of `collection_names`, `tensor_regex` is
    /// required).
    UnchangedTensorConfig for "UnchangedTensor" no_default {
        collection_names: Vec<String> => "collections whose tensors are checked",
        tensor_regex: Vec<String> => "regexes of tensors to check",
        num_steps: usize = "3" => "number of last saved steps whose values must all be close",
        rtol: f64 = "1e-05" => "relative tolerance (numpy.allclose)",
        atol: f64 = "1e-08" => "absolute tolerance (numpy.allclose)",
        equal_nan: bool = "False" => "whether NaN equals NaN",
    }
    check |p, c| {
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
        if c.num_steps < 2 {
            return Err(p.config_error("num_steps must be at least 2"));
        }
    }
}

builtin_rule! {
    /// UnchangedTensor (docs/src/rules.md §6): fires when a selected tensor that has a value at the
    /// step has its last `num_steps` saved values (this step included, not necessarily
    /// consecutive steps, history before the invocation range counts) all `allclose` to the
    /// value at this step. Choice: each earlier value is compared with the current one.
    UnchangedTensor(UnchangedTensorConfig)
}

impl UnchangedTensor {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let names = select(trial, &c.collection_names, &c.tensor_regex, false)?;
        first_tensor(trial, &names, step, |name, now| {
            let prev = trial
                .tensor(name)?
                .prev_steps(step, Some(c.num_steps), Mode::Global)?;
            if prev.len() < c.num_steps {
                return Ok(None);
            }
            for &p in prev.iter().filter(|&&p| p != step) {
                match f64_at(trial, name, p)? {
                    Some(old) if allclose(&old, now, c.rtol, c.atol, c.equal_nan) => {}
                    _ => return Ok(None),
                }
            }
            let n = c.num_steps;
            Ok(Some(format!(
                "unchanged over the last {n} saved steps {prev:?}"
            )))
        })
    }
}

rule_params! {
    /// Parameters of [`TensorVariance`] (one of `collection_names`, `tensor_regex` is
    /// required).
    TensorVarianceConfig for "TensorVariance" no_default {
        collection_names: Vec<String> => "collections whose tensors are checked",
        tensor_regex: Vec<String> => "regexes of tensors to check",
        max_threshold: Option<f64> => "fires when the variance is above this",
        min_threshold: Option<f64> => "fires when the variance is below this",
    }
    check |p, c| {
        require_selection(p, &c.collection_names, &c.tensor_regex)?;
    }
}

builtin_rule! {
    /// TensorVariance (docs/src/rules.md §13): the population variance (`numpy.var`, a saved
    /// `variance` reduction if there is one) of a selected tensor fires above `max_threshold`
    /// or below `min_threshold`; with neither set the rule never fires.
    TensorVariance(TensorVarianceConfig)
}

impl TensorVariance {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        if c.max_threshold.is_none() && c.min_threshold.is_none() {
            return Ok(None);
        }
        for name in select(trial, &c.collection_names, &c.tensor_regex, false)? {
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
                let why = format!("variance {v:e} is above max_threshold {max:e}");
                return Ok(Some(Finding::on(name, why)));
            }
            if let Some(min) = c.min_threshold.filter(|&m| v < m) {
                let why = format!("variance {v:e} is below min_threshold {min:e}");
                return Ok(Some(Finding::on(name, why)));
            }
        }
        Ok(None)
    }
}

rule_params! {
    /// Parameters of [`SimilarAcrossRuns`] (the registry opens `other_trials` and hands
    /// them to the constructor).
    SimilarAcrossRunsConfig for "SimilarAcrossRuns" no_default {
        other_trials: Vec<String>, required
            => "the other run(s): trial paths, comma-separated",
        collection_names: Vec<String> => "collections whose tensors are checked",
        tensor_regex: Vec<String>
            => "regexes of tensors to compare; with neither, every tensor is compared",
    }
}

builtin_rule! {
    /// SimilarAcrossRuns (docs/src/rules.md §3): fires when a selected tensor (selection on the base
    /// trial; all tensors when none) differs at the same global step between the base trial
    /// and another trial. "Differs" = different shape, or not `numpy.allclose` with its
    /// defaults (rtol 1e-5, atol 1e-8) and NaN equal to NaN. Names or steps missing in the
    /// other trial are skipped (a live other trial is waited for).
    SimilarAcrossRuns(SimilarAcrossRunsConfig, others)
}

impl SimilarAcrossRuns {
    /// The other trials that have `step`, waiting for live ones; refreshing is then off.
    fn usable(&self, step: i64) -> Result<Vec<Arc<Trial>>> {
        let mut usable = Vec::new();
        for o in self.base.other_trials() {
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
        Ok(usable)
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let usable = self.usable(step)?;
        let c = &self.config;
        let names = select(trial, &c.collection_names, &c.tensor_regex, true)?;
        first_tensor(trial, &names, step, |name, a| {
            for o in &usable {
                if !o.has_tensor(name)? {
                    continue;
                }
                let Some(b) = f64_at(o, name, step)? else {
                    continue;
                };
                if allclose(a, &b, 1e-5, 1e-8, true) {
                    continue;
                }
                let other = o.name();
                return Ok(Some(if a.shape() != b.shape() {
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
                }));
            }
            Ok(None)
        })
    }
}
