//! What kind of failure an error is: a closed set, free of any language binding.

use smdebug_config::ConfigError;
use smdebug_exceptions::AnalysisError;
use smdebug_reduce::ReduceError;

/// Defines [`ErrorKind`], [`ErrorKind::ALL`] and [`ErrorKind::as_str`] from one list, so the
/// list of every kind cannot miss one.
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident => $name:literal,)*) => {
        /// What kind of failure a [`TrialError`](crate::TrialError) (or a condition of the
        /// rule engine) is.
        ///
        /// Deliberately not `#[non_exhaustive]`: a consumer that turns kinds into something
        /// of its own (the Python binding, into exception classes) matches every kind, so a
        /// new kind fails to compile there instead of being treated as some other failure.
        ///
        /// ```
        /// use smdebug_trial::{AnalysisError, ErrorKind, Mode, TrialError};
        ///
        /// let e = TrialError::from(AnalysisError::StepUnavailable { step: 3, mode: Mode::Train });
        /// assert_eq!(e.kind(), ErrorKind::StepUnavailable);
        /// assert_eq!(e.kind().as_str(), "StepUnavailable");
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }

        impl ErrorKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),*];

            /// The kind's stable name: the class name of the exception Python smdebug 1.0.34
            /// raises in the same situation (for damaged files, the closest smdebug exception).
            /// The `smdebug-trial-dump/v1` document records it as an error's `type`, so dumps
            /// of both implementations name a failure the same way.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $name,)*
                }
            }
        }
    };
}

kinds! {
    /// A tensor name the trial has never seen.
    TensorUnavailable => "TensorUnavailable",
    /// A known step at which the tensor has no value (or reduction).
    TensorUnavailableForStep => "TensorUnavailableForStep",
    /// Neither a shape nor a value was saved for the tensor at the step.
    ShapeUnavailableForStep => "ShapeUnavailableForStep",
    /// A step that will never be available: skipped, or past the end of a finished job.
    StepUnavailable => "StepUnavailable",
    /// A step not written yet that may still be.
    StepNotYetAvailable => "StepNotYetAvailable",
    /// A wait for a step past the last one of a job that has ended.
    NoMoreData => "NoMoreData",
    /// The job ended before every worker's collections file appeared.
    MissingCollectionFiles => "MissingCollectionFiles",
    /// An index file, or a file name under the trial, that cannot be used.
    UnusableIndex => "IndexReaderException",
    /// A worker that did not write the step.
    InvalidWorker => "InvalidWorker",
    /// A collection with neither tensor names nor regexes.
    UnconfiguredCollection => "InvalidCollectionConfiguration",
    /// A rule's condition was met at a step.
    RuleConditionMet => "RuleEvaluationConditionMet",
    /// A rule cannot be evaluated with the data at hand.
    InsufficientInformation => "InsufficientInformationForRuleInvocation",
    /// A key looked up and absent (a mode never seen, an unknown mode in an index file, a
    /// missing top-level key of a collections file).
    MissingKey => "KeyError",
    /// A value of the right type that the operation cannot use (both `regex` and
    /// `collection` given; numpy's reductions of an empty or 3-d array; a string that is
    /// not a number).
    InvalidValue => "ValueError",
    /// An argument the original rejects with an `assert` (`range_steps`).
    FailedAssertion => "AssertionError",
    /// An option smdebug itself validates and rejects (an unknown reduction name, a bad
    /// collection setting).
    InvalidOption => "SMDebugValueError",
    /// Listing or reading the storage failed.
    Storage => "OSError",
    /// A damaged record, or a record that is not the one its index entry names.
    DamagedRecord => "SMDebugRuntimeError",
    /// A JSON document that does not parse.
    MalformedJson => "JSONDecodeError",
    /// A regular expression that does not compile (Python's `re.error`).
    InvalidRegex => "error",
    /// numpy's singular value decomposition did not converge (NaN in a matrix norm).
    NoConvergence => "LinAlgError",
    /// A dtype numpy's linear algebra (or complex numbers' lack of order) does not support.
    UnsupportedType => "TypeError",
    /// A numpy ufunc with no loop for the dtype (reductions of strings).
    NoUfuncLoop => "UFuncTypeError",
    /// A framework refuses the operation for this dtype or an empty tensor (PyTorch).
    FrameworkRefused => "RuntimeError",
    /// A bounded wait ended before the condition was met.
    Timeout => "TimeoutError",
}

impl From<&AnalysisError> for ErrorKind {
    fn from(e: &AnalysisError) -> Self {
        match e {
            AnalysisError::TensorUnavailable { .. } => ErrorKind::TensorUnavailable,
            AnalysisError::TensorUnavailableForStep { .. } => ErrorKind::TensorUnavailableForStep,
            AnalysisError::ShapeUnavailableForStep { .. } => ErrorKind::ShapeUnavailableForStep,
            AnalysisError::StepUnavailable { .. } => ErrorKind::StepUnavailable,
            AnalysisError::StepNotYetAvailable { .. } => ErrorKind::StepNotYetAvailable,
            AnalysisError::NoMoreData { .. } => ErrorKind::NoMoreData,
            AnalysisError::MissingCollectionFiles => ErrorKind::MissingCollectionFiles,
            AnalysisError::IndexReaderException { .. } => ErrorKind::UnusableIndex,
            AnalysisError::InvalidWorker { .. } => ErrorKind::InvalidWorker,
            AnalysisError::InvalidCollectionConfiguration { .. } => {
                ErrorKind::UnconfiguredCollection
            }
            AnalysisError::RuleEvaluationConditionMet { .. } => ErrorKind::RuleConditionMet,
            AnalysisError::InsufficientInformationForRuleInvocation { .. } => {
                ErrorKind::InsufficientInformation
            }
        }
    }
}

impl From<&ReduceError> for ErrorKind {
    fn from(e: &ReduceError) -> Self {
        match e {
            ReduceError::EmptyArray { .. } | ReduceError::ImproperDimensions { .. } => {
                ErrorKind::InvalidValue
            }
            ReduceError::SvdDidNotConverge { .. } => ErrorKind::NoConvergence,
            ReduceError::UnsupportedLinalgDtype { .. } => ErrorKind::UnsupportedType,
            ReduceError::UnsupportedDtype { .. } | ReduceError::EmptyTensor { .. } => {
                ErrorKind::FrameworkRefused
            }
        }
    }
}

impl From<&ConfigError> for ErrorKind {
    /// smdebug's collections loader: `json.loads` fails with `JSONDecodeError`, a missing
    /// top-level key is a `KeyError`, a bad regex `re.error`, anything else it validates an
    /// `SMDebugValueError`.
    fn from(e: &ConfigError) -> Self {
        match e {
            ConfigError::Json(_) => ErrorKind::MalformedJson,
            ConfigError::MissingKey { .. } => ErrorKind::MissingKey,
            ConfigError::Regex { .. } => ErrorKind::InvalidRegex,
            _ => ErrorKind::InvalidOption,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn kinds_have_distinct_names() {
        let names: HashSet<_> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        assert!(ErrorKind::ALL.contains(&ErrorKind::Timeout));
    }
}
