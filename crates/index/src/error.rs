use std::fmt;

/// Shows at most this many characters of a name or path in an error message; the error value
/// still carries the whole string.
const SHOWN_CHARS: usize = 80;

/// Displays a possibly huge or hostile string abbreviated and debug-escaped, so an error
/// message stays one readable line even for a 10 kB worker name full of control characters.
pub(crate) struct Abbrev<'a>(pub &'a str);

impl fmt::Display for Abbrev<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.0.chars().count();
        if total <= SHOWN_CHARS {
            write!(f, "{:?}", self.0)
        } else {
            let head: String = self.0.chars().take(SHOWN_CHARS).collect();
            write!(f, "{head:?}… ({total} characters)")
        }
    }
}

/// What is wrong with a worker name that would be put into a file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerNameProblem {
    /// The name is empty.
    Empty,
    /// The name is longer than [`crate::MAX_WORKER_NAME_BYTES`] bytes.
    TooLong,
    /// The name contains `/` or `\`: it would create directories (serialize TF device names
    /// with [`crate::serialize_tf_device`] first).
    PathSeparator,
    /// The name contains `..`.
    DotDot,
    /// The name contains NUL or another control character.
    ControlCharacter,
}

impl fmt::Display for WorkerNameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerNameProblem::Empty => "it is empty",
            WorkerNameProblem::TooLong => {
                return write!(
                    f,
                    "it is longer than {} bytes",
                    crate::MAX_WORKER_NAME_BYTES
                )
            }
            WorkerNameProblem::PathSeparator => {
                "it contains a path separator ('/' or '\\'; serialize TF device names first)"
            }
            WorkerNameProblem::DotDot => "it contains '..'",
            WorkerNameProblem::ControlCharacter => "it contains NUL or a control character",
        })
    }
}

/// An error about names and paths in a trial: a worker name that cannot become part of a file
/// name, a file whose name does not follow the layout, or a key that would leave the trial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// A worker name was refused before it became part of a file name.
    #[error("invalid worker name {}: {problem}", Abbrev(.worker))]
    InvalidWorker {
        /// The refused name, complete.
        worker: String,
        /// Why it was refused.
        problem: WorkerNameProblem,
    },
    /// A file that sits where a trial file would be does not have a valid name
    /// (Python raises `IndexReaderException("Invalid File Found: …")` for these).
    #[error("invalid file found: {}: {reason}", Abbrev(.path))]
    InvalidFileName {
        /// The path or key of the file.
        path: String,
        /// What does not match.
        reason: &'static str,
    },
    /// The step in a file name is a number outside the 64-bit range.
    #[error("invalid file found: {}: step {} does not fit in 64 bits", Abbrev(.path), Abbrev(.step))]
    StepOutOfRange {
        /// The path or key of the file.
        path: String,
        /// The step text.
        step: String,
    },
    /// A key relative to the trial root would not stay inside the trial.
    #[error("unsafe relative key {}: {reason}", Abbrev(.key))]
    UnsafeKey {
        /// The refused key.
        key: String,
        /// Why.
        reason: &'static str,
    },
}

/// An error reading an index file: the file is not valid JSON, or a field is missing, has the
/// wrong type or an impossible value. The counterpart of smdebug's `IndexReaderException`
/// (plus the `KeyError`/`TypeError`s its reader raises for the same files).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexFileError {
    /// Not JSON at all (smdebug: "Empty/Corrupt Index File").
    #[error("index file {}: empty/corrupt index file: {message} at line {line} column {column}", Abbrev(.file))]
    Corrupt {
        /// The index file.
        file: String,
        /// The JSON parser's message.
        message: String,
        /// 1-based line of the error (0 at end of input).
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// A required field is absent.
    #[error("index file {}: missing field {field}", Abbrev(.file))]
    MissingField {
        /// The index file.
        file: String,
        /// The field, as a path (`meta.mode`, `tensor_payload[3].length`).
        field: String,
    },
    /// A field has the wrong JSON type.
    #[error("index file {}: field {field}: expected {expected}, found {found}", Abbrev(.file))]
    WrongType {
        /// The index file.
        file: String,
        /// The field, as a path.
        field: String,
        /// What was expected.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A number is negative, fractional, or too large for its field.
    #[error("index file {}: field {field}: {} is not {expected}", Abbrev(.file), Abbrev(.value))]
    OutOfRange {
        /// The index file.
        file: String,
        /// The field, as a path.
        field: String,
        /// The number as written.
        value: String,
        /// The range that was expected.
        expected: &'static str,
    },
    /// `meta.mode` names no mode (smdebug: `KeyError` from `ModeKeys[...]`).
    #[error("index file {}: field meta.mode: unknown mode {}", Abbrev(.file), Abbrev(.mode))]
    UnknownMode {
        /// The index file.
        file: String,
        /// The value found.
        mode: String,
    },
    /// `meta` is an empty object (smdebug: "meta section is empty").
    #[error("index file {}: meta section is empty", Abbrev(.file))]
    EmptyMeta {
        /// The index file.
        file: String,
    },
    /// Neither `tensor_payload` nor `shape_payload` is present (smdebug: "neither
    /// tensor_payload nor shape_payload sections are present").
    #[error("index file {}: neither tensor_payload nor shape_payload sections are present", Abbrev(.file))]
    NoPayload {
        /// The index file.
        file: String,
    },
}
