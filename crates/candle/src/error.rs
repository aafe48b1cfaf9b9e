//! Errors of the candle adapter.

use thiserror::Error;

/// An error of the candle adapter, naming the tensor it happened on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CandleError {
    /// candle failed to read a tensor (device download, dtype cast, layout).
    #[error("candle could not read tensor {name:?}: {source}")]
    Candle {
        /// The smdebug name of the tensor.
        name: String,
        /// candle's error.
        #[source]
        source: candle_core::Error,
    },
    /// The element count did not fit the shape (a candle invariant broken).
    #[error("tensor {name:?}: {message} (shape {shape:?})")]
    Shape {
        /// The smdebug name of the tensor.
        name: String,
        /// The shape candle reported.
        shape: Vec<usize>,
        /// ndarray's message.
        message: String,
    },
    /// A loss or metric that should be one value has several.
    #[error("tensor {name:?} should hold one value but holds {elements}")]
    NotScalar {
        /// The smdebug name of the tensor.
        name: String,
        /// Its element count.
        elements: usize,
    },
    /// Two parameters map to the same smdebug name.
    #[error("two parameters are both named {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A collection could not be configured (bad regex).
    #[error("collection {collection:?}: {message}")]
    Config {
        /// The collection.
        collection: String,
        /// What was wrong.
        message: String,
    },
    /// The hook refused a call.
    #[error(transparent)]
    Hook(#[from] smdebug_hook::HookError),
}

/// The adapter's result type.
pub type Result<T, E = CandleError> = std::result::Result<T, E>;
