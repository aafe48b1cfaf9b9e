//! Where things live in a trial (docs/src/format.md §2, §4, §12), and parsing file names back.
//!
//! Every key here is relative to the trial root and uses `/`; join it with a
//! the trial's location (`smdebug_storage::Location`) to get a local path or an object key.

use std::borrow::Cow;
use std::sync::LazyLock;

use smdebug_config::Mode;

use crate::error::LayoutError;
use crate::step::{format_index_bucket, format_step, parse_step_text, StepTextProblem};
use crate::worker::{deserialize_tf_device, validate_worker};

/// Folder of the per-step event files.
pub const EVENTS_DIR: &str = "events";
/// Folder of the per-step index files.
pub const INDEX_DIR: &str = "index";
/// Folder of the collections files (the collection "step" is always 0, width 9).
pub const COLLECTIONS_DIR: &str = "collections/000000000";
/// The empty marker written when the writer closes (outside SageMaker).
pub const END_OF_JOB_FILE: &str = "training_job_end.ts";
/// The transient lock a single-worker writer holds in a local trial.
pub const CLAIM_FILE: &str = "claim.smd";
/// Default TensorBoard folder inside the trial when TB export is on and no folder is given.
pub const DEFAULT_TENSORBOARD_DIR: &str = "tensorboard";
/// Environment variable naming the SageMaker rule stop-signal file, relative to the trial
/// prefix (`SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE`); see [`stop_signal_key`].
pub const RULE_STOP_SIGNAL_ENV: &str = "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE";
/// The stop-signal object's name when neither the caller nor [`RULE_STOP_SIGNAL_ENV`] names
/// one: a rule (or a person) creates `<trial>/stop_training.smd` to stop the job. smdebug
/// has no default (without the variable its hook never checks); ours lets a rule stop a
/// hook outside SageMaker.
pub const DEFAULT_STOP_SIGNAL_FILE: &str = "stop_training.smd";
/// Temporary suffix of files being written locally (renamed away when complete).
pub const TEMP_SUFFIX: &str = ".tmp";

/// `events/{step:012}`: the folder of one step's event files.
pub fn event_dir_key(step: i64) -> String {
    format!("{EVENTS_DIR}/{}", format_step(step))
}

/// `events/{step:012}/{step:012}_{worker}.tfevents`.
///
/// ```
/// assert_eq!(
///     smdebug_index::event_file_key(1234, "worker_0").unwrap(),
///     "events/000000001234/000000001234_worker_0.tfevents"
/// );
/// ```
pub fn event_file_key(step: i64, worker: &str) -> Result<String, LayoutError> {
    validate_worker(worker)?;
    let s = format_step(step);
    Ok(format!("{EVENTS_DIR}/{s}/{s}_{worker}.tfevents"))
}

/// `index/{step // 1000:09}`: the bucket folder holding a step's index files.
pub fn index_bucket_key(step: i64) -> String {
    format!("{INDEX_DIR}/{}", format_index_bucket(step))
}

/// The largest step whose index keys sort in step order: steps `0..=INDEX_KEY_ORDERED_MAX`
/// have 12-digit names and 9-digit buckets, so their keys compare as their steps do.
pub const INDEX_KEY_ORDERED_MAX: i64 = 999_999_999_999;

/// `index/{step // 1000:09}/{step:012}`: every index key of `step` starts with it and sorts
/// after it, and every index key of a smaller step sorts before it — as a listing's
/// start-after key it skips the steps before `step`, as its end key it stops before
/// `step`. `None` outside `0..=INDEX_KEY_ORDERED_MAX`, where key order is not step order.
///
/// ```
/// let bound = smdebug_index::index_step_bound(1234).unwrap();
/// assert_eq!(bound, "index/000000001/000000001234");
/// let key = smdebug_index::index_file_key(1234, "worker_0").unwrap();
/// assert!(key.starts_with(&bound) && key > bound);
/// assert!(smdebug_index::index_file_key(1233, "worker_9").unwrap() < bound);
/// assert_eq!(smdebug_index::index_step_bound(-1), None);
/// ```
pub fn index_step_bound(step: i64) -> Option<String> {
    (0..=INDEX_KEY_ORDERED_MAX)
        .contains(&step)
        .then(|| format!("{}/{}", index_bucket_key(step), format_step(step)))
}

