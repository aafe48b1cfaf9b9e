//! [`HookBuilder`]: the settings of a hook, from code or from the SageMaker JSON
//! configuration. [`HookBuilder::build`], which checks them and assembles the hook, is in
//! `start.rs`.

use crate::error::{HookError, Result};
use crate::priority::WriterPriority;
use crate::queue::QueuePolicy;
use crate::recorder::FlightRecorder;
use crate::wall_time::WallTime;
use smdebug_config::{
    is_sagemaker_job, tensorboard_config_path, Collection, CollectionManager, Framework,
    HookConfig, IncludeWorkers, ReductionConfig, ReductionShape, SaveConfig, SaveConfigMode,
    TensorBoardConfig,
};
use smdebug_reduce::Flavor;
use smdebug_storage::{LocalSync, Storage, StorageOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`Hook`](crate::Hook).
///
/// Defaults are smdebug's PyTorch hook: the PyTorch default collections, only `losses`
/// always included, save interval 500, raw tensors only, `init_step` −1, worker `worker_0`
/// alone, PyTorch-flavoured 0-d reductions.
///
/// ```
/// use smdebug_config::{ReductionConfig, SaveConfig, SaveConfigMode};
/// use smdebug_hook::HookBuilder;
///
/// let dir = tempfile::tempdir()?;
/// let hook = HookBuilder::new(dir.path().join("trial").to_str().unwrap())
///     .save_config(SaveConfig::new(SaveConfigMode::every(10)))
///     .include_collections(["weights", "gradients"])
///     .reduction_config(ReductionConfig { save_raw_tensor: true, save_shape: true, ..Default::default() })
///     .build()?;
/// assert_eq!(hook.worker(), "worker_0");
/// hook.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct HookBuilder {
    pub(crate) out_dir: String,
    pub(crate) framework: Framework,
    pub(crate) default_collections: bool,
    pub(crate) hook_config: Option<HookConfig>,
    pub(crate) collections: Vec<Collection>,
    pub(crate) save_config: Option<SaveConfig>,
    pub(crate) reduction_config: Option<ReductionConfig>,
    pub(crate) include_collections: Option<Vec<String>>,
    pub(crate) include_regex: Vec<String>,
    pub(crate) save_all: bool,
    pub(crate) worker: String,
    pub(crate) num_workers: i64,
    pub(crate) include_workers: IncludeWorkers,
    pub(crate) init_step: i64,
    pub(crate) flavor: Option<Flavor>,
    pub(crate) reduction_shape: Option<ReductionShape>,
    pub(crate) queue_capacity: usize,
    pub(crate) queue_policy: QueuePolicy,
    pub(crate) wall_time: WallTime,
    pub(crate) export_tensorboard: bool,
    pub(crate) tensorboard_dir: Option<String>,
    pub(crate) write_collections: bool,
    pub(crate) end_marker: bool,
    pub(crate) stop_signal_file: Option<String>,
    pub(crate) stop_check_interval: Duration,
    pub(crate) storage_options: StorageOptions,
    pub(crate) storage: Option<Arc<dyn Storage>>,
    pub(crate) recorder: Option<FlightRecorder>,
    pub(crate) writer_priority: WriterPriority,
}

impl HookBuilder {
    /// A builder writing to `out_dir`: a local folder (`~` expanded) or an object-store URL
    /// (`s3://bucket/prefix`, ...; see `smdebug_storage::Location`).
    pub fn new(out_dir: impl Into<String>) -> Self {
        HookBuilder {
            out_dir: out_dir.into(),
            framework: Framework::PyTorch,
            default_collections: true,
            hook_config: None,
            collections: Vec::new(),
            save_config: None,
            reduction_config: None,
            include_collections: None,
            include_regex: Vec::new(),
            save_all: false,
            worker: "worker_0".into(),
            num_workers: 1,
            include_workers: IncludeWorkers::One,
            init_step: -1,
            flavor: None,
            reduction_shape: None,
            queue_capacity: 256,
            queue_policy: QueuePolicy::Block,
            writer_priority: WriterPriority::Normal,
            wall_time: WallTime::Now,
            export_tensorboard: false,
            tensorboard_dir: None,
            write_collections: true,
            end_marker: true,
            stop_signal_file: None,
            stop_check_interval: Duration::from_secs(1),
            // Python smdebug does not fsync either; files are still published by an
            // atomic rename, so a killed training process leaves only whole files.
            storage_options: StorageOptions {
                local_sync: LocalSync::RenameOnly,
                ..StorageOptions::default()
            },
            storage: None,
            recorder: None,
        }
    }

