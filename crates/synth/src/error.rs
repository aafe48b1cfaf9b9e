//! The errors of this crate.

use std::path::PathBuf;

use smdebug_config::{ConfigError, JsonSyntaxError};
use smdebug_hook::HookError;
use smdebug_index::LayoutError;
use smdebug_storage::StorageError;

/// What can go wrong reading a recipe, generating its values or writing a trial.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// The recipe file could not be read.
    #[error("cannot read recipe {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The recipe is not JSON.
    #[error("{origin} is not valid JSON: {source}")]
    Json {
        /// Where the recipe came from (a path, or a name the caller gave).
        origin: String,
        /// The syntax error, with its byte offset.
        source: JsonSyntaxError,
    },
    /// The recipe is JSON but not a recipe: an unknown key (refused as `fixture.py` refuses
    /// it), a value of the wrong type, a name the format does not know.
    #[error("{origin}: {field}: {message}")]
    Recipe {
        /// Where the recipe came from.
        origin: String,
        /// Where in the recipe, e.g. `tensors[2].dtype` or `collections["w"].save_config`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor's values cannot be generated (a NaN or infinity for an integer dtype, an
    /// empty range, a shape too large).
    #[error("tensor {tensor:?}: {message}")]
    Value {
        /// The tensor's name.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// No tensor with this index in the normalized recipe.
    #[error("the recipe has no tensor with index {0}")]
    NoSuchTensor(usize),
    /// A worker index beyond the recipe's workers.
    #[error("worker index {index}: the recipe has {workers} workers")]
    NoSuchWorker {
        /// The index asked for.
        index: usize,
        /// How many workers the recipe has.
        workers: usize,
    },
    /// Writing one worker's part of the trial failed.
    #[error("worker {worker}: {source}")]
    Worker {
        /// The worker's name.
        worker: String,
        /// The cause.
        source: Box<SynthError>,
    },
    /// The hook refused something or failed to write.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// A collection could not be built (a regex Python's `re` would refuse).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file name of the trial layout could not be made (e.g. a bad worker name).
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A tensor could not be encoded.
    #[error(transparent)]
    Record(#[from] smdebug_record::RecordError),
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// `Result` with [`SynthError`].
pub type Result<T, E = SynthError> = std::result::Result<T, E>;
