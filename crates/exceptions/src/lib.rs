//! The conditions an smdebug analysis can run into, as Rust types.
//!
//! Python smdebug signals "this step is not there yet", "this tensor was not saved", "the
//! rule fired" and so on with exceptions from `smdebug.exceptions`. Here they are the variants
//! of one enum, [`AnalysisError`], which the trial reader and the rule engine return. Each
//! variant's `Display` text is the message of the Python exception, word for word, and
//! [`AnalysisError::python_args`] gives the arguments of that class's constructor, from
//! which the Python binding makes the exception. (Which kind of failure a condition is, by
//! its stable name, is `smdebug_trial::ErrorKind`.)
//!
//! [`StepState`] is the answer of `Trial::has_passed_step`.
//!
//! ```
//! use smdebug_config::Mode;
//! use smdebug_exceptions::{AnalysisError, StepState};
//!
//! let e = AnalysisError::StepNotYetAvailable { step: 7, mode: Mode::Train };
//! assert_eq!(e.to_string(), "Step 7 of mode TRAIN not yet available");
//! assert_eq!(StepState::NotYetAvailable.as_int(), 2);
//! ```
#![deny(missing_docs, unsafe_code)]

use smdebug_config::Mode;
use std::fmt;

/// Whether a step has been seen by a trial (`smdebug.core.tensor.StepState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepState {
    /// The step was skipped, or lies beyond the end of a finished job (0).
    Unavailable,
    /// The step has been written by every worker (1).
    Available,
    /// The job may still write the step (2).
    NotYetAvailable,
}

impl StepState {
    /// smdebug's integer value of the state.
    pub fn as_int(self) -> u8 {
        match self {
            StepState::Unavailable => 0,
            StepState::Available => 1,
            StepState::NotYetAvailable => 2,
        }
    }

    /// The enum member name smdebug prints (`"AVAILABLE"`, …).
    pub fn name(self) -> &'static str {
        match self {
            StepState::Unavailable => "UNAVAILABLE",
            StepState::Available => "AVAILABLE",
            StepState::NotYetAvailable => "NOT_YET_AVAILABLE",
        }
    }
}