    /// A builder from a parsed SageMaker hook configuration (`debughookconfig.json`): its
    /// `LocalPath` as out_dir, the hook's save and reduction configs, `save_all`,
    /// `include_regex`, `include_workers`, TensorBoard settings (outside SageMaker; inside,
    /// the TensorBoard folder comes from the file at `TENSORBOARD_CONFIG_FILE_PATH`, and a
    /// malformed one is [`HookError::TensorBoardConfig`]), and every
    /// `CollectionConfigurations` entry as an included collection with its configs.
    pub fn from_hook_config(config: &HookConfig) -> Result<Self> {
        let mut b = HookBuilder::new(config.local_path.clone());
        let p = &config.hook;
        b.save_config = Some(p.save_config.clone());
        b.reduction_config = p.reduction_config.clone();
        b.save_all = p.save_all;
        b.include_regex = p.include_regex.clone().unwrap_or_default();
        b.include_workers = p.include_workers;
        if is_sagemaker_job() {
            b.tensorboard_dir = sagemaker_tensorboard_dir(&tensorboard_config_path())?;
        } else {
            b.export_tensorboard = p.export_tensorboard;
            b.tensorboard_dir = p.tensorboard_dir.clone();
        }
        // Applied on top of the framework's default collections when the hook starts
        // (smdebug's add_collections_to_manager), so a configured `weights` keeps its regex.
        config.apply_to(&mut CollectionManager::new())?;
        b.hook_config = Some(config.clone());
        b.include_collections = config
            .include_collections()
            .map(|names| names.into_iter().map(str::to_owned).collect());
        Ok(b)
    }

    /// A builder from the SageMaker hook configuration file: `SMDEBUG_CONFIG_FILE_PATH`, else
    /// `/opt/ml/input/config/debughookconfig.json`. A missing file is
    /// [`HookError::NoHookConfig`] (smdebug then creates no hook).
    pub fn from_sagemaker_config() -> Result<Self> {
        let path = smdebug_config::hook_config_path(None);
        Self::from_config_file(&path)
    }

    /// A builder from a hook configuration file.
    pub fn from_config_file(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Err(HookError::NoHookConfig {
                path: path.display().to_string(),
            });
        }
        let config = HookConfig::from_path(path).map_err(|source| HookError::HookConfig {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_hook_config(&config)
    }

    /// The framework whose defaults the hook starts with (PyTorch by default): its default
    /// and always-included collections, save interval, and the shape and flavor of its
    /// reductions (each overridable: [`HookBuilder::reduction_flavor`],
    /// [`HookBuilder::reduction_shape`]).
    pub fn framework(mut self, framework: Framework) -> Self {
        self.framework = framework;
        self
    }

    /// Start with no collections at all (and none always included): only collections added
    /// with [`HookBuilder::collection`] or [`Hook::get_collection`](crate::Hook::get_collection) exist. The framework
    /// still chooses the default save interval and the reduction flavour.
    pub fn without_default_collections(mut self) -> Self {
        self.default_collections = false;
        self
    }

    /// Adds a collection (replacing one of the same name, keeping its position).
    pub fn collection(mut self, collection: Collection) -> Self {
        self.collections.retain(|c| c.name != collection.name);
        self.collections.push(collection);
        self
    }

    /// The hook's save config: used by every collection without its own, and filling the
    /// modes a collection's own config leaves out. Default: interval 500 in every mode
    /// (10 for XGBoost).
    pub fn save_config(mut self, config: SaveConfig) -> Self {
        self.save_config = Some(config);
        self
    }

    /// The hook's reduction config, used by collections without their own. Default: the raw
    /// tensor only.
    pub fn reduction_config(mut self, config: ReductionConfig) -> Self {
        self.reduction_config = Some(config);
        self
    }

    /// The collections to save, in addition to the framework's always-included ones.
    pub fn include_collections<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.include_collections = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Regexes (Python syntax, matched anywhere in the name) added to the `default`
    /// collection, which is then saved.
    pub fn include_regex<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.include_regex
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Save every tensor (the `all` collection, regex `.*`).
    pub fn save_all(mut self, save_all: bool) -> Self {
        self.save_all = save_all;
        self
    }

    /// This process's worker name and the number of workers of the job that write into the
    /// same trial (recorded as `_meta.num_workers`; a reader waits for that many collections
    /// files). Every worker writes (`include_workers="all"`).
    pub fn worker(mut self, name: impl Into<String>, num_workers: i64) -> Self {
        self.worker = name.into();
        self.num_workers = num_workers;
        self.include_workers = IncludeWorkers::All;
        self
    }

    /// `include_workers`: with [`IncludeWorkers::One`] only `worker_0` writes, and records
    /// `num_workers` 1.
    pub fn include_workers(mut self, include: IncludeWorkers) -> Self {
        self.include_workers = include;
        self
    }

    /// The step counters' initial value: −1 for callback hooks (the first
    /// [`Hook::step`](crate::Hook::step) makes it 0), 0 for TensorFlow session hooks.
    pub fn init_step(mut self, init_step: i64) -> Self {
        self.init_step = init_step;
        self
    }

    /// How reductions are computed (default: the framework's,
    /// [`Framework::reduction_flavor`]).
    pub fn reduction_flavor(mut self, flavor: Flavor) -> Self {
        self.flavor = Some(flavor);
        self
    }

    /// The shape of saved reductions (default: the framework's,
    /// [`Framework::reduction_shape`]).
    pub fn reduction_shape(mut self, shape: ReductionShape) -> Self {
        self.reduction_shape = Some(shape);
        self
    }

    /// How many jobs (one per saved tensor, plus step boundaries) may wait for the writer
    /// thread (default 256). Memory held by the queue is at most this many tensors.
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity;
        self
    }

