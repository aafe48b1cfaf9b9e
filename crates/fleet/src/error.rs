//! The one error type of this crate.

use std::path::PathBuf;

/// What can go wrong while finding, running or watching a fleet of trials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// A location string did not parse or its store could not be opened or listed.
    #[error("{location}: {source}")]
    Storage {
        /// The location as given.
        location: String,
        /// What the store said.
        #[source]
        source: smdebug_storage::StorageError,
    },
    /// A trial failed and the run was strict.
    #[error("trial {trial}: {source}")]
    Trial {
        /// The trial's fleet name.
        trial: String,
        /// Its error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Reading or writing the watcher's state file or firing log failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The watcher's state file or firing log holds something it cannot have written.
    #[error("{}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line where there is one.
        reason: String,
    },
    /// A rule cannot be watched as asked (unknown name, bad parameter, a wall-clock rule).
    #[error("rule {rule}: {reason}")]
    Rule {
        /// The rule's label.
        rule: String,
        /// Why.
        reason: String,
    },
    /// The options contradict each other or name nothing.
    #[error("{0}")]
    InvalidOptions(String),
}

/// This crate's result type.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;