impl fmt::Display for StepState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A condition met while analysing a trial, one variant per exception class of
/// `smdebug.exceptions`.
///
/// Steps are `i64` because the original allows any integer where a step is expected (a
/// query for a negative step is answered, not rejected). Messages match the original's,
/// including its missing space before the reductions hint.
///
/// Not `#[non_exhaustive]`: the trial reader sorts every condition into a kind of failure
/// (`smdebug_trial::ErrorKind`), so a new condition must fail to compile there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// `trial.tensor(name)` for a name the trial has never seen.
    #[error("Tensor {tensor} was not saved.")]
    TensorUnavailable {
        /// The requested tensor name.
        tensor: String,
    },
    /// The step is known but this tensor has no value (or reduction) for it.
    #[error(
        "Value for tensor {tensor} is not available for step {step} with mode {mode} as it was not saved.{}",
        if *has_reductions { "This tensor has reductions saved for this step. You might want to query for the reductions." } else { "" }
    )]
    TensorUnavailableForStep {
        /// The tensor name.
        tensor: String,
        /// The step as queried (a mode step unless `mode` is GLOBAL).
        step: i64,
        /// The mode of the query.
        mode: Mode,
        /// Whether reductions of the tensor were saved for that step.
        has_reductions: bool,
    },
    /// `shape()` found neither a saved shape nor a value.
    #[error("Shape for tensor {tensor} is not available for step {step} with mode {mode} as it was not saved.")]
    ShapeUnavailableForStep {
        /// The tensor name.
        tensor: String,
        /// The step as queried.
        step: i64,
        /// The mode of the query.
        mode: Mode,
    },
    /// The step will never be available: skipped, or beyond the end of a finished job.
    #[error("Step {step} of mode {mode} is not available as it was not saved")]
    StepUnavailable {
        /// The step as queried.
        step: i64,
        /// The mode of the query.
        mode: Mode,
    },
    /// The step has not been written yet but may still be.
    #[error("Step {step} of mode {mode} not yet available")]
    StepNotYetAvailable {
        /// The step as queried.
        step: i64,
        /// The mode of the query.
        mode: Mode,
    },
    /// Waiting for a step past the last one of a job that has ended.
    #[error("Looking for step {step} of mode {mode} and reached end of training. Max step available is {last_step}")]
    NoMoreData {
        /// The step waited for.
        step: i64,
        /// The mode of the wait.
        mode: Mode,
        /// The last step the trial has.
        last_step: i64,
    },
    /// The job ended before every worker's collections file appeared.
    #[error("Training job has ended. All the collection files could not be loaded")]
    MissingCollectionFiles,
    /// An index file could not be used: corrupt or empty JSON, missing meta, bad file name.
    #[error("{message}")]
    IndexReaderException {
        /// What was wrong, naming the file.
        message: String,
    },
    /// A worker argument that is not among the step's workers.
    #[error("Invalid Worker: {worker}")]
    InvalidWorker {
        /// The worker asked for.
        worker: String,
    },
    /// A non-default collection with neither regexes nor tensor names.
    #[error("Collection {collection} has not been configured. Please fill in tensor_name or include_regex")]
    InvalidCollectionConfiguration {
        /// The collection's name.
        collection: String,
    },
    /// A rule's condition was met at a step.
    #[error("Evaluation of the rule {rule} at step {step} resulted in the condition being met")]
    RuleEvaluationConditionMet {
        /// The rule's name.
        rule: String,
        /// The step it fired at.
        step: i64,
        /// Whether the rule asks to end evaluation altogether.
        end_of_rule: bool,
    },
    /// A rule cannot be evaluated with the data at hand.
    #[error("Insufficient information to invoke rule {rule}: {message}")]
    InsufficientInformationForRuleInvocation {
        /// The rule's name.
        rule: String,
        /// Why.
        message: String,
    },
}

/// A constructor argument of the Python exception class of an [`AnalysisError`], as the
/// class takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PythonArg<'a> {
    /// A `str`.
    Str(&'a str),
    /// An `int`.
    Int(i64),
    /// A `bool`.
    Bool(bool),
    /// A member of `ModeKeys`.
    Mode(Mode),
}

impl AnalysisError {
    /// The keyword arguments of the constructor of the Python class of this condition (the
    /// variant's name) that make the exception of this condition: the
    /// original's parameter names (`tname`, `step`, `mode`, …), which are also the
    /// attributes it sets. The Python binding builds its exceptions from these alone.
    pub fn python_args(&self) -> Vec<(&'static str, PythonArg<'_>)> {
        use PythonArg::{Bool, Int, Mode, Str};
        match self {
            AnalysisError::TensorUnavailable { tensor } => vec![("tname", Str(tensor))],
            AnalysisError::TensorUnavailableForStep {
                tensor,
                step,
                mode,
                has_reductions,
            } => vec![
                ("tname", Str(tensor)),
                ("step", Int(*step)),
                ("mode", Mode(*mode)),
                ("has_reductions", Bool(*has_reductions)),
            ],
            AnalysisError::ShapeUnavailableForStep { tensor, step, mode } => vec![
                ("tname", Str(tensor)),
                ("step", Int(*step)),
                ("mode", Mode(*mode)),
            ],
            AnalysisError::StepUnavailable { step, mode }
            | AnalysisError::StepNotYetAvailable { step, mode } => {
                vec![("step", Int(*step)), ("mode", Mode(*mode))]
            }
            AnalysisError::NoMoreData {
                step,
                mode,
                last_step,
            } => vec![
                ("step", Int(*step)),
                ("mode", Mode(*mode)),
                ("last_step", Int(*last_step)),
            ],
            AnalysisError::MissingCollectionFiles => vec![],
            AnalysisError::IndexReaderException { message } => vec![("message", Str(message))],
            AnalysisError::InvalidWorker { worker } => vec![("worker", Str(worker))],
            AnalysisError::InvalidCollectionConfiguration { collection } => {
                vec![("c_name", Str(collection))]
            }
            AnalysisError::RuleEvaluationConditionMet {
                rule,
                step,
                end_of_rule,
            } => vec![
                ("rule_name", Str(rule)),
                ("step", Int(*step)),
                ("end_of_rule", Bool(*end_of_rule)),
            ],
            AnalysisError::InsufficientInformationForRuleInvocation { rule, message } => {
                vec![("rule_name", Str(rule)), ("message", Str(message))]
            }
        }
    }