/// `index/{step // 1000:09}/{step:012}_{worker}.json`.
///
/// ```
/// assert_eq!(
///     smdebug_index::index_file_key(1234, "worker_0").unwrap(),
///     "index/000000001/000000001234_worker_0.json"
/// );
/// ```
pub fn index_file_key(step: i64, worker: &str) -> Result<String, LayoutError> {
    validate_worker(worker)?;
    Ok(format!(
        "{}/{}_{worker}.json",
        index_bucket_key(step),
        format_step(step)
    ))
}

/// `collections/000000000/{worker}_collections.json`.
pub fn collections_file_key(worker: &str) -> Result<String, LayoutError> {
    validate_worker(worker)?;
    Ok(format!("{COLLECTIONS_DIR}/{worker}_collections.json"))
}

/// The worker part of TensorBoard file names: `{pid}_{hostname}` (smdebug's `get_tb_worker`).
pub fn tensorboard_worker(pid: u32, hostname: &str) -> String {
    format!("{pid}_{hostname}")
}

/// `{MODE}/{step:012}_{worker}.tfevents`, relative to the TensorBoard folder (which is
/// [`DEFAULT_TENSORBOARD_DIR`] inside the trial, or a folder of its own).
pub fn tensorboard_file_key(mode: Mode, step: i64, worker: &str) -> Result<String, LayoutError> {
    validate_worker(worker)?;
    Ok(format!(
        "{}/{}_{worker}.tfevents",
        mode.name(),
        format_step(step)
    ))
}

/// The key of the stop-signal object that the hook watches and a rule's stop action writes:
/// `explicit` (a builder or action setting), else `env` (the value of
/// [`RULE_STOP_SIGNAL_ENV`], which the caller reads so this crate stays free of process
/// state), else [`DEFAULT_STOP_SIGNAL_FILE`].
///
/// The name may come from the environment, so it is checked like any relative key
/// ([`validate_relative_key`]): it may name a file in a sub-folder, never one outside the trial.
///
/// ```
/// use smdebug_index::{stop_signal_key, DEFAULT_STOP_SIGNAL_FILE};
/// assert_eq!(stop_signal_key(None, None).unwrap(), DEFAULT_STOP_SIGNAL_FILE);
/// assert_eq!(stop_signal_key(None, Some("rules/stop")).unwrap(), "rules/stop");
/// assert_eq!(stop_signal_key(Some("mine"), Some("rules/stop")).unwrap(), "mine");
/// assert!(stop_signal_key(None, Some("../outside")).is_err());
/// ```
pub fn stop_signal_key(explicit: Option<&str>, env: Option<&str>) -> Result<String, LayoutError> {
    let name = explicit.or(env).unwrap_or(DEFAULT_STOP_SIGNAL_FILE);
    validate_relative_key(name)?;
    Ok(name.to_owned())
}

/// Checks that a key relative to the trial root stays inside the trial: not empty, no leading
/// `/`, no `\`, no empty, `.` or `..` component, no NUL or control character.
///
/// Use it before joining a key read from a file (such as an index file's `event_file_name`)
/// to the trial location; smdebug itself joins them unchecked, so an absolute
/// `event_file_name` makes it read any file.
pub fn validate_relative_key(key: &str) -> Result<(), LayoutError> {
    let reason = if key.is_empty() {
        Some("it is empty")
    } else if key.starts_with('/') {
        Some("it is absolute")
    } else if key.contains('\\') {
        Some("it contains '\\'")
    } else if key.chars().any(char::is_control) {
        Some("it contains NUL or a control character")
    } else if key
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        Some("it has an empty, '.' or '..' component")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(LayoutError::UnsafeKey {
            key: key.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Kind of a per-step file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepFileKind {
    /// `*.json` under `index/`.
    IndexJson,
    /// `*.csv` under `index/`: smdebug's reader lists these as index files too (an old format);
    /// their content is read as JSON.
    IndexCsv,
    /// `*.tfevents` under `events/`.
    Events,
}

impl StepFileKind {
    fn extension(self) -> &'static str {
        match self {
            StepFileKind::IndexJson => ".json",
            StepFileKind::IndexCsv => ".csv",
            StepFileKind::Events => ".tfevents",
        }
    }
}

/// The step and worker of an index or event file, parsed from its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StepFileName {
    /// Global step.
    pub step: i64,
    /// The worker exactly as it appears in the file name (for TF devices the serialized form,
    /// `_job-worker_replica-0_task-0_device-GPU-0`).
    pub file_worker: String,
    /// Which kind of file.
    pub kind: StepFileKind,
}

impl StepFileName {
    /// The worker name as a reader reports it: TF device names (those whose file form starts
    /// with `_`) de-serialized, others as written.
    ///
    /// This is the rule smdebug applies to collections files. For index and event files smdebug
    /// instead de-serializes whenever the *whole path* contains `__` (see
    /// [`python_worker_from_step_file`]); the two agree on every file of a trial whose path
    /// has no `__` and whose worker names contain no `__`.
    pub fn worker(&self) -> Cow<'_, str> {
        worker_from_file_form(&self.file_worker)
    }
}

