//! Errors of an export.

use smdebug_storage::StorageError;
use smdebug_trial::TrialError;

/// An export that could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The trial could not be opened or read.
    #[error("reading the trial: {0}")]
    Trial(#[from] TrialError),
    /// An output file could not be stored.
    #[error("writing {key}: {source}")]
    Write {
        /// The file's key relative to the output.
        key: String,
        /// The storage error.
        source: StorageError,
    },
    /// The output location could not be opened.
    #[error("opening the output {location}: {source}")]
    Output {
        /// The output location as given.
        location: String,
        /// The storage error.
        source: StorageError,
    },
    /// Encoding a table failed.
    #[error("encoding a table: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Encoding a Parquet file failed.
    #[error("encoding a Parquet file: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// With `strict`: a record could not be read.
    #[error("unreadable {what}: {message}")]
    BadRecord {
        /// What could not be read (which record of which tensor, step and worker).
        what: String,
        /// The global step.
        step: i64,
        /// The worker.
        worker: String,
        /// What went wrong (names the file and offset).
        message: String,
    },
    /// With `strict`: an index file could not be parsed.
    #[error("unreadable index file of step {step}: {message}")]
    BadIndexFile {
        /// The global step of the file.
        step: i64,
        /// What went wrong (names the file).
        message: String,
    },
    /// An option that cannot be used.
    #[error("invalid option: {0}")]
    InvalidOption(String),
}

/// Result of this crate.
pub type Result<T, E = ExportError> = std::result::Result<T, E>;
