//! The one error type of the crate.

use smdebug_storage::StorageError;
use smdebug_trial::TrialError;
use std::fmt;

use crate::check::BadRecord;

/// Everything a diagnosis can fail with. What a diagnosis *finds* (a corrupt record, a
/// missing file) is data in its report, not an error; these are the failures to look at
/// the trial at all, and [`DiagnoseError::NotSealed`], `seal`'s refusal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnoseError {
    /// The trial location does not parse.
    #[error("bad trial path {path}")]
    Location {
        /// The location, as given.
        path: String,
        /// Why it does not parse.
        #[source]
        source: StorageError,
    },
    /// The trial's storage cannot be opened.
    #[error("cannot open trial {path}")]
    Open {
        /// The location.
        path: String,
        /// What failed.
        #[source]
        source: StorageError,
    },
    /// The trial's files cannot be listed.
    #[error("cannot list trial {path}")]
    List {
        /// The location.
        path: String,
        /// What failed.
        #[source]
        source: StorageError,
    },
    /// A file of the trial cannot be read.
    #[error("cannot read {file}")]
    Read {
        /// The file's key, relative to the trial.
        file: String,
        /// What failed.
        #[source]
        source: StorageError,
    },
    /// Writing a sealed index file failed (the error names the store and the key).
    #[error(transparent)]
    Write(StorageError),
    /// A trial query failed (the error names the file and, for records, the offset).
    #[error(transparent)]
    Trial(#[from] TrialError),
    /// `seal` refused: some records or index files do not parse, so nothing was written.
    #[error(
        "not sealed: {} record(s) or index file(s) fail to parse; nothing was written:\n  {}",
        .problems.len(),
        Joined(.problems)
    )]
    NotSealed {
        /// Each index file or record that fails, in key order.
        problems: Vec<SealProblem>,
    },
}

/// Why `seal` refuses a trial: one index file or record that fails.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SealProblem {
    /// An index file that does not parse.
    CorruptIndex {
        /// Its key.
        file: String,
        /// The parse error.
        error: String,
    },
    /// A record an index file lists that cannot be trusted.
    BadRecord {
        /// The record.
        record: BadRecord,
    },
}

impl fmt::Display for SealProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealProblem::CorruptIndex { file, error } => write!(f, "{file}: {error}"),
            SealProblem::BadRecord { record } => record.fmt(f),
        }
    }
}

/// Problems one per line, as `NotSealed` prints them.
struct Joined<'a>(&'a [SealProblem]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n  ")?;
            }
            p.fmt(f)?;
        }
        Ok(())
    }
}
