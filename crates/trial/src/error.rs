//! The one error type of the crate.

use crate::ErrorKind;
use smdebug_config::{ConfigError, Mode};
use smdebug_exceptions::AnalysisError;
use smdebug_index::{IndexFileError, LayoutError};
use smdebug_reduce::ReduceError;
use smdebug_storage::StorageError;
use std::time::Duration;

/// Everything a trial query can fail with.
///
/// The analysis conditions smdebug signals with its own exceptions (a step not yet written, a
/// tensor not saved, …) are [`TrialError::Analysis`]; the places where Python raises a
/// builtin exception (`KeyError`, `ValueError`) have their own variants; damaged or
/// unreadable files give typed errors naming the file (and the byte offset of the record).
/// [`TrialError::kind`] says what kind of failure it is, by the name of the exception the
/// Python original raises in the same situation, which is what the dump schema records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrialError {
    /// An smdebug analysis condition (`StepNotYetAvailable`, `TensorUnavailableForStep`, …).
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// Where Python raises a plain `KeyError` (a mode that was never seen in
    /// `tensor_names(mode=…)`, an unknown mode step with `step=`).
    #[error("KeyError: {key} ({context})")]
    KeyError {
        /// The missing key, as Python prints it.
        key: String,
        /// What was looked up.
        context: &'static str,
    },
    /// Where Python raises a plain `ValueError` (both `regex` and `collection` given).
    #[error("{message}")]
    ValueError {
        /// What was wrong.
        message: String,
    },
    /// An invalid argument the original rejects with an `assert` (`range_steps`).
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// What was wrong.
        message: String,
    },
    /// A reduction name that is not one of `min max mean std variance sum prod l1 l2`.
    #[error("Invalid reduction type {name}")]
    InvalidReduction {
        /// The name asked for.
        name: String,
    },
    /// Listing or reading the trial's storage failed (the error names store and key).
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// A file name under `index/`, `events/` or `collections/` that does not parse.
    #[error("{0}")]
    Layout(#[from] LayoutError),
    /// An index file that cannot be used (names the file and the field).
    #[error("{0}")]
    IndexFile(#[from] IndexFileError),
    /// A collections file that cannot be used.
    #[error("collections file {file}: {source}")]
    Collections {
        /// The file's key, relative to the trial root.
        file: String,
        /// What was wrong.
        #[source]
        source: ConfigError,
    },
    /// A damaged tensor record (the error names the event file and the record's offset).
    #[error("{0}")]
    Record(#[from] smdebug_record::RecordError),
    /// The record at an index entry's range is a valid record but not a tensor record of
    /// the expected name.
    #[error(
        "{file} at byte {offset}: the record holds tensor {found:?}, the index says {expected:?}"
    )]
    WrongRecord {
        /// The event file's key.
        file: String,
        /// Offset of the record.
        offset: u64,
        /// The tag the index file gives.
        expected: String,
        /// The tag found in the record.
        found: String,
    },
    /// The record at an index entry's range belongs to another step: the event file (or
    /// the index file) is a copy of another step's.
    #[error("{file} at byte {offset}: the record is of step {found}, the index file {index_file} says step {expected}")]
    WrongStep {
        /// The event file's key.
        file: String,
        /// Offset of the record.
        offset: u64,
        /// The index file that listed the record.
        index_file: String,
        /// The step the index file is for.
        expected: i64,
        /// The step written in the record.
        found: i64,
    },
    /// A reduction that cannot be computed for this value (numpy raises too).
    #[error("{tensor}: {source}")]
    Reduce {
        /// The tensor.
        tensor: String,
        /// numpy's failure.
        #[source]
        source: ReduceError,
    },
    /// A reduction numpy cannot compute for this dtype at all (strings; complex values for
    /// the operations complex numbers have no order for).
    #[error("{tensor}: reduction {reduction} is not supported for dtype {dtype}")]
    UnsupportedReduction {
        /// The tensor.
        tensor: String,
        /// The reduction asked for.
        reduction: String,
        /// The value's dtype name.
        dtype: &'static str,
        /// What numpy's failure is ([`ErrorKind::NoUfuncLoop`], [`ErrorKind::UnsupportedType`]).
        kind: ErrorKind,
    },
    /// A bounded wait ended before the condition was met.
    #[error("gave up waiting for {what} after {waited:?}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        waited: Duration,
    },
}

/// The crate's result type.
pub type Result<T, E = TrialError> = std::result::Result<T, E>;

impl TrialError {
    /// What kind of failure this is; its [`ErrorKind::as_str`] is what the dump records.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TrialError::Analysis(a) => a.into(),
            TrialError::KeyError { .. } => ErrorKind::MissingKey,
            TrialError::ValueError { .. } => ErrorKind::InvalidValue,
            TrialError::InvalidArgument { .. } => ErrorKind::FailedAssertion,
            TrialError::InvalidReduction { .. } => ErrorKind::InvalidOption,
            TrialError::Storage(_) => ErrorKind::Storage,
            TrialError::Layout(_) => ErrorKind::UnusableIndex,
            TrialError::IndexFile(IndexFileError::UnknownMode { .. }) => ErrorKind::MissingKey,
            TrialError::IndexFile(_) => ErrorKind::UnusableIndex,
            TrialError::Collections { source, .. } => source.into(),
            TrialError::Record(_)
            | TrialError::WrongRecord { .. }
            | TrialError::WrongStep { .. } => ErrorKind::DamagedRecord,
            TrialError::Reduce { source, .. } => source.into(),
            TrialError::UnsupportedReduction { kind, .. } => *kind,
            TrialError::Timeout { .. } => ErrorKind::Timeout,
        }
    }

    /// The analysis condition, if this is one.
    pub fn analysis(&self) -> Option<&AnalysisError> {
        match self {
            TrialError::Analysis(a) => Some(a),
            _ => None,
        }
    }

    pub(crate) fn tensor_unavailable_for_step(
        tensor: &str,
        step: i64,
        mode: Mode,
        has_reductions: bool,
    ) -> Self {
        TrialError::Analysis(AnalysisError::TensorUnavailableForStep {
            tensor: tensor.to_owned(),
            step,
            mode,
            has_reductions,
        })
    }
}
