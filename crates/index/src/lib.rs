//! The smdebug trial layout: where each file of a trial lives, what a key found in a trial
//! is, and the index JSON files — byte-compatible with smdebug 1.0.34.
//!
//! This crate decides names and formats only. It never touches a file system or the network:
//! every function works on strings and byte slices, and the storage crate does the fetching.
//!
//! ```
//! use smdebug_config::Mode;
//! use smdebug_index::{classify_key, index_file_key, IndexFile, IndexMeta, TensorEntry, TrialFile};
//!
//! // Where step 1234 of worker_0 goes, relative to the trial root.
//! let key = index_file_key(1234, "worker_0")?;
//! assert_eq!(key, "index/000000001/000000001234_worker_0.json");
//!
//! // What a listed key is.
//! match classify_key(&key)? {
//!     TrialFile::Index(f) => assert_eq!((f.step, f.worker().as_ref()), (1234, "worker_0")),
//!     other => panic!("{other:?}"),
//! }
//!
//! // The index file itself.
//! let mut index = IndexFile::new(IndexMeta {
//!     mode: Mode::Train,
//!     mode_step: 617,
//!     event_file_name: Some("events/000000001234/000000001234_worker_0.tfevents".into()),
//! });
//! index.tensors.push(TensorEntry { name: "loss".into(), start_idx: 0, length: 88, payload_crc32c: Some(7) });
//! let text = index.to_json();
//! assert!(text.starts_with(r#"{"meta": {"mode": "TRAIN", "mode_step": 617, "#));
//! assert_eq!(IndexFile::parse(&key, text.as_bytes())?, index);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Main pieces:
//!
//! * Keys of trial files, relative to the trial root (`smdebug_storage::Location` says where
//!   the root is): [`event_file_key`], [`index_file_key`], [`collections_file_key`],
//!   [`tensorboard_file_key`], [`END_OF_JOB_FILE`], [`CLAIM_FILE`]; step formatting
//!   [`format_step`] / [`format_index_bucket`].
//! * Names the writer (hook) and the readers (trial, rules) must agree on, defined here once:
//!   reduction records ([`reduction_tensor_name`] and [`reverse_reduction_tensor_name`]) and
//!   the stop signal ([`stop_signal_key`], [`DEFAULT_STOP_SIGNAL_FILE`]), health-summary
//!   records ([`health_tensor_name`], [`HealthPart`] and the field layouts).
//! * Worker names never become paths unchecked: [`validate_worker`] refuses `/`, `..`,
//!   control characters and over-long names; TF device names go through
//!   [`serialize_tf_device`].
//! * Parsing names back: [`classify_key`], [`parse_step_file_name`],
//!   [`parse_collections_file_name`], and [`python_worker_from_step_file`], which reproduces
//!   smdebug's quirk for paths containing `__`.
//! * [`IndexFile`]: parsing (typed [`IndexFileError`]s naming file and field) and writing
//!   (smdebug's exact `json.dumps` text, plus a `payload_crc32c` key per record).
#![deny(missing_docs, unsafe_code)]

mod error;
mod health;
mod index_fast;
mod index_file;
mod index_json;
mod layout;
mod recorder;
mod reduction;
mod step;
mod worker;

pub use error::{IndexFileError, LayoutError, WorkerNameProblem};
pub use health::{
    health_tensor_name, reverse_health_tensor_name, HealthPart, HEALTH_COUNTS_FIELDS,
    HEALTH_PREFIX, HEALTH_RANGE_FIELDS,
};
pub use index_file::{IndexFile, IndexMeta, ShapeEntry, TensorEntry, PAYLOAD_CRC_KEY};
pub use layout::{
    classify_key, collections_file_key, event_dir_key, event_file_key, index_bucket_key,
    index_file_key, index_step_bound, parse_collections_file_name, parse_step_file_name,
    python_worker_from_step_file, stop_signal_key, tensorboard_file_key, tensorboard_worker,
    trial_prefix_from_index_path, validate_relative_key, StepFileKind, StepFileName, TrialFile,
    CLAIM_FILE, COLLECTIONS_DIR, DEFAULT_STOP_SIGNAL_FILE, DEFAULT_TENSORBOARD_DIR,
    END_OF_JOB_FILE, EVENTS_DIR, INDEX_DIR, INDEX_KEY_ORDERED_MAX, RULE_STOP_SIGNAL_ENV,
    TEMP_SUFFIX,
};
pub use recorder::{
    flight_recorder_manifest_key, FLIGHT_RECORDER_DIR, FLIGHT_RECORDER_TRIGGER_FILE,
};
pub use reduction::{
    reduction_tensor_name, reverse_reduction_tensor_name, ReductionTensorName, REDUCTIONS_PREFIX,
};
pub use step::{format_index_bucket, format_step, STEPS_PER_INDEX_BUCKET};
pub use worker::{
    deserialize_tf_device, serialize_tf_device, validate_worker, MAX_WORKER_NAME_BYTES,
};