    /// The state a step query ended in, for the step conditions; `None` for the others.
    pub fn step_state(&self) -> Option<StepState> {
        match self {
            AnalysisError::StepUnavailable { .. } => Some(StepState::Unavailable),
            AnalysisError::StepNotYetAvailable { .. } => Some(StepState::NotYetAvailable),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_original() {
        let e = AnalysisError::TensorUnavailableForStep {
            tensor: "w".into(),
            step: 3,
            mode: Mode::Eval,
            has_reductions: true,
        };
        assert_eq!(
            e.to_string(),
            "Value for tensor w is not available for step 3 with mode EVAL as it was not saved.\
             This tensor has reductions saved for this step. You might want to query for the reductions."
        );
        let e = AnalysisError::TensorUnavailableForStep {
            tensor: "w".into(),
            step: 3,
            mode: Mode::Eval,
            has_reductions: false,
        };
        assert!(e.to_string().ends_with("as it was not saved."));
        assert_eq!(
            AnalysisError::StepUnavailable {
                step: 9,
                mode: Mode::Global
            }
            .to_string(),
            "Step 9 of mode GLOBAL is not available as it was not saved"
        );
        assert_eq!(
            AnalysisError::NoMoreData {
                step: 9,
                mode: Mode::Train,
                last_step: 4
            }
            .to_string(),
            "Looking for step 9 of mode TRAIN and reached end of training. Max step available is 4"
        );
        assert_eq!(
            AnalysisError::InvalidWorker {
                worker: "w9".into()
            }
            .to_string(),
            "Invalid Worker: w9"
        );
        assert_eq!(
            AnalysisError::RuleEvaluationConditionMet {
                rule: "R".into(),
                step: 2,
                end_of_rule: false
            }
            .to_string(),
            "Evaluation of the rule R at step 2 resulted in the condition being met"
        );
    }

    #[test]
    fn python_args_are_the_original_constructor_parameters() {
        let e = AnalysisError::NoMoreData {
            step: 9,
            mode: Mode::Train,
            last_step: 4,
        };
        assert_eq!(
            e.python_args(),
            [
                ("step", PythonArg::Int(9)),
                ("mode", PythonArg::Mode(Mode::Train)),
                ("last_step", PythonArg::Int(4))
            ]
        );
        let e = AnalysisError::TensorUnavailable { tensor: "w".into() };
        assert_eq!(e.python_args(), [("tname", PythonArg::Str("w"))]);
        assert!(AnalysisError::MissingCollectionFiles
            .python_args()
            .is_empty());
    }

    #[test]
    fn step_states() {
        assert_eq!(
            AnalysisError::StepNotYetAvailable {
                step: 1,
                mode: Mode::Train
            }
            .step_state(),
            Some(StepState::NotYetAvailable)
        );
        assert_eq!(AnalysisError::MissingCollectionFiles.step_state(), None);
        assert_eq!(
            [
                StepState::Unavailable,
                StepState::Available,
                StepState::NotYetAvailable
            ]
            .map(|s| s.as_int()),
            [0, 1, 2]
        );
    }
}
