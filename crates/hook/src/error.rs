//! The errors of the hook.

use smdebug_config::{ConfigError, Mode, ShouldSaveError};
use smdebug_index::LayoutError;
use smdebug_storage::StorageError;
use std::sync::Arc;

/// What can go wrong building or running a [`Hook`](crate::Hook).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The output location already holds a finished trial (`training_job_end.ts` exists).
    /// smdebug refuses to mix two jobs in one trial, and so does this hook.
    #[error(
        "{location} already holds a finished trial (training_job_end.ts exists); \
         choose a new out_dir or remove the old trial"
    )]
    FinishedTrial {
        /// The location given as `out_dir`.
        location: String,
    },
    /// Listing, reading or writing the trial failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A configuration (collection, save config, hook JSON) is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A worker name or step cannot be turned into a trial file name.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A tensor cannot be encoded as smdebug encodes tensors (e.g. a 2-d string tensor).
    #[error("tensor {name:?}: {source}")]
    Encode {
        /// The tensor (or reduction) name.
        name: String,
        /// The cause.
        source: smdebug_record::RecordError,
    },
    /// A collection that is not one of the framework's defaults has neither include
    /// regexes nor tensor names (smdebug's `InvalidCollectionConfiguration`).
    #[error("collection {name:?} has neither include regexes nor tensor names")]
    InvalidCollectionConfiguration {
        /// The collection.
        name: String,
    },
    /// A collection's save config cannot decide a step (a mode without config, or
    /// `save_interval` 0).
    #[error("collection {collection:?} cannot decide step {step} of mode {mode}: {source}")]
    SaveConfig {
        /// The collection.
        collection: String,
        /// The mode.
        mode: Mode,
        /// The mode step.
        step: i64,
        /// The cause.
        source: ShouldSaveError,
    },
    /// `save_scalar` got a value that does not have exactly one element.
    #[error("scalar {name:?} has {len} elements; a scalar needs exactly one")]
    NotAScalar {
        /// The scalar's name (with the `scalar/` prefix).
        name: String,
        /// Its number of elements.
        len: usize,
    },
    /// A tensor was given before the first [`Hook::step`](crate::Hook::step): there is no
    /// step to save it in yet.
    #[error(
        "tensor {name:?} given before the first step(); call hook.step() at the start of each step"
    )]
    NoStep {
        /// The tensor name.
        name: String,
    },
    /// The hook JSON configuration could not be read.
    #[error("hook configuration {path}: {source}")]
    HookConfig {
        /// The file.
        path: String,
        /// The cause.
        source: ConfigError,
    },
    /// SageMaker's TensorBoard configuration file exists but is not one (not JSON, not an
    /// object, or a `LocalPath` that is not a string).
    #[error("TensorBoard configuration {path}: {source}")]
    TensorBoardConfig {
        /// The file.
        path: String,
        /// The cause.
        source: ConfigError,
    },
    /// No hook configuration file exists where SageMaker puts it (or where
    /// `SMDEBUG_CONFIG_FILE_PATH` points).
    #[error("no hook configuration file at {path}")]
    NoHookConfig {
        /// The path that was looked at.
        path: String,
    },
    /// The writer thread failed earlier; its first failure is reported here (by this and
    /// every later call), and nothing more is written.
    #[error("the writer thread failed: {source}")]
    WriterFailed {
        /// The first failure of the writer thread (shared: every later call reports it).
        #[source]
        source: Arc<WriterError>,
    },
    /// The writer thread ended without reporting a failure: it panicked.
    #[error("the writer thread panicked")]
    WriterPanicked,
    /// The queue to the writer thread is closed: the hook is being closed.
    #[error("the hook is closed")]
    Closed,
    /// The writer thread could not be started.
    #[error("cannot start the writer thread: {0}")]
    Thread(#[source] std::io::Error),
    /// [`Hook::save_bytes`](crate::Hook::save_bytes) got bytes that are not a numeric
    /// tensor of the given dtype and shape.
    #[error("tensor {name:?}: {len} bytes are not a {dtype} tensor of shape {shape:?}")]
    TensorBytes {
        /// The tensor's name.
        name: String,
        /// The dtype given.
        dtype: &'static str,
        /// The shape given.
        shape: Vec<usize>,
        /// How many bytes came.
        len: usize,
    },
    /// A builder setting is out of range.
    #[error("invalid hook setting {setting}: {reason}")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// What failed on the writer thread or its I/O thread. The first failure is kept and
/// reported as [`HookError::WriterFailed`]; after it nothing more is written, since a trial
/// with a hole in the middle would look complete to a reader.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriterError {
    /// Storing an object failed: an events, index, collections or TensorBoard file. The
    /// storage error names the store; `key` is the object's key in it.
    #[error("writing {key}: {source}")]
    Store {
        /// The object's key, relative to its store (the trial, or the TensorBoard folder).
        key: String,
        /// The cause.
        #[source]
        source: StorageError,
    },
    /// A tensor (or one of its reductions) cannot be encoded as smdebug encodes tensors
    /// (e.g. a 2-d string tensor).
    #[error("encoding tensor {name:?} of step {step}: {source}")]
    Encode {
        /// The tensor (or reduction tensor) name.
        name: String,
        /// The global step it was saved at.
        step: i64,
        /// The cause.
        #[source]
        source: smdebug_record::RecordError,
    },
    /// A value handed over by [`crate::Hook::save_deferred`] could not be made.
    #[error("converting tensor {name:?} of step {step}: {message}")]
    Convert {
        /// The tensor name.
        name: String,
        /// The global step it was saved at.
        step: i64,
        /// What the conversion said.
        message: String,
    },
    /// A step or worker cannot be turned into a file name.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The I/O thread could not be started.
    #[error("cannot start the I/O thread: {0}")]
    IoThread(#[source] std::io::Error),
    /// The I/O threads are gone (one panicked) with steps still to store.
    #[error("the I/O thread stopped")]
    IoThreadStopped,
}

/// The result type of this crate.
pub type Result<T, E = HookError> = std::result::Result<T, E>;
