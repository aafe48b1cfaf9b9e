//! Export of smdebug trials to columnar files — Apache Parquet, Arrow IPC or CSV — that
//! pandas, polars, DuckDB, Spark and other SQL engines read directly.
//!
//! A trial becomes four tables, each with a stable schema (`docs/src/export.md`):
//!
//! * `tensors`: one row per (tensor, step, worker) with dtype, shape, element count and
//!   summary statistics from one fused pass over the raw value (min, max, mean, std, l1,
//!   l2 of the finite elements; NaN, +Inf, -Inf and zero counts); where only reductions
//!   were saved, the saved ones. Optionally the value itself ([`ValuesMode`]).
//! * `reductions`: one row per saved reduction.
//! * `scalars`: the values of `scalar/*` tensors and losses, with their wall time.
//! * `steps`: one row per (step, worker) with its completeness and wall time.
//!
//! The export streams: rows are produced step bucket by step bucket and written in row
//! groups of bounded size into files of bounded size, so memory does not grow with the
//! trial. Each file is stored with one atomic put (never half-written under its name), and
//! `_SUCCESS` is written last. A table that fits one file is `OUT/TABLE.EXT`; a larger one
//! is a Hive-partitioned folder `OUT/TABLE/step_bucket=B/part-K.EXT` ([`Layout`]). `OUT`
//! is a local folder or any object-store URL of `smdebug-storage`.
//!
//! ```
//! use smdebug_config::Mode;
//! use smdebug_index::{collections_file_key, event_file_key, index_file_key, IndexFile, IndexMeta, TensorEntry};
//! use smdebug_record::{append_record, encode_tensor_event, mode_number, Footer, TensorValue};
//! use smdebug_storage::{BlockingStore, Location};
//! use smdebug_export::{export_trial, ExportOptions, Format};
//!
//! // A one-step trial with one tensor, written by hand into an in-memory store.
//! let store = BlockingStore::open(&Location::parse("memory://export-doc/run")?)?;
//! let value = TensorValue::from(ndarray::arr1(&[1.0f32, -2.0, f32::NAN]).into_dyn());
//! let payload = encode_tensor_event("loss", &value, 0, mode_number::TRAIN, 0, 1.7e9)?;
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
//! let options = ExportOptions { format: Format::Csv, ..ExportOptions::default() };
//! let summary = export_trial("memory://export-doc/run", "memory://export-doc/out", &options, &mut |_| {})?;
//! assert_eq!(summary.tables["tensors"].rows, 1);
//! let out = BlockingStore::open(&Location::parse("memory://export-doc/out")?)?;
//! let csv = String::from_utf8(out.get("tensors.csv")?.to_vec())?;
//! // Statistics of the finite elements; the NaN is counted.
//! assert!(csv.contains("TRAIN,0,0,loss,[],float32,[3],3,value,-2.0,1.0,-0.5,1.5,3.0,"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod consumer;
mod entry;
mod error;
mod export;
mod options;
mod run;
mod sink;
mod stats;
mod summary;
mod table;

pub use error::{ExportError, Result};
pub use export::{export, export_batches, export_trial, follow, follow_trial, trial_options};
pub use options::{ExportOptions, Format, Layout, StepRange, ValuesMode, SMALL_VALUE_ELEMENTS};
pub use sink::{BatchSink, Written, SCHEMA_VERSION, SCHEMA_VERSION_KEY};
pub use stats::{statistics, Statistics};
pub use summary::{Progress, Skipped, Summary};
pub use table::Table;
