//! The Python classes of the package that the native module makes instances of or raises.
//!
//! The package hands them over once, as it is imported (`smdebug_rs/_bind.py` calls
//! `_native._init`), and they are kept here: the native module never imports the package
//! that imports it, so no import runs in a circle and no lookup names a module path that a
//! move of the Python code would break.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// What `_init` was given.
pub(crate) struct Classes {
    /// `smdebug_rs.modes.ModeKeys`.
    pub(crate) mode_keys: Py<PyAny>,
    /// `smdebug_rs.core.tensor.StepState`.
    pub(crate) step_state: Py<PyAny>,
    /// `smdebug_rs.core.collection.Collection`.
    pub(crate) collection: Py<PyAny>,
    /// `smdebug_rs.core.reduction_config.ReductionConfig`.
    pub(crate) reduction_config: Py<PyAny>,
    /// `smdebug_rs.core.save_config.SaveConfig`.
    pub(crate) save_config: Py<PyAny>,
    /// `smdebug_rs.core.save_config.SaveConfigMode`.
    pub(crate) save_config_mode: Py<PyAny>,
    /// The exception classes (or their constructors), in the order of
    /// `errors::ExceptionClass` (see `errors::find_classes`).
    pub(crate) exceptions: Vec<Py<PyAny>>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// The classes the package handed over.
pub(crate) fn get(py: Python<'_>) -> PyResult<&'static Classes> {
    CLASSES.get(py).ok_or_else(|| {
        PyRuntimeError::new_err(
            "smdebug_rs._native was used before `import smdebug_rs` handed it the package's \
             classes (smdebug_rs._native._init)",
        )
    })
}

/// Hands the native module the package's classes and the module `smdebug_rs.exceptions`
/// (called once, by `smdebug_rs._bind`); fails if an exception class the native module
/// raises is missing there.
///
/// A second call (the package imported again, `importlib.reload`) keeps the first classes:
/// the objects made so far are instances of those.
#[pyfunction]
#[pyo3(signature = (*, mode_keys, step_state, collection, reduction_config, save_config, save_config_mode, exceptions))]
#[allow(clippy::too_many_arguments)]
fn _init(
    py: Python<'_>,
    mode_keys: Py<PyAny>,
    step_state: Py<PyAny>,
    collection: Py<PyAny>,
    reduction_config: Py<PyAny>,
    save_config: Py<PyAny>,
    save_config_mode: Py<PyAny>,
    exceptions: Bound<'_, PyModule>,
) -> PyResult<()> {
    let classes = Classes {
        mode_keys,
        step_state,
        collection,
        reduction_config,
        save_config,
        save_config_mode,
        exceptions: crate::errors::find_classes(&exceptions)?,
    };
    // Err means an earlier call won; its classes stay (see above).
    let _ = CLASSES.set(py, classes);
    Ok(())
}

/// Registers `_init`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_init, m)?)
}
