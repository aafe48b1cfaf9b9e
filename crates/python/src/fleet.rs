//! Fleets for the Python package (`smdebug_rs.spark`): finding the trials below a prefix
//! and reading rule arguments, with the same code `smdebug rules` uses, so that Spark and the
//! command line agree on what a fleet and a rule are.

use crate::{run, ExceptionClass, NativeError, NativeResult};
use pyo3::prelude::*;
use smdebug_rules::{RuleArg, RuleError};
use smdebug_storage::Location;
use std::collections::BTreeMap;

/// `(location, depth)` of every trial at or below `root` (a local folder or an object-store
/// URL), sorted by location: depth 0 when `root` is a trial itself, else the number of
/// folders between `root` and the trial. A root that does not exist holds no trial.
#[pyfunction]
fn discover_trials(py: Python<'_>, root: String) -> PyResult<Vec<(String, usize)>> {
    run(py, move || -> NativeResult<Vec<(String, usize)>> {
        let base =
            Location::parse(root.trim()).map_err(|e| NativeError::value(format!("{root}: {e}")))?;
        if let Location::Local(path) = &base {
            if !path.is_dir() {
                return Ok(Vec::new());
            }
        }
        let base = base.to_string();
        let found = smdebug_fleet::discover(&[root.as_str()])
            .map_err(|e| NativeError::Other(ExceptionClass::OSError, e.to_string()))?;
        let mut out: Vec<(String, usize)> = found
            .into_iter()
            .map(|t| {
                let below = t
                    .location
                    .strip_prefix(base.as_str())
                    .unwrap_or(&t.location)
                    .trim_matches('/');
                let depth = match below.is_empty() {
                    true => 0,
                    false => below.split('/').count(),
                };
                (t.location, depth)
            })
            .collect();
        out.sort();
        Ok(out)
    })
}

/// `(name, parameters)` of a rule given as `"Name[:key=value,…]"` (`smdebug rules --rule`),
/// or as `name` with `parameters` already strings; checked against the built-in rules (name,
/// parameter names) so that a typo fails before any trial is read.
#[pyfunction]
#[pyo3(signature = (spec, parameters=None))]
fn rule_arg(
    py: Python<'_>,
    spec: String,
    parameters: Option<BTreeMap<String, String>>,
) -> PyResult<(String, BTreeMap<String, String>)> {
    run(py, move || {
        checked_rule_arg(spec, parameters).map_err(NativeError::from)
    })
}

fn checked_rule_arg(
    spec: String,
    parameters: Option<BTreeMap<String, String>>,
) -> Result<(String, BTreeMap<String, String>), RuleError> {
    let arg = match parameters {
        Some(params) => RuleArg {
            name: spec.trim().to_owned(),
            params,
        },
        None => RuleArg::parse(&spec)?,
    };
    if arg.name.is_empty() {
        return Err(RuleError::InvalidRuleArgument {
            argument: spec,
            message: "no rule name".into(),
        });
    }
    arg.check()?;
    Ok((arg.name, arg.params))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(discover_trials, m)?)?;
    m.add_function(wrap_pyfunction!(rule_arg, m)?)?;
    Ok(())
}
