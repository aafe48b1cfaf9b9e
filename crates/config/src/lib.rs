//! Configuration types of smdebug and their JSON forms, byte-compatible with smdebug 1.0.34:
//! [`Mode`]; when to save ([`SaveConfig`], [`SaveConfigMode`]); what to save
//! ([`ReductionConfig`]); groups of tensors ([`Collection`], [`CollectionManager`], with the
//! collections file `collections/000000000/<worker>_collections.json`); and the SageMaker hook
//! configuration ([`HookConfig`], `debughookconfig.json`).
//!
//! Tensor names are matched against collection regexes with Python `re.search` semantics
//! ([`PyRegex`]), including the look-around smdebug's own defaults use.
//!
//! ```
//! use smdebug_config::{CollectionManager, Framework, Mode, SaveConfig, SaveConfigMode};
//!
//! // smdebug's documented example: interval 100 ending (exclusively) at 201 saves 0, 100, 200.
//! let cfg = SaveConfig::new(SaveConfigMode { save_interval: 100, end_step: Some(201), ..Default::default() });
//! let saved: Vec<i64> = (0..1000).filter(|&s| cfg.should_save(Mode::Train, s).unwrap()).collect();
//! assert_eq!(saved, [0, 100, 200]);
//!
//! // PyTorch's default collections, as a collections file smdebug can load.
//! let cm = CollectionManager::with_defaults(Framework::PyTorch).unwrap();
//! assert_eq!(cm.collections_containing("gradient/fc1.weight").unwrap(), ["gradients"]);
//! let file = cm.to_json();
//! assert_eq!(CollectionManager::from_json(&file).unwrap().to_json(), file);
//! ```
#![deny(missing_docs, unsafe_code)]

mod collection;
mod error;
mod framework;
mod hook_config;
mod mode;
pub mod pyjson;
mod pyjson_de;
mod pyregex;
mod pystr;
mod reduction_config;
mod save_config;

#[cfg(test)]
mod proptests;

pub use collection::{keys, Collection, CollectionManager};
pub use error::{ConfigError, ShouldSaveError};
pub use framework::{Framework, ParseFrameworkError, ReductionShape};
pub use hook_config::{
    hook_config_path, is_sagemaker_job, tensorboard_config_path, CollectionConfig, HookConfig,
    HookParameters, IncludeWorkers, ModeSaveParams, SaveParams, TensorBoardConfig,
    CHECKPOINT_CONFIG_FILE_PATH_ENV, CONFIG_FILE_PATH_ENV, DEFAULT_CHECKPOINT_CONFIG_FILE_PATH,
    DEFAULT_CONFIG_FILE_PATH, DEFAULT_SAGEMAKER_OUTDIR, DEFAULT_TENSORBOARD_CONFIG_FILE_PATH,
    TENSORBOARD_CONFIG_FILE_PATH_ENV, TRAINING_JOB_NAME_ENV,
};
pub use mode::{Mode, ParseModeError};
pub use pyjson::{JsonSyntaxError, PyValue};
pub use pyjson_de::PyValueDeserializer;
pub use pyregex::PyRegex;
pub use pystr::{is_python_whitespace, python_strip};
pub use reduction_config::{HealthSummary, ReductionConfig, ReductionKind};
pub use save_config::{SaveConfig, SaveConfigMode, DEFAULT_SAVE_INTERVAL};
/// The one reduction type of the workspace, defined by `smdebug-reduce` (which computes
/// them) and used here in [`ReductionConfig`].
pub use smdebug_reduce::{Reduction, ReductionRequest};
