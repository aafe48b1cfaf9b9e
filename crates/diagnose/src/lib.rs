//! Trial diagnosis as a library: what `smdebug health`, `smdebug doctor` and `smdebug seal`
//! print, as typed results a Rust program (or the Python package) can use.
//!
//! * [`health`] — the first step, mode, worker and tensor holding a NaN or infinity, a
//!   timeline around it and the tensors whose magnitudes grew first ([`HealthReport`]).
//! * [`doctor`] — what is wrong with a trial: missing collections files, lagging workers,
//!   no end marker, corrupt index files and records, CRC mismatches (file and offset),
//!   orphan events files, skipped steps, gradient-accumulation step semantics
//!   ([`DoctorReport`], one [`Finding`] per problem).
//! * [`verify`] and [`check_index`] — every record an index file lists, checked against its
//!   events file ([`VerifyReport`], [`BadRecord`]).
//! * [`seal`] — adds the payload CRC to every index entry of an existing trial
//!   ([`SealReport`]).
//!
//! The reports are data (`serde::Serialize`), not text: the CLI prints them, the Python
//! package returns them as dicts. Failing to look at a trial at all is a
//! [`DiagnoseError`]; what a diagnosis finds is in its report.
//!
//! ```
//! use smdebug_diagnose::{doctor, FindingKind};
//!
//! // A trial whose writer stopped before closing: no end marker.
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().to_str().unwrap();
//! let mut hook = smdebug_hook::HookBuilder::new(path).save_all(true).build()?;
//! hook.step()?;
//! hook.save("x", smdebug_hook::TensorValue::from(ndarray::arr1(&[1.0f32]).into_dyn()))?;
//! hook.close()?;
//! std::fs::remove_file(dir.path().join("training_job_end.ts"))?;
//!
//! let report = doctor(path)?;
//! let kinds: Vec<FindingKind> = report.findings.iter().map(|f| f.kind).collect();
//! assert_eq!(kinds, [FindingKind::NoEndMarker]);
//! assert!(report.payloads_verifiable.all);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod check;
mod doctor;
mod error;
mod files;
mod health;
mod runs;
mod seal;
mod verify;

pub use check::{check_index, BadRecord, RecordProblem};
pub use doctor::{
    doctor, DoctorReport, Evidence, Finding, FindingKind, LaggingWorker, PayloadsVerifiable,
};
pub use error::{DiagnoseError, SealProblem};
pub use health::{
    health, Growth, HealthOptions, HealthReport, NonFinite, Sample, Source, Timeline, TimelineStep,
};
pub use runs::step_runs;
pub use seal::{seal, SealOptions, SealReport};
pub use verify::{verify, CorruptIndex, VerifyReport};