fn worker_from_file_form(file_worker: &str) -> Cow<'_, str> {
    if file_worker.starts_with('_') {
        Cow::Owned(deserialize_tf_device(file_worker))
    } else {
        Cow::Borrowed(file_worker)
    }
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn invalid(path: &str, reason: &'static str) -> LayoutError {
    LayoutError::InvalidFileName {
        path: path.to_owned(),
        reason,
    }
}

/// Parses `{step}_{worker}.{json|csv|tfevents}` (the last `/`-separated component of `path`).
///
/// The step is the text before the first `_`: an optional `-` and ASCII digits (so negative
/// and ≥ 10^12 steps written by [`index_file_key`] parse back); the worker is the rest, which
/// must not be empty.
///
/// ```
/// use smdebug_index::{parse_step_file_name, StepFileKind};
/// let f = parse_step_file_name("index/000000001/000000001230_worker_2.json").unwrap();
/// assert_eq!((f.step, f.worker().as_ref(), f.kind), (1230, "worker_2", StepFileKind::IndexJson));
/// let tf = parse_step_file_name("000000000499__job-worker_replica-0_task-1_device-GPU-6.json").unwrap();
/// assert_eq!(tf.worker(), "/job:worker/replica:0/task:1/device:GPU:6");
/// assert!(parse_step_file_name("000000001230_worker_2.json.tmp").is_err());
/// ```
pub fn parse_step_file_name(path: &str) -> Result<StepFileName, LayoutError> {
    let name = basename(path);
    let (kind, stem) = [
        StepFileKind::IndexJson,
        StepFileKind::IndexCsv,
        StepFileKind::Events,
    ]
    .into_iter()
    .find_map(|k| name.strip_suffix(k.extension()).map(|stem| (k, stem)))
    .ok_or_else(|| invalid(path, "the name does not end in .json, .csv or .tfevents"))?;
    let (step_text, worker) = stem
        .split_once('_')
        .ok_or_else(|| invalid(path, "the name has no '_' between step and worker"))?;
    if worker.is_empty() {
        return Err(invalid(path, "the worker name is empty"));
    }
    let step = parse_step_text(step_text).map_err(|p| match p {
        StepTextProblem::NotANumber => invalid(path, "the step is not a decimal number"),
        StepTextProblem::OutOfRange => LayoutError::StepOutOfRange {
            path: path.to_owned(),
            step: step_text.to_owned(),
        },
    })?;
    Ok(StepFileName {
        step,
        file_worker: worker.to_owned(),
        kind,
    })
}

/// Parses the worker out of a collections file name, `{worker}_collections.json`
/// (smdebug's `get_worker_name_from_collection_file`): a worker starting with `_` is a
/// serialized TF device and is de-serialized.
///
/// ```
/// use smdebug_index::parse_collections_file_name;
/// assert_eq!(parse_collections_file_name("collections/000000000/job-worker_1_collections.json").unwrap(), "job-worker_1");
/// assert_eq!(
///     parse_collections_file_name("_job-worker_replica-0_task-1_device-GPU-0_collections.json").unwrap(),
///     "/job:worker/replica:0/task:1/device:GPU:0"
/// );
/// ```
pub fn parse_collections_file_name(path: &str) -> Result<String, LayoutError> {
    let worker = basename(path)
        .strip_suffix("_collections.json")
        .ok_or_else(|| invalid(path, "the name does not end in _collections.json"))?;
    if worker.is_empty() {
        return Err(invalid(path, "the worker name is empty"));
    }
    Ok(worker_from_file_form(worker).into_owned())
}

