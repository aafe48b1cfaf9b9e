//! Where the SageMaker configuration files are: the environment variables and default
//! paths smdebug reads, and the TensorBoard config. `HookConfig::locate` (in the parent
//! module) reads the file `hook_config_path` names.

use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, PyValue};
use std::path::{Path, PathBuf};

/// Environment variable naming the hook JSON file.
pub const CONFIG_FILE_PATH_ENV: &str = "SMDEBUG_CONFIG_FILE_PATH";
/// Where SageMaker puts the hook JSON file.
pub const DEFAULT_CONFIG_FILE_PATH: &str = "/opt/ml/input/config/debughookconfig.json";
/// Environment variable naming the TensorBoard output config (`{"LocalPath": …}`).
pub const TENSORBOARD_CONFIG_FILE_PATH_ENV: &str = "TENSORBOARD_CONFIG_FILE_PATH";
/// Default TensorBoard output config path.
pub const DEFAULT_TENSORBOARD_CONFIG_FILE_PATH: &str =
    "/opt/ml/input/config/tensorboardoutputconfig.json";
/// Environment variable naming the checkpoint config (spot training state).
pub const CHECKPOINT_CONFIG_FILE_PATH_ENV: &str = "CHECKPOINT_CONFIG_FILE_PATH";
/// Default checkpoint config path.
pub const DEFAULT_CHECKPOINT_CONFIG_FILE_PATH: &str = "/opt/ml/input/config/checkpointconfig.json";
/// Environment variable whose presence means "running as a SageMaker job".
pub const TRAINING_JOB_NAME_ENV: &str = "TRAINING_JOB_NAME";
/// Default output directory (`LocalPath`) when the JSON does not give one.
pub const DEFAULT_SAGEMAKER_OUTDIR: &str = "/opt/ml/output/tensors";

/// The hook JSON path: `explicit`, else `$SMDEBUG_CONFIG_FILE_PATH`, else
/// [`DEFAULT_CONFIG_FILE_PATH`].
pub fn hook_config_path(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    std::env::var_os(CONFIG_FILE_PATH_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_FILE_PATH))
}

/// The TensorBoard output config path: `$TENSORBOARD_CONFIG_FILE_PATH` or its default.
pub fn tensorboard_config_path() -> PathBuf {
    std::env::var_os(TENSORBOARD_CONFIG_FILE_PATH_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_TENSORBOARD_CONFIG_FILE_PATH))
}

/// SageMaker's TensorBoard output configuration, the JSON object at
/// [`tensorboard_config_path`] (`{"LocalPath": "/opt/ml/output/tensorboard"}`): where a
/// SageMaker job's hook writes TensorBoard summaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorBoardConfig {
    /// `LocalPath`; `None` when it is absent or `null`, which smdebug reads as "no
    /// TensorBoard output".
    pub local_path: Option<String>,
}

impl TensorBoardConfig {
    /// Parses the JSON text. Where smdebug raises (not JSON, not an object, a `LocalPath`
    /// that is not a string), this is an error naming the place.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        let text = pyjson::utf8_text(bytes)?;
        let v = pyjson::parse(text)?;
        let PyValue::Object(_) = v else {
            return Err(invalid("", &v, "an object"));
        };
        let local_path = match v.get("LocalPath") {
            None | Some(PyValue::Null) => None,
            Some(PyValue::Str(s)) => Some(s.clone()),
            Some(other) => return Err(invalid("LocalPath", other, "a string")),
        };
        Ok(TensorBoardConfig { local_path })
    }

    /// Finds the file as smdebug does (`explicit`, else [`tensorboard_config_path`]) and
    /// parses it; `Ok(None)` when there is no such file (smdebug: no TensorBoard output).
    pub fn locate(explicit: Option<&Path>) -> Result<Option<Self>, ConfigError> {
        let path = explicit.map_or_else(tensorboard_config_path, Path::to_path_buf);
        if !path.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).map_err(|e| ConfigError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_slice(&bytes).map(Some)
    }
}

/// Whether this process runs as a SageMaker job (`TRAINING_JOB_NAME` is set).
pub fn is_sagemaker_job() -> bool {
    std::env::var_os(TRAINING_JOB_NAME_ENV).is_some()
}
