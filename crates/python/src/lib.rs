//! The native half of the Python package `smdebug_rs` (module `smdebug_rs._native`): the
//! smdebug trial reader, the rule engine, the columnar export and the trial diagnosis
//! (health, doctor, seal) of this workspace, bound with PyO3. The Python half (`python/smdebug_rs/`) gives them smdebug's module layout —
//! `smdebug_rs.trials`, `smdebug_rs.rules`, `smdebug_rs.exceptions`, `smdebug_rs.modes` —
//! so that a script moves over by changing its imports.
//!
//! Every call that reads storage or decodes records runs with the GIL released
//! (`run`); a Rust error becomes the Python exception smdebug raises in the same
//! situation, with our message; a Rust panic becomes `SMDebugRuntimeError`, never an abort.
//!
//! Build and install with `pip install ./crates/python` (maturin is the PEP 517 backend);
//! the tests are the pytest suite in `crates/python/tests/`. From Python:
//!
//! ```python
//! from smdebug_rs.trials import create_trial
//! from smdebug_rs import modes
//!
//! trial = create_trial("s3://bucket/run")             # or a local folder
//! for step in trial.steps(mode=modes.TRAIN):
//!     loss = trial.tensor("loss").value(step, mode=modes.TRAIN)   # numpy array
//! df = trial.to_pandas()                               # one row per tensor, step, worker
//! ```
#![deny(missing_docs)]

mod arrow;
mod classes;
mod config;
mod convert;
mod diagnose;
mod errors;
mod fleet;
mod hook;
mod rules;
mod serve;
mod trial;

use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(crate) use errors::{ExceptionClass, NativeError, NativeResult};

// The extension's own allocations (decoded values, index state, record buffers) go to
// mimalloc, as in the CLI and the Rust benchmarks: glibc's malloc hands the buffers of freed
// values back to the kernel and faults fresh pages in for the next ones, and its per-call
// cost showed as a fifth of opening a trial. Only Rust allocations of this library use it;
// numpy arrays that view a value keep it alive through a Rust object, freed by Rust.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs `f` without the GIL and turns its failure — an error or a panic — into the Python
/// exception it stands for.
pub(crate) fn run<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    F: FnOnce() -> NativeResult<T> + Send,
    T: Send,
{
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.into_pyerr(py)),
        Err(payload) => Err(NativeError::panic(payload).into_pyerr(py)),
    }
}

/// Test hook: panics inside [`run`], to show that a panic reaches Python as an exception.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: String) -> PyResult<()> {
    run(py, move || -> NativeResult<()> { panic!("{message}") })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    classes::register(m)?;
    errors::register(m)?;
    trial::register(m)?;
    rules::register(m)?;
    arrow::register(m)?;
    hook::register(m)?;
    config::register(m)?;
    diagnose::register(m)?;
    fleet::register(m)?;
    serve::register(m)?;
    Ok(())
}
