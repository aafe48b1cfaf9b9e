//! The smdebug writer hook: a training loop offers tensors at each step, the hook decides
//! what is due (collections, save configs, reduction configs — smdebug 1.0.34's rules) and a
//! writer thread writes trials that the Python smdebug reads exactly as its own: events files,
//! index files, collections files, the end-of-training marker, and TensorBoard summaries.
//!
//! ```
//! use ndarray::{arr0, Array2};
//! use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
//! use smdebug_hook::{HookBuilder, Saved};
//! use smdebug_record::TensorValue;
//!
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("trial");
//! let mut hook = HookBuilder::new(out.to_str().unwrap())
//!     .save_config(SaveConfig::new(SaveConfigMode::every(2)))
//!     .include_collections(["weights", "gradients"])
//!     .build()?;
//! hook.set_mode(Mode::Train);
//! for step in 0..4 {
//!     hook.step()?;
//!     if hook.should_save("fc1.weight")? {
//!         let w = Array2::<f32>::from_elem((4, 3), step as f32).into_dyn();
//!         assert_eq!(hook.save("fc1.weight", TensorValue::from(w))?, Saved::Queued);
//!     }
//!     hook.save("CrossEntropyLoss_output_0", TensorValue::from(arr0(0.5f32).into_dyn()))?;
//!     hook.save_scalar("lr", 0.01, None);
//! }
//! let stats = hook.close()?;
//! // weights and losses at steps 0 and 2, and the four scalars (cached until a step that
//! // saves something ends, or until close).
//! assert_eq!(stats.records, 2 + 2 + 4);
//! assert!(out.join("index/000000000/000000000002_worker_0.json").exists());
//! assert!(out.join("training_job_end.ts").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Threads and the queue
//!
//! The training thread only decides and copies: [`Hook::save`] takes the tensor by value
//! and makes it one job for a bounded channel (capacity [`HookBuilder::queue_capacity`],
//! default 256 jobs). With [`QueuePolicy::Block`] a step's jobs are handed over as one
//! batch when the next step starts (or at [`Hook::flush`] and close, or earlier once 64 jobs
//! or 2²⁰ tensor elements are held): one wake-up of the writer per step instead of one per
//! tensor, which matters on machines with few cores where each wake-up can preempt the
//! training's own threads. One writer thread per hook computes reductions (with
//! `smdebug-reduce`), encodes the protobuf events, frames them with CRCs and keeps the step's
//! events file and index in memory; at the end of the step the I/O threads store the events
//! file and then the index file through `smdebug-storage` (atomic puts on disk and object
//! stores, in that order; on local disk two threads write two steps' files at once and
//! publish them in step order). A reader that sees an index file therefore always finds the
//! complete events file, and the index files of every earlier step.
//!
//! When the queue is full, [`QueuePolicy::Block`] (default) makes [`Hook::save`] wait for
//! the writer; [`QueuePolicy::DropNewest`] drops that tensor instead and counts it
//! ([`Hook::dropped_tensors`]). Step boundaries, scalars, collections files and the end
//! marker always block: they are never dropped.
//!
//! # Differences from the Python hook
//!
//! See the crate README: the collections file is written at the first step and again at
//! close (with every tensor name seen), a finished trial is refused on every backend,
//! no `claim.smd` lock file, no SageMaker Metrics, custom tensors are flushed at the end of
//! their step.
#![deny(missing_docs, unsafe_code)]

// The files form layers, from the leaves up: each uses only files of the groups before it.
// Leaves: errors, small types, the recorder's ring, TensorBoard summaries.
mod error;
mod lent;
mod priority;
mod recorder;
mod steps;
mod stop;
pub mod tensorboard;
mod wall_time;

// Jobs for the writer, counters, save decisions, encoding.
mod decisions;
mod encode;
mod job;
mod stats;

// The writer thread's parts: the I/O threads and the flight recorder's wiring.
mod io_pool;
mod recorder_wiring;

// The writer thread.
mod writer;

// The training thread's end of the channel to it.
mod queue;

// The settings of a hook.
mod builder;

// The hook on the training thread.
mod hook;

// Assembling a hook from its settings (`HookBuilder::build`).
mod start;

pub use builder::HookBuilder;
pub use error::{HookError, Result, WriterError};
pub use hook::Hook;
pub use lent::LentTensor;
pub use priority::WriterPriority;
pub use queue::QueuePolicy;
pub use recorder::FlightRecorder;
pub use stats::{HookStats, Saved};
pub use wall_time::WallTime;

/// Re-exported so a training loop needs no other smdebug crate for the common calls.
pub use smdebug_config::{
    Collection, Framework, IncludeWorkers, Mode, ReductionConfig, ReductionShape, SaveConfig,
    SaveConfigMode,
};
pub use smdebug_record::{DType, TensorValue};
pub use smdebug_reduce::{Flavor, TensorView};
pub use smdebug_storage::Bytes;