    /// What to do when the queue is full (default [`QueuePolicy::Block`]).
    pub fn queue_policy(mut self, policy: QueuePolicy) -> Self {
        self.queue_policy = policy;
        self
    }

    /// The scheduling priority of the writer and I/O threads (default
    /// [`WriterPriority::Normal`];
    /// [`WriterPriority::Background`] makes them run in
    /// the gaps the training leaves instead of preempting its threads).
    pub fn writer_priority(mut self, priority: WriterPriority) -> Self {
        self.writer_priority = priority;
        self
    }

    /// The `wall_time` of events (default: now).
    pub fn wall_time(mut self, wall_time: WallTime) -> Self {
        self.wall_time = wall_time;
        self
    }

    /// Write TensorBoard summaries to `<out_dir>/tensorboard` (when no TensorBoard folder is
    /// given).
    pub fn export_tensorboard(mut self, export: bool) -> Self {
        self.export_tensorboard = export;
        self
    }

    /// Write TensorBoard summaries to this folder or URL (even without
    /// [`HookBuilder::export_tensorboard`], as smdebug does).
    pub fn tensorboard_dir(mut self, dir: impl Into<String>) -> Self {
        self.tensorboard_dir = Some(dir.into());
        self
    }

    /// Whether this worker writes its collections file (default true). smdebug's hook always
    /// does; tools that reproduce fixtures where some workers do not can turn it off.
    pub fn write_collections(mut self, write: bool) -> Self {
        self.write_collections = write;
        self
    }

    /// Whether close writes `training_job_end.ts` (default true; never in SageMaker jobs,
    /// whatever this says, as smdebug leaves it to SageMaker). Turn it off for one of
    /// several hooks of a job that must not end the trial.
    pub fn end_marker(mut self, write: bool) -> Self {
        self.end_marker = write;
        self
    }

    /// The stop-signal object, relative to the trial (default:
    /// `$SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE`, else
    /// [`smdebug_index::DEFAULT_STOP_SIGNAL_FILE`]; see [`smdebug_index::stop_signal_key`]).
    pub fn stop_signal_file(mut self, name: impl Into<String>) -> Self {
        self.stop_signal_file = Some(name.into());
        self
    }

