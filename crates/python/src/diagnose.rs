//! `smdebug_diagnose` for Python: `Trial.health()`, `smdebug_rs.doctor`, `smdebug_rs.verify`
//! and `smdebug_rs.seal`. Each report crosses over as the dicts and lists of its JSON form
//! (`serde::Serialize`), so a finding reads the same as in `smdebug doctor --json`.

use crate::trial::PyTrial;
use crate::{run, ExceptionClass, NativeError, NativeResult};
use pyo3::prelude::*;
use serde::Serialize;
use smdebug_diagnose::{DiagnoseError, HealthOptions, SealOptions};

/// Runs `diagnose` without the GIL; its report as Python dicts and lists (through its JSON
/// text and `json.loads`).
fn report<'py, R, F>(py: Python<'py>, diagnose: F) -> PyResult<Bound<'py, PyAny>>
where
    R: Serialize + Send,
    F: FnOnce() -> Result<R, DiagnoseError> + Send,
{
    let report = run(py, move || -> NativeResult<R> { Ok(diagnose()?) })?;
    let text = serde_json::to_string(&report).map_err(|e| {
        NativeError::Other(
            ExceptionClass::SMDebugRuntimeError,
            format!("report to JSON: {e}"),
        )
        .into_pyerr(py)
    })?;
    py.import("json")?.getattr("loads")?.call1((text,))
}

/// `Trial.health()`: the first non-finite value of the trial (see `smdebug_diagnose::health`).
#[pyfunction]
#[pyo3(signature = (trial, context=5, growth=10.0))]
fn trial_health<'py>(
    py: Python<'py>,
    trial: &Bound<'py, PyTrial>,
    context: usize,
    growth: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let t = trial.get().trial(py)?;
    let options = HealthOptions { context, growth };
    report(py, move || smdebug_diagnose::health(&t, &options))
}

/// `smdebug_rs.doctor(path)`: what is wrong with the trial at `path`.
#[pyfunction]
fn doctor(py: Python<'_>, path: String) -> PyResult<Bound<'_, PyAny>> {
    report(py, move || smdebug_diagnose::doctor(&path))
}

/// `smdebug_rs.verify(path)`: every record of the trial checked against its events file.
#[pyfunction]
fn verify(py: Python<'_>, path: String) -> PyResult<Bound<'_, PyAny>> {
    report(py, move || smdebug_diagnose::verify(&path))
}

/// `smdebug_rs.seal(path, dry_run=False)`: the payload CRC added to every index entry.
#[pyfunction]
#[pyo3(signature = (path, dry_run=false))]
fn seal(py: Python<'_>, path: String, dry_run: bool) -> PyResult<Bound<'_, PyAny>> {
    report(py, move || {
        smdebug_diagnose::seal(&path, &SealOptions { dry_run })
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trial_health, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(seal, m)?)?;
    Ok(())
}