/// What a key relative to the trial root is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialFile {
    /// An index file (`index/…/{step}_{worker}.json`, or `.csv`).
    Index(StepFileName),
    /// An event file (`events/…/{step}_{worker}.tfevents`).
    Events(StepFileName),
    /// A collections file; the worker as a reader reports it (TF devices de-serialized).
    Collections {
        /// The worker.
        worker: String,
    },
    /// `training_job_end.ts`.
    EndOfJob,
    /// Anything a trial reader does not look at: `.tmp` files still being written,
    /// `claim.smd`, `tensorboard/`, other files inside the trial folders, other folders
    /// (SageMaker's `framework/`, `system/`, …).
    Ignored,
}

/// Says what a key relative to the trial root is.
///
/// Follows what smdebug's local reader lists: under `index/` every file whose name ends in
/// `.json` or `.csv` (at any depth), under `events/` every `.tfevents` file, under
/// `collections/` every file whose name ends in `collections.json`, and the end marker at the
/// top. Such a file whose name does not parse is an error (smdebug raises
/// `IndexReaderException("Invalid File Found")` or crashes); anything else is
/// [`TrialFile::Ignored`]. Runs of `/` and a leading `/` are ignored, as on S3.
///
/// ```
/// use smdebug_index::{classify_key, TrialFile};
/// assert!(matches!(classify_key("index/000000000/000000000003_worker_0.json"), Ok(TrialFile::Index(f)) if f.step == 3));
/// assert_eq!(classify_key("index/000000000/000000000003_worker_0.json.tmp"), Ok(TrialFile::Ignored));
/// assert_eq!(classify_key("training_job_end.ts"), Ok(TrialFile::EndOfJob));
/// assert!(classify_key("index/000000000/garbage.json").is_err());
/// ```
pub fn classify_key(key: &str) -> Result<TrialFile, LayoutError> {
    let mut parts = key.split('/').filter(|c| !c.is_empty());
    let Some(first) = parts.next() else {
        return Ok(TrialFile::Ignored);
    };
    let rest: Vec<&str> = parts.collect();
    let Some(name) = rest.last() else {
        return Ok(if first == END_OF_JOB_FILE {
            TrialFile::EndOfJob
        } else {
            TrialFile::Ignored
        });
    };
    // smdebug lists `(.+)\.(json|csv)$` / `(.+)\.(tfevents)$`: a bare ".json" is not listed.
    let listed = |ext: &str| name.len() > ext.len() && name.ends_with(ext);
    match first {
        INDEX_DIR if listed(".json") || listed(".csv") => parse_step_file_name(name)
            .map(TrialFile::Index)
            .map_err(|e| with_path(e, key)),
        EVENTS_DIR if listed(".tfevents") => parse_step_file_name(name)
            .map(TrialFile::Events)
            .map_err(|e| with_path(e, key)),
        // smdebug only lists below `collections/000000000/`, i.e. one folder deeper.
        "collections" if rest.len() >= 2 && name.ends_with("collections.json") => {
            parse_collections_file_name(name)
                .map(|worker| TrialFile::Collections { worker })
                .map_err(|e| with_path(e, key))
        }
        _ => Ok(TrialFile::Ignored),
    }
}

/// Errors from basename parsers name the whole key, so a user can find the file.
fn with_path(e: LayoutError, key: &str) -> LayoutError {
    match e {
        LayoutError::InvalidFileName { reason, .. } => invalid(key, reason),
        LayoutError::StepOutOfRange { step, .. } => LayoutError::StepOutOfRange {
            path: key.to_owned(),
            step,
        },
        other => other,
    }
}

static PY_STEP_FILE_RE: LazyLock<regex::Regex> = LazyLock::new(|| {
    // smdebug's r".+\/\d+_(.+)\.(json|csv|tfevents)$" under re.match. Python's `$` also matches
    // before a final "\n", and both engines pick the same captures for this pattern
    // (leftmost-first, greedy), and `.`/`\d` mean the same (not "\n" / Unicode digits).
    regex::Regex::new(r"\A.+/\d+_(.+)\.(json|csv|tfevents)\n?\z").expect("valid regex")
});

