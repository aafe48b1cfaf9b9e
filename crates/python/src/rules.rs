//! The built-in rules of smdebug-rules for `smdebug_rs.rules`: built by name from
//! SageMaker-style string parameters and invoked with the GIL released. Rules written in
//! Python subclass `smdebug_rs.rules.Rule` instead and are driven by the Python invoker.

use crate::trial::PyTrial;
use crate::{run, NativeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smdebug_rules::{build_rule_with, builtin_rules, EndReason, Firing, Rule, RuleError};
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A built-in rule over one or more trials.
#[pyclass(module = "smdebug_rs._native", name = "BuiltinRule")]
pub(crate) struct PyBuiltinRule {
    rule: Mutex<Box<dyn Rule>>,
}

fn lock(m: &Mutex<Box<dyn Rule>>) -> MutexGuard<'_, Box<dyn Rule>> {
    // A rule is left consistent between steps; a panic inside one is reported already.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn firing_dict<'py>(py: Python<'py>, f: &Firing) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rule", &f.rule)?;
    d.set_item("step", f.step)?;
    d.set_item("tensor", f.tensor.as_deref())?;
    d.set_item("message", &f.message)?;
    d.set_item("trial", &f.trial)?;
    Ok(d)
}

#[pymethods]
impl PyBuiltinRule {
    /// Builds rule `name` over `base_trial` from string parameters. Paths named by
    /// parameters (`other_trials`) are the trials in `trials` with that path, or opened.
    #[new]
    #[pyo3(signature = (name, base_trial, params, trials=Vec::new()))]
    fn new(
        py: Python<'_>,
        name: String,
        base_trial: PyRef<'_, PyTrial>,
        params: BTreeMap<String, String>,
        trials: Vec<PyRef<'_, PyTrial>>,
    ) -> PyResult<Self> {
        let base = base_trial.trial(py)?;
        let known: Vec<Arc<Trial>> = trials
            .iter()
            .map(|t| t.trial(py))
            .collect::<PyResult<_>>()?;
        let rule = run(py, move || {
            let open = |path: &str| -> Result<Arc<Trial>, RuleError> {
                if let Some(t) = known.iter().find(|t| t.path() == path) {
                    return Ok(Arc::clone(t));
                }
                Ok(Arc::new(smdebug_trial::create_trial(path)?))
            };
            Ok(build_rule_with(&name, &params, base, &open)?)
        })?;
        Ok(PyBuiltinRule {
            rule: Mutex::new(rule),
        })
    }

    /// The rule's name.
    #[getter]
    fn rule_name(&self) -> String {
        lock(&self.rule).base().name().to_owned()
    }

    /// `Rule.invoke(step)`: waits for the step, evaluates the rule; raises
    /// `RuleEvaluationConditionMet` if it fires.
    fn invoke(&self, py: Python<'_>, step: i64) -> PyResult<()> {
        let rule = &self.rule;
        run(py, move || {
            let mut r = lock(rule);
            Ok(smdebug_rules::invoke(r.as_mut(), step)?)
        })
    }

    /// `invoke_rule` over steps `start_step..end_step` (to the end of training when
    /// `end_step` is None). Returns `(firings, end)`, `end` being `"end_step"`,
    /// `"end_of_rule"` or `"end_of_training"`; the end of training raises nothing here (the
    /// Python invoker raises `NoMoreData` as smdebug does) but `no_more_data` holds its
    /// attributes.
    #[pyo3(signature = (start_step=0, end_step=None, raise_eval_cond=false))]
    fn invoke_rule<'py>(
        &self,
        py: Python<'py>,
        start_step: i64,
        end_step: Option<i64>,
        raise_eval_cond: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rule = &self.rule;
        let eval = run(py, move || {
            let mut r = lock(rule);
            Ok(smdebug_rules::invoke_rule(
                r.as_mut(),
                start_step,
                end_step,
                raise_eval_cond,
            )?)
        })?;
        let d = PyDict::new(py);
        let firings = eval
            .firings
            .iter()
            .map(|f| firing_dict(py, f))
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("firings", firings)?;
        d.set_item("steps_evaluated", eval.steps_evaluated)?;
        d.set_item("steps_skipped", eval.steps_skipped)?;
        d.set_item("next_step", eval.next_step)?;
        match &eval.end {
            EndReason::EndStep => d.set_item("end", "end_step")?,
            EndReason::EndOfRule => d.set_item("end", "end_of_rule")?,
            EndReason::EndOfTraining(a) => {
                d.set_item("end", "end_of_training")?;
                let err = NativeError::Trial(a.clone().into()).into_pyerr(py);
                d.set_item("no_more_data", err.value(py))?;
            }
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<smdebug_rs built-in rule {}>",
            lock(&self.rule).base().name()
        )
    }
}

/// `[(name, doc, [(param, kind, default, required, doc)])]` of every built-in rule.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn builtin_rule_specs() -> Vec<(
    &'static str,
    &'static str,
    Vec<(
        &'static str,
        &'static str,
        Option<&'static str>,
        bool,
        &'static str,
    )>,
)> {
    builtin_rules()
        .iter()
        .map(|s| {
            let params = s
                .params
                .iter()
                .map(|p| (p.name, p.kind.describe(), p.default, p.required, p.doc))
                .collect();
            (s.name, s.doc, params)
        })
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBuiltinRule>()?;
    m.add_function(wrap_pyfunction!(builtin_rule_specs, m)?)?;
    Ok(())
}
