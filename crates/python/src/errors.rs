//! Rust failures as the Python exceptions smdebug raises.
//!
//! [`ExceptionClass`] is every exception class the native module raises: the package's own
//! (defined once, in `smdebug_rs.exceptions`, and found there by `_native._init`, which fails
//! if one is missing) and Python's builtins. Each failure is sorted into one by a `match`:
//! the trial reader's by its [`ErrorKind`] ([`class_of`], exhaustive, so a new kind does not
//! compile until it has a class), the rule engine's, the export's, the hook's and the
//! diagnosis's here. For smdebug's analysis conditions the exception is made from its
//! constructor's keyword arguments (`AnalysisError::python_args`).

use crate::classes;
use crate::convert::mode_to_py;
use pyo3::exceptions::{
    PyAssertionError, PyFileNotFoundError, PyKeyError, PyOSError, PyRuntimeError, PyTimeoutError,
    PyTypeError, PyValueError, PyZeroDivisionError,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smdebug_diagnose::DiagnoseError;
use smdebug_exceptions::{AnalysisError, PythonArg};
use smdebug_export::ExportError;
use smdebug_hook::HookError;
use smdebug_rules::RuleError;
use smdebug_trial::{ErrorKind, TrialError};
use std::any::Any;
use std::error::Error as _;

/// Defines [`ExceptionClass`], its list of every class and how each is found, from one list.
macro_rules! exception_classes {
    (
        package: { $($(#[$pdoc:meta])* $package:ident => $attr:literal,)* }
        builtin: { $($(#[$bdoc:meta])* $builtin:ident => $ty:ty,)* }
    ) => {
        /// An exception class the native module raises.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum ExceptionClass {
            $($(#[$pdoc])* $package,)*
            $($(#[$bdoc])* $builtin,)*
        }

        impl ExceptionClass {
            /// Every class, in declaration order (the order of [`Self::index`]).
            const ALL: &'static [ExceptionClass] =
                &[$(ExceptionClass::$package,)* $(ExceptionClass::$builtin,)*];

            /// The class (or, for classes of other modules whose constructor wants more
            /// than a message, a function making one) in `smdebug_rs.exceptions`, or the
            /// builtin.
            fn find<'py>(self, exceptions: &Bound<'py, PyModule>) -> PyResult<Bound<'py, PyAny>> {
                let py = exceptions.py();
                match self {
                    $(ExceptionClass::$package => exceptions.getattr($attr).map_err(|_| {
                        PyRuntimeError::new_err(format!(
                            "smdebug_rs.exceptions has no {} (the native module raises it)",
                            $attr
                        ))
                    }),)*
                    $(ExceptionClass::$builtin => Ok(py.get_type::<$ty>().into_any()),)*
                }
            }
        }
    };
}

exception_classes! {
    package: {
        /// `SMDebugRuntimeError`: the class of failures no other class fits (a panic, a
        /// damaged record, a closed hook).
        SMDebugRuntimeError => "SMDebugRuntimeError",
        /// `SMDebugValueError`.
        SMDebugValueError => "SMDebugValueError",
        /// `SMDebugTypeError`.
        SMDebugTypeError => "SMDebugTypeError",
        /// `TensorUnavailable`.
        TensorUnavailable => "TensorUnavailable",
        /// `TensorUnavailableForStep`.
        TensorUnavailableForStep => "TensorUnavailableForStep",
        /// `ShapeUnavailableForStep`.
        ShapeUnavailableForStep => "ShapeUnavailableForStep",
        /// `StepUnavailable`.
        StepUnavailable => "StepUnavailable",
        /// `StepNotYetAvailable`.
        StepNotYetAvailable => "StepNotYetAvailable",
        /// `NoMoreData`.
        NoMoreData => "NoMoreData",
        /// `MissingCollectionFiles`.
        MissingCollectionFiles => "MissingCollectionFiles",
        /// `IndexReaderException`.
        IndexReaderException => "IndexReaderException",
        /// `InvalidWorker`.
        InvalidWorker => "InvalidWorker",
        /// `InvalidCollectionConfiguration`.
        InvalidCollectionConfiguration => "InvalidCollectionConfiguration",
        /// `RuleEvaluationConditionMet`.
        RuleEvaluationConditionMet => "RuleEvaluationConditionMet",
        /// `InsufficientInformationForRuleInvocation`.
        InsufficientInformationForRuleInvocation => "InsufficientInformationForRuleInvocation",
        /// `json.JSONDecodeError`.
        JsonDecodeError => "_json_decode_error",
        /// `re.error`.
        RegexError => "_regex_error",
        /// `numpy.linalg.LinAlgError`.
        LinAlgError => "_linalg_error",
        /// numpy's `UFuncTypeError`.
        UfuncTypeError => "_ufunc_error",
    }
    builtin: {
        /// `KeyError`.
        KeyError => PyKeyError,
        /// `ValueError`.
        ValueError => PyValueError,
        /// `TypeError`.
        TypeError => PyTypeError,
        /// `AssertionError`.
        AssertionError => PyAssertionError,
        /// `OSError`.
        OSError => PyOSError,
        /// `FileNotFoundError`.
        FileNotFoundError => PyFileNotFoundError,
        /// `RuntimeError`.
        RuntimeError => PyRuntimeError,
        /// `TimeoutError`.
        TimeoutError => PyTimeoutError,
        /// `ZeroDivisionError`.
        ZeroDivisionError => PyZeroDivisionError,
    }
}

impl ExceptionClass {
    /// The class's place in [`Self::ALL`] (and in the table `_init` builds).
    fn index(self) -> usize {
        self as usize
    }
}

/// The class of every kind of trial failure. The name of the class is the kind's
/// [`ErrorKind::as_str`], which is what the dump writes (the test `test_error_kinds` checks
/// them against each other through [`_error_classes`]).
pub(crate) fn class_of(kind: ErrorKind) -> ExceptionClass {
    use ExceptionClass as C;
    match kind {
        ErrorKind::TensorUnavailable => C::TensorUnavailable,
        ErrorKind::TensorUnavailableForStep => C::TensorUnavailableForStep,
        ErrorKind::ShapeUnavailableForStep => C::ShapeUnavailableForStep,
        ErrorKind::StepUnavailable => C::StepUnavailable,
        ErrorKind::StepNotYetAvailable => C::StepNotYetAvailable,
        ErrorKind::NoMoreData => C::NoMoreData,
        ErrorKind::MissingCollectionFiles => C::MissingCollectionFiles,
        ErrorKind::UnusableIndex => C::IndexReaderException,
        ErrorKind::InvalidWorker => C::InvalidWorker,
        ErrorKind::UnconfiguredCollection => C::InvalidCollectionConfiguration,
        ErrorKind::RuleConditionMet => C::RuleEvaluationConditionMet,
        ErrorKind::InsufficientInformation => C::InsufficientInformationForRuleInvocation,
        ErrorKind::MissingKey => C::KeyError,
        ErrorKind::InvalidValue => C::ValueError,
        ErrorKind::FailedAssertion => C::AssertionError,
        ErrorKind::InvalidOption => C::SMDebugValueError,
        ErrorKind::Storage => C::OSError,
        ErrorKind::DamagedRecord => C::SMDebugRuntimeError,
        ErrorKind::MalformedJson => C::JsonDecodeError,
        ErrorKind::InvalidRegex => C::RegexError,
        ErrorKind::NoConvergence => C::LinAlgError,
        ErrorKind::UnsupportedType => C::TypeError,
        ErrorKind::NoUfuncLoop => C::UfuncTypeError,
        ErrorKind::FrameworkRefused => C::RuntimeError,
        ErrorKind::Timeout => C::TimeoutError,
    }
}

/// Every [`ExceptionClass`] found in `smdebug_rs.exceptions` or the builtins, in the order
/// of [`ExceptionClass::ALL`]; the first one missing is the error (called by `_init`, so
/// `import smdebug_rs` fails rather than a raise finding no class).
pub(crate) fn find_classes(exceptions: &Bound<'_, PyModule>) -> PyResult<Vec<Py<PyAny>>> {
    ExceptionClass::ALL
        .iter()
        .map(|c| c.find(exceptions).map(Bound::unbind))
        .collect()
}

/// `[(kind name, class)]` for every kind of trial failure: the name the dump writes and the
/// class (or constructor) the binding raises. Internal: for the tests.
#[pyfunction]
fn _error_classes(py: Python<'_>) -> PyResult<Vec<(&'static str, Py<PyAny>)>> {
    let table = &classes::get(py)?.exceptions;
    Ok(ErrorKind::ALL
        .iter()
        .map(|&k| (k.as_str(), table[class_of(k).index()].clone_ref(py)))
        .collect())
}

/// Registers `_error_classes`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_error_classes, m)?)
}

/// A failure of a native call, before it becomes a Python exception.
#[derive(Debug)]
pub(crate) enum NativeError {
    /// From the trial reader.
    Trial(TrialError),
    /// From the rule engine.
    Rule(RuleError),
    /// From the export.
    Export(ExportError),
    /// An argument or condition met in this crate: the Python class and the message.
    Other(ExceptionClass, String),
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
            ExceptionClass::SMDebugRuntimeError,
            format!("internal error in smdebug_rs (a Rust panic): {text}"),
        )
    }

    /// A `ValueError` naming a bad argument.
    pub(crate) fn value(message: impl Into<String>) -> Self {
        NativeError::Other(ExceptionClass::ValueError, message.into())
    }

    fn analysis(&self) -> Option<&AnalysisError> {
        match self {
            NativeError::Trial(e) => e.analysis(),
            NativeError::Rule(e) => e.analysis(),
            NativeError::Export(ExportError::Trial(e)) => e.analysis(),
            _ => None,
        }
    }

    fn class(&self) -> ExceptionClass {
        if let Some(a) = self.analysis() {
            return class_of(ErrorKind::from(a));
        }
        match self {
            NativeError::Trial(e)
            | NativeError::Export(ExportError::Trial(e))
            | NativeError::Rule(RuleError::Trial(e)) => class_of(e.kind()),
            NativeError::Rule(
                RuleError::UnknownRule { .. }
                | RuleError::UnknownParameter { .. }
                | RuleError::InvalidValue { .. }
                | RuleError::MissingParameter { .. }
                | RuleError::InvalidConfiguration { .. }
                | RuleError::InvalidRuleConfiguration { .. }
                | RuleError::InvalidRuleArgument { .. },
            ) => ExceptionClass::SMDebugValueError,
            NativeError::Rule(_) => ExceptionClass::SMDebugRuntimeError,
            NativeError::Export(ExportError::InvalidOption(_)) => ExceptionClass::SMDebugValueError,
            NativeError::Export(ExportError::Write { .. } | ExportError::Output { .. }) => {
                ExceptionClass::OSError
            }
            NativeError::Export(_) => ExceptionClass::SMDebugRuntimeError,
            NativeError::Other(class, _) => *class,
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

    /// The Python exception: [`Self::class`] called with the condition's constructor
    /// arguments, or else with the message.
    fn to_exception<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let class = classes::get(py)?.exceptions[self.class().index()].bind(py);
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
                                "{name} of {:?}: a kind of argument this build cannot convert",
                                self.class()
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

impl From<DiagnoseError> for NativeError {
    fn from(e: DiagnoseError) -> Self {
        // The message with its causes, as the CLI prints it (`a: b: c`).
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        match e {
            DiagnoseError::Trial(t) => NativeError::Trial(t),
            DiagnoseError::Location { .. } => {
                NativeError::Other(ExceptionClass::ValueError, message)
            }
            DiagnoseError::NotSealed { .. } => {
                NativeError::Other(ExceptionClass::SMDebugRuntimeError, message)
            }
            _ => NativeError::Other(ExceptionClass::OSError, message),
        }
    }
}

impl From<HookError> for NativeError {
    fn from(e: HookError) -> Self {
        let class = match &e {
            HookError::InvalidSetting { .. }
            | HookError::InvalidCollectionConfiguration { .. }
            | HookError::NotAScalar { .. }
            | HookError::NoStep { .. }
            | HookError::HookConfig { .. }
            | HookError::TensorBoardConfig { .. }
            | HookError::SaveConfig { .. } => ExceptionClass::SMDebugValueError,
            HookError::NoHookConfig { .. } => ExceptionClass::FileNotFoundError,
            _ => ExceptionClass::SMDebugRuntimeError,
        };
        NativeError::Other(class, e.to_string())
    }
}