/// Exactly what smdebug's `parse_worker_name_from_file` returns for an index or event file
/// path, quirks included:
///
/// * the path must contain a `/` followed by digits and `_` (so a bare file name, or a
///   negative step `-000…`, is an error — smdebug's "Invalid File Found");
/// * if the **whole path** contains `__` anywhere, the worker is de-serialized as a TF device,
///   so a trial under `/tmp/run__1/` reports `worker_0` as `worker/0`.
///
/// Use [`parse_step_file_name`] and [`StepFileName::worker`] for the consistent variant.
///
/// ```
/// use smdebug_index::python_worker_from_step_file;
/// assert_eq!(python_worker_from_step_file("/tmp/ts-logs/index/000000001/000000001230_worker_2.json").unwrap(), "worker_2");
/// assert_eq!(python_worker_from_step_file("/tmp/run__1/index/000000000/000000000001_worker_0.json").unwrap(), "worker/0");
/// assert!(python_worker_from_step_file("t/index/000000000/000000000001_worker_0.json.tmp").is_err());
/// ```
pub fn python_worker_from_step_file(path: &str) -> Result<String, LayoutError> {
    let caps = PY_STEP_FILE_RE
        .captures(path)
        .ok_or_else(|| invalid(path, "no '/{digits}_{worker}.json|csv|tfevents' at the end"))?;
    let worker = &caps[1];
    Ok(if path.contains("__") {
        deserialize_tf_device(worker)
    } else {
        worker.to_owned()
    })
}

static PY_PREFIX_RE: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\A(.+)/index/.+\n?\z").expect("valid regex"));