    /// Turns the flight recorder on ([`FlightRecorder`]): the last
    /// `recorder.steps` steps of the recorded collections are kept in full in memory, even
    /// at steps the save config does not save, and written into the trial as ordinary steps
    /// when a trigger fires (a NaN or infinity seen by the writer thread, the stop signal or
    /// [`smdebug_index::FLIGHT_RECORDER_TRIGGER_FILE`] appearing, or
    /// [`crate::Hook::trigger_flight_recorder`]), with a manifest at
    /// [`smdebug_index::flight_recorder_manifest_key`]. [`crate::Hook::should_save`] then
    /// answers yes for recorded tensors at every step.
    pub fn flight_recorder(mut self, recorder: FlightRecorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Turns the flight recorder off (the default).
    pub fn without_flight_recorder(mut self) -> Self {
        self.recorder = None;
        self
    }

    /// The least time between two checks for the stop signal (default 1 s).
    pub fn stop_check_interval(mut self, interval: Duration) -> Self {
        self.stop_check_interval = interval;
        self
    }

    /// Writes the trial through `storage` (its root is the trial's root) instead of the store
    /// `out_dir` names, which then only names the trial in messages; [`storage_options`]
    /// do not apply to it (the store was opened already). For a store no URL opens, or one
    /// the caller wraps: the conformance suite writes to the GCS emulator this way, through
    /// a store whose uploads use the emulator's JSON API (`docs/src/storage.md`). The TensorBoard
    /// output of [`export_tensorboard`] goes into it too; a [`tensorboard_dir`] is still
    /// opened from its URL.
    ///
    /// [`storage_options`]: HookBuilder::storage_options
    /// [`export_tensorboard`]: HookBuilder::export_tensorboard
    /// [`tensorboard_dir`]: HookBuilder::tensorboard_dir
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Storage settings (retries, object-store options, local fsync). The hook's default
    /// differs from `StorageOptions::default()` in one field: local files are published by
    /// rename without fsync ([`LocalSync::RenameOnly`]); see [`HookBuilder::durable`].
    pub fn storage_options(mut self, options: StorageOptions) -> Self {
        self.storage_options = options;
        self
    }

    /// Whether every local events, index and collections file is fsynced (with its folder)
    /// before the next is published. Off by default, as in Python smdebug: a killed process
    /// still leaves only complete steps, but after a power loss or kernel crash the last
    /// steps may be missing. On costs two fsyncs per step.
    pub fn durable(mut self, on: bool) -> Self {
        self.storage_options.local_sync = if on {
            LocalSync::Fsync
        } else {
            LocalSync::RenameOnly
        };
        self
    }

    /// The out_dir this builder writes to.
    pub fn configured_out_dir(&self) -> &str {
        &self.out_dir
    }

    /// Where this builder's hook writes TensorBoard files, named as the original's
    /// `hook.tensorboard_dir`: the folder given, `<out_dir>/tensorboard` when exporting into
    /// the trial (`os.path.join(out_dir, "tensorboard")`), `None` when not exporting.
    pub fn configured_tensorboard_dir(&self) -> Option<String> {
        match (&self.tensorboard_dir, self.export_tensorboard) {
            (Some(dir), _) => Some(dir.clone()),
            (None, true) => Some(format!(
                "{}/{}",
                self.out_dir.trim_end_matches('/'),
                smdebug_index::DEFAULT_TENSORBOARD_DIR
            )),
            (None, false) => None,
        }
    }

    /// The worker name this builder's hook writes as.
    pub fn configured_worker(&self) -> &str {
        &self.worker
    }

    /// The `include_workers` setting so far.
    pub fn configured_include_workers(&self) -> IncludeWorkers {
        self.include_workers
    }

    pub(crate) fn default_save_config(&self) -> SaveConfig {
        let interval = self.framework.default_save_interval();
        self.save_config
            .clone()
            .unwrap_or_else(|| SaveConfig::new(SaveConfigMode::every(interval)))
    }
}

/// The TensorBoard folder of a SageMaker job: `LocalPath` of the JSON file at `path`. No
/// file, or no `LocalPath`, means no TensorBoard output (as in smdebug); a file that is not
/// a TensorBoard configuration is an error (smdebug raises too), not a silent loss of the
/// TensorBoard output.
fn sagemaker_tensorboard_dir(path: &Path) -> Result<Option<String>> {
    let config =
        TensorBoardConfig::locate(Some(path)).map_err(|source| HookError::TensorBoardConfig {
            path: path.display().to_string(),
            source,
        })?;
    Ok(config.and_then(|c| c.local_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_tensorboard_config_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("tensorboardconfig.json");
        assert_eq!(sagemaker_tensorboard_dir(&path).unwrap(), None, "no file");
        for (text, want) in [
            (
                r#"{"LocalPath": "/opt/ml/output/tensorboard"}"#,
                Some("/opt/ml/output/tensorboard"),
            ),
            (r#"{"S3OutputPath": "s3://b/tb"}"#, None),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(
                sagemaker_tensorboard_dir(&path).unwrap().as_deref(),
                want,
                "{text}"
            );
        }
        for text in [r#"{"LocalPath": "/tb""#, r#"{"LocalPath": ["/tb"]}"#, "[]"] {
            std::fs::write(&path, text).unwrap();
            let err = sagemaker_tensorboard_dir(&path).unwrap_err();
            assert!(
                matches!(&err, HookError::TensorBoardConfig { path: p, .. } if p.ends_with("tensorboardconfig.json")),
                "{text}: {err:?}"
            );
        }
    }
}
