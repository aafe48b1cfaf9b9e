//! Rust failures as the Python exceptions smdebug raises.
//!
//! The Rust errors name their Python class (`AnalysisError::python_name`,
//! `TrialError::python_name`; the rule engine's and the export's own failures here) and, for
//! smdebug's analysis conditions, the arguments of its constructor
//! (`AnalysisError::python_args`). The classes themselves are defined once, in
//! `smdebug_rs.exceptions`, and reach this module by name through [`crate::classes`].

use crate::classes::{self, mode_to_py};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smdebug_exceptions::{AnalysisError, PythonArg};
use smdebug_export::ExportError;
use smdebug_rules::RuleError;
use smdebug_trial::TrialError;
use std::any::Any;

/// The class of failures no other class fits (a panic, a damaged record).
const RUNTIME_ERROR: &str = "SMDebugRuntimeError";

/// A failure of a native call, before it becomes a Python exception.
#[derive(Debug)]
pub(crate) enum NativeError {
    /// From the trial reader.
    Trial(TrialError),
    /// From the rule engine.
    Rule(RuleError),
    /// From the export.
    Export(ExportError),
    /// An argument or condition met in this crate: the Python class name and the message.
    Other(&'static str, String),
}

/// Result of the native calls.
pub(crate) type NativeResult<T> = Result<T, NativeError>;

impl From<TrialError> for NativeError {
    fn from(e: TrialError) -> Self {
        NativeError::Trial(e)
    }
}

impl From<RuleError> for NativeError {
    fn from(e: RuleError) -> Self {
        NativeError::Rule(e)
    }
}

impl From<ExportError> for NativeError {
    fn from(e: ExportError) -> Self {
        NativeError::Export(e)
    }
}

impl NativeError {
    /// A panic caught at the boundary.
    pub(crate) fn panic(payload: Box<dyn Any + Send>) -> Self {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "unknown panic payload".to_owned());
        NativeError::Other(
            RUNTIME_ERROR,
            format!("internal error in smdebug_rs (a Rust panic): {text}"),
        )
    }

    /// A `ValueError` naming a bad argument.
    pub(crate) fn value(message: impl Into<String>) -> Self {
        NativeError::Other("ValueError", message.into())
    }

    fn analysis(&self) -> Option<&AnalysisError> {
        match self {
            NativeError::Trial(e) => e.analysis(),
            NativeError::Rule(e) => e.analysis(),
            NativeError::Export(ExportError::Trial(e)) => e.analysis(),
            _ => None,
        }
    }

    fn class_name(&self) -> &'static str {
        if let Some(a) = self.analysis() {
            return a.python_name();
        }
        match self {
            NativeError::Trial(e) | NativeError::Export(ExportError::Trial(e)) => e.python_name(),
            NativeError::Rule(RuleError::Trial(e)) => e.python_name(),
            NativeError::Rule(
                RuleError::UnknownRule { .. }
                | RuleError::UnknownParameter { .. }
                | RuleError::InvalidValue { .. }
                | RuleError::MissingParameter { .. }
                | RuleError::InvalidConfiguration { .. }
                | RuleError::InvalidRuleConfiguration { .. }
                | RuleError::InvalidRuleArgument { .. },
            ) => "SMDebugValueError",
            NativeError::Rule(_) => RUNTIME_ERROR,
            NativeError::Export(ExportError::InvalidOption(_)) => "SMDebugValueError",
            NativeError::Export(ExportError::Write { .. } | ExportError::Output { .. }) => {
                "OSError"
            }
            NativeError::Export(_) => RUNTIME_ERROR,
            NativeError::Other(class, _) => class,
        }
    }

    fn message(&self) -> String {
        match self {
            NativeError::Trial(e) => e.to_string(),
            NativeError::Rule(e) => e.to_string(),
            NativeError::Export(e) => e.to_string(),
            NativeError::Other(_, m) => m.clone(),
        }
    }

    /// The Python exception: the class of [`Self::class_name`] (`SMDebugRuntimeError` if the
    /// package has none of that name), made from the condition's constructor arguments, or
    /// else from the message.
    fn to_exception<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let table = classes::get(py)?.exceptions.bind(py);
        let class = match table.get_item(self.class_name())? {
            Some(class) => class,
            None => table.get_item(RUNTIME_ERROR)?.ok_or_else(|| {
                PyRuntimeError::new_err(format!("smdebug_rs._native._init: no {RUNTIME_ERROR}"))
            })?,
        };
        let exc = match self.analysis() {
            Some(a) => {
                let kwargs = PyDict::new(py);
                for (name, arg) in a.python_args() {
                    match arg {
                        PythonArg::Str(s) => kwargs.set_item(name, s)?,
                        PythonArg::Int(i) => kwargs.set_item(name, i)?,
                        PythonArg::Bool(b) => kwargs.set_item(name, b)?,
                        PythonArg::Mode(m) => kwargs.set_item(name, mode_to_py(py, m)?)?,
                        _ => {
                            return Err(PyRuntimeError::new_err(format!(
                                "{name} of {}: a kind of argument this build cannot convert",
                                a.python_name()
                            )))
                        }
                    }
                }
                class.call((), Some(&kwargs))?
            }
            None => class.call1((self.message(),))?,
        };
        // Where and why a rule fired (smdebug_rs only): the tensor and the numbers that decided.
        if let NativeError::Rule(RuleError::ConditionMet { firing, .. }) = self {
            exc.setattr("tensor", firing.tensor.as_deref())?;
            exc.setattr("detail", &firing.message)?;
        }
        Ok(exc)
    }

    /// The Python exception (see [`Self::to_exception`]).
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        self.to_exception(py).map_or_else(|e| e, PyErr::from_value)
    }
}