/// smdebug's `get_prefix_from_index_file`: the part of an index file path before the last
/// `/index/` (greedy), e.g. `s3://bucket/run_1` for `s3://bucket/run_1/index/000000000/…`.
///
/// ```
/// use smdebug_index::trial_prefix_from_index_path;
/// assert_eq!(
///     trial_prefix_from_index_path("/opt/ml/testing/run_1/index/000000000/000000000000_worker_0.json"),
///     Some("/opt/ml/testing/run_1")
/// );
/// ```
pub fn trial_prefix_from_index_path(path: &str) -> Option<&str> {
    PY_PREFIX_RE
        .captures(path)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_format_md() {
        assert_eq!(
            event_file_key(1234, "worker_0").unwrap(),
            "events/000000001234/000000001234_worker_0.tfevents"
        );
        assert_eq!(
            index_file_key(1234, "worker_0").unwrap(),
            "index/000000001/000000001234_worker_0.json"
        );
        assert_eq!(
            index_file_key(1_000_000_000_000, "worker_0").unwrap(),
            "index/1000000000/1000000000000_worker_0.json"
        );
        assert_eq!(
            index_file_key(-1, "worker_0").unwrap(),
            "index/-00000001/-00000000001_worker_0.json"
        );
        assert_eq!(
            collections_file_key("worker_0").unwrap(),
            "collections/000000000/worker_0_collections.json"
        );
        assert_eq!(
            tensorboard_file_key(Mode::Train, 3, &tensorboard_worker(42, "host")).unwrap(),
            "TRAIN/000000000003_42_host.tfevents"
        );
        assert_eq!(event_dir_key(7), "events/000000000007");
        assert!(index_file_key(1, "../x").is_err());
        assert!(collections_file_key("a/b").is_err());
    }

    #[test]
    fn python_worker_parsing() {
        // docs/src/testing.md B.8–B.10
        assert_eq!(
            python_worker_from_step_file("/tmp/ts-logs/index/000000001/000000001230_worker_2.json")
                .unwrap(),
            "worker_2"
        );
        assert_eq!(
            python_worker_from_step_file(
                "/tmp/ts-logs/index/000000000/000000000499__job-worker_replica-0_task-1_device-GPU-6.json"
            )
            .unwrap(),
            "/job:worker/replica:0/task:1/device:GPU:6"
        );
        assert!(matches!(
            python_worker_from_step_file(
                "/tmp/ts-logs/index/000000001/000000001230_worker_2.json.tmp"
            ),
            Err(LayoutError::InvalidFileName { .. })
        ));
        assert!(
            python_worker_from_step_file("t/index/-0000001/-00000000001_worker_0.json").is_err()
        );
        assert!(python_worker_from_step_file("000000000001_worker_0.json").is_err());
        // Python's `$` matches before a final newline.
        assert_eq!(python_worker_from_step_file("t/1_w.json\n").unwrap(), "w");
        // Greedy worker group.
        assert_eq!(
            python_worker_from_step_file("t/0012_3_x.json.json").unwrap(),
            "3_x.json"
        );
    }

    #[test]
    fn consistent_parsing_handles_negative_and_huge_steps() {
        let f = parse_step_file_name("index/-0000001/-00000000001_worker_0.json").unwrap();
        assert_eq!((f.step, f.worker().as_ref()), (-1, "worker_0"));
        let f = parse_step_file_name("1000000000000_worker_0.json").unwrap();
        assert_eq!(f.step, 1_000_000_000_000);
        assert!(matches!(
            parse_step_file_name("99999999999999999999_w.json"),
            Err(LayoutError::StepOutOfRange { .. })
        ));
        assert!(parse_step_file_name("12_.json").is_err());
        assert!(parse_step_file_name("12.json").is_err());
        assert!(parse_step_file_name("x_w.json").is_err());
        // A trial path with "__" does not change the consistent variant.
        let f =
            parse_step_file_name("/tmp/run__1/index/000000000/000000000001_worker_0.json").unwrap();
        assert_eq!(f.worker(), "worker_0");
    }

    #[test]
    fn collections_names() {
        // docs/src/testing.md B.11, B.12
        assert_eq!(
            parse_collections_file_name("/tmp/collections/000000000/job-worker_1_collections.json")
                .unwrap(),
            "job-worker_1"
        );
        assert_eq!(
            parse_collections_file_name(
                "/tmp/collections/000000000/_job-worker_replica-0_task-1_device-GPU-0_collections.json"
            )
            .unwrap(),
            "/job:worker/replica:0/task:1/device:GPU:0"
        );
        assert!(parse_collections_file_name("collections/000000000/collections.json").is_err());
        assert!(parse_collections_file_name("collections/000000000/_collections.json").is_err());
    }

    #[test]
    fn classification() {
        use TrialFile::*;
        let idx = classify_key("index/000000000/000000000003_worker_0.json").unwrap();
        assert!(matches!(idx, Index(ref f) if f.step == 3 && f.file_worker == "worker_0"));
        let csv = classify_key("index/000000000/000000000003_worker_0.csv").unwrap();
        assert!(matches!(csv, Index(ref f) if f.kind == StepFileKind::IndexCsv));
        let ev = classify_key("events/000000000003/000000000003_worker_0.tfevents").unwrap();
        assert!(matches!(ev, Events(ref f) if f.step == 3 && f.kind == StepFileKind::Events));
        assert_eq!(
            classify_key("collections/000000000/worker_0_collections.json").unwrap(),
            Collections {
                worker: "worker_0".into()
            }
        );
        assert_eq!(classify_key("training_job_end.ts").unwrap(), EndOfJob);
        assert_eq!(classify_key("//training_job_end.ts").unwrap(), EndOfJob);
        for ignored in [
            "",
            "/",
            "claim.smd",
            "index",
            "index/000000000/000000000003_worker_0.json.tmp",
            "events/000000000003/000000000003_worker_0.tfevents.tmp",
            "collections/000000000/worker_0_collections.json.tmp",
            "collections/000000000/notes.txt",
            "events/000000000003/readme",
            "tensorboard/TRAIN/000000000003_42_host.tfevents",
            "framework/pevents/x.json",
            "collections/worker_0_collections.json",
            "system/incremental/x.json",
            "sub/training_job_end.ts",
            "training_job_end.ts/x",
            "index/000000000/.json",
            "events/000000000000/.tfevents",
        ] {
            assert_eq!(classify_key(ignored).unwrap(), Ignored, "{ignored:?}");
        }
        for bad in [
            "index/000000000/garbage.json",
            "index/000000000/_w.json",
            "events/000000000003/x_y.tfevents",
            "collections/000000000/collections.json",
        ] {
            let err = classify_key(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{err} names {bad}");
        }
    }

    #[test]
    fn relative_keys() {
        for ok in ["a", "a/b", "stop_signal.txt", "x/y.z"] {
            assert!(validate_relative_key(ok).is_ok(), "{ok}");
            assert_eq!(stop_signal_key(Some(ok), None).unwrap(), ok);
            assert_eq!(stop_signal_key(None, Some(ok)).unwrap(), ok);
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "a/",
            "./a",
            "a\\b",
            "a\0",
        ] {
            assert!(validate_relative_key(bad).is_err(), "{bad:?}");
            assert!(stop_signal_key(Some(bad), Some("ok")).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prefix_from_index_file() {
        // docs/src/testing.md B.14
        assert_eq!(
            trial_prefix_from_index_path(
                "/opt/ml/testing/run_1/index/000000000/000000000000_worker_0.json"
            ),
            Some("/opt/ml/testing/run_1")
        );
        assert_eq!(
            trial_prefix_from_index_path(
                "s3://bucket/run_1/index/000000000/000000000000_worker_0.json"
            ),
            Some("s3://bucket/run_1")
        );
        assert_eq!(trial_prefix_from_index_path("index/000000000/x.json"), None);
    }
}
