//! The smdebug trial reader: smdebug's analysis API — `create_trial`, `Trial`, `Tensor` —
//! over a trial on local disk or in object storage (S3, GCS, Azure, memory), also while the
//! training job is still writing it.
//!
//! A trial is read through its index files: each lists, per step and worker, where every
//! tensor record sits in the step's event file, so a value costs one ranged read of exactly
//! its record (grouped per file and read concurrently on object stores, CRC-checked, cached
//! with a memory bound). New index files are found with incremental listings that start
//! after the last key seen. Semantics — completeness, `has_passed_step`, the errors raised
//! where — are those of smdebug 1.0.34 (`docs/src/semantics.md` §8–10), except where the original has
//! a bug (see the README).
//!
//! ```
//! use smdebug_config::Mode;
//! use smdebug_exceptions::StepState;
//! use smdebug_index::{collections_file_key, event_file_key, index_file_key, IndexFile, IndexMeta, TensorEntry};
//! use smdebug_record::{append_record, encode_tensor_event, mode_number, Footer, TensorValue};
//! use smdebug_storage::{BlockingStore, Location};
//!
//! // A one-step trial written by hand into an in-memory store.
//! let store = BlockingStore::open(&Location::parse("memory://trial-doc/run")?)?;
//! let value = TensorValue::from(ndarray::arr1(&[1.0f32, -2.0, 3.0]).into_dyn());
//! let payload = encode_tensor_event("loss", &value, 0, mode_number::TRAIN, 0, 0.0)?;
//! let mut events = Vec::new();
//! let rec = append_record(&mut events, &payload, Footer::Magic);
//! let mut index = IndexFile::new(IndexMeta {
//!     mode: Mode::Train,
//!     mode_step: 0,
//!     event_file_name: Some(event_file_key(0, "worker_0")?),
//! });
//! index.tensors.push(TensorEntry { name: "loss".into(), start_idx: rec.offset, length: rec.len, payload_crc32c: Some(rec.payload_crc32c) });
//! store.put(&event_file_key(0, "worker_0")?, events.into())?;
//! store.put(&index_file_key(0, "worker_0")?, index.to_json().into_bytes().into())?;
//! let collections = r#"{"collections": {}, "_meta": {"num_workers": 1}}"#;
//! store.put(&collections_file_key("worker_0")?, collections.into())?;
//!
//! let trial = smdebug_trial::create_trial("memory://trial-doc/run")?;
//! assert_eq!(trial.tensor_names()?, ["loss"]);
//! assert_eq!(trial.steps(Mode::Global, false)?, [0]);
//! assert_eq!(trial.has_passed_step(1, Mode::Global)?, StepState::NotYetAvailable);
//! let loss = trial.tensor("loss")?;
//! assert_eq!(*loss.value(0, Mode::Train, None)?, value);
//! let max = loss.reduction_value(0, "max", Mode::Global, None, true)?; // computed: |x| max
//! assert_eq!(max.as_array::<f32>().unwrap().iter().next(), Some(&3.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Main pieces: [`create_trial`] / [`Trial::open`] ([`TrialOptions`]), [`Trial`] (steps,
//! modes, workers, collections, `has_passed_step`, `wait_for_steps`, refresh control),
//! [`Tensor`] (values, shapes, reductions), [`TrialError`] (with the [`ErrorKind`] of
//! every failure), [`parallel::for_each_ordered`] (the ordered parallel loop the reader
//! and `smdebug-export` share). The `smdebug-trial-dump/v1` document behind `smdebug dump`
//! is the crate `smdebug-dump`.
#![deny(missing_docs, unsafe_code)]

// The files form layers, from the leaves up: each uses only files of the groups before it
// (options.rs takes one default from values/open_files.rs).
// Leaves: errors, options, the bounded map, locks, the parallel loops.
mod bounded;
mod error;
mod error_kind;
mod options;
pub mod parallel;
mod sync;

// The index: steps, workers and records known (state), step ranges, refreshing from the
// index files, collections and tensor-name filters.
mod index;

// Values: the caches, open files, decoding, fetching records, read-ahead, reductions.
mod values;

// The API on top: the trial and its tensors.
mod tensor;
mod trial;

pub use error::{Result, TrialError};
pub use error_kind::ErrorKind;
pub use index::names::TensorFilter;
pub use index::range::StepRange;
pub use index::state::{RecordLocation, BYTES_PER_ENTRY};
pub use options::{PollPolicy, TrialOptions};
pub use smdebug_config::Mode;
pub use smdebug_exceptions::{AnalysisError, StepState};
pub use tensor::{ReductionValues, Tensor};
pub use trial::{create_trial, Trial};
pub use values::once::OnceValue;

/// The storage layer the trial reads through (re-exported so users can build stores, e.g.
/// an in-memory trial, without naming the crate themselves).
pub use smdebug_storage as storage;

/// A decoded tensor value (an n-dimensional array of one of smdebug's dtypes).
pub use smdebug_record::TensorValue;
