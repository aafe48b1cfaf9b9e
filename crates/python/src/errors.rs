//! Rust failures as the Python exceptions smdebug raises.
//!
//! The class is chosen by name (`TrialError::python_name`, `AnalysisError::python_name`);
//! `smdebug_rs.exceptions._from_native` builds the instance, so the class table and the
//! exception attributes (`step`, `mode`, `tname`, …) live in one place, the Python module
//! that defines the classes.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use smdebug_exceptions::AnalysisError;
use smdebug_export::ExportError;
use smdebug_rules::RuleError;
use smdebug_trial::TrialError;
use std::any::Any;

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
            "SMDebugRuntimeError",
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
            NativeError::Rule(_) => "SMDebugRuntimeError",
            NativeError::Export(ExportError::InvalidOption(_)) => "SMDebugValueError",
            NativeError::Export(ExportError::Write { .. } | ExportError::Output { .. }) => {
                "OSError"
            }
            NativeError::Export(_) => "SMDebugRuntimeError",
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

    /// The attributes smdebug's exception of this class carries.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        if let NativeError::Rule(RuleError::ConditionMet { firing, .. }) = self {
            d.set_item("tensor", firing.tensor.as_deref())?;
            d.set_item("detail", &firing.message)?;
        }
        let Some(a) = self.analysis() else {
            return Ok(d);
        };
        match a {
            AnalysisError::TensorUnavailable { tensor } => d.set_item("tname", tensor)?,
            AnalysisError::TensorUnavailableForStep {
                tensor,
                step,
                mode,
                has_reductions,
            } => {
                d.set_item("tname", tensor)?;
                d.set_item("step", step)?;
                d.set_item("mode", mode.name())?;
                d.set_item("has_reductions", has_reductions)?;
            }
            AnalysisError::ShapeUnavailableForStep { tensor, step, mode } => {
                d.set_item("tname", tensor)?;
                d.set_item("step", step)?;
                d.set_item("mode", mode.name())?;
            }
            AnalysisError::StepUnavailable { step, mode }
            | AnalysisError::StepNotYetAvailable { step, mode } => {
                d.set_item("step", step)?;
                d.set_item("mode", mode.name())?;
            }
            AnalysisError::NoMoreData {
                step,
                mode,
                last_step,
            } => {
                d.set_item("step", step)?;
                d.set_item("mode", mode.name())?;
                d.set_item("last_step", last_step)?;
            }
            AnalysisError::IndexReaderException { message } => d.set_item("message", message)?,
            AnalysisError::InvalidWorker { worker } => d.set_item("worker", worker)?,
            AnalysisError::InvalidCollectionConfiguration { collection } => {
                d.set_item("c_name", collection)?
            }
            AnalysisError::RuleEvaluationConditionMet {
                rule,
                step,
                end_of_rule,
            } => {
                d.set_item("rule_name", rule)?;
                d.set_item("step", step)?;
                d.set_item("end_of_rule", end_of_rule)?;
            }
            AnalysisError::InsufficientInformationForRuleInvocation { rule, message } => {
                d.set_item("rule_name", rule)?;
                d.set_item("message", message)?;
            }
            _ => {}
        }
        Ok(d)
    }

    /// The Python exception, built by `smdebug_rs.exceptions._from_native`.
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let build = || -> PyResult<PyErr> {
            let factory = py
                .import("smdebug_rs.exceptions")?
                .getattr("_from_native")?;
            let exc = factory.call1((self.class_name(), self.message(), self.fields(py)?))?;
            Ok(PyErr::from_value(exc))
        };
        build().unwrap_or_else(|e| e)
    }
}
