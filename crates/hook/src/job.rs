//! The messages from the training thread to the writer thread: one [`Job`] per tensor, step
//! end, object or request, in the order the training thread made them.

use crate::error::WriterError;
use crate::lent::LentTensor;
use smdebug_config::{HealthSummary, Mode};
use smdebug_record::{DType, TensorValue};
use smdebug_reduce::ReductionRequest;
use smdebug_storage::Bytes;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// What the training thread decided for one tensor in one step.
#[derive(Debug)]
pub(crate) struct TensorJob {
    /// The tensor's name.
    pub name: String,
    /// Its value (empty until `deferred` made it).
    pub value: TensorValue,
    /// Makes the value on the writer thread ([`crate::Hook::save_deferred`]).
    pub deferred: Option<Deferred>,
    /// Elements of the value (known before a deferred value is made).
    pub len: usize,
    /// The global step.
    pub step: i64,
    /// The mode.
    pub mode: Mode,
    /// The mode's step.
    pub mode_step: i64,
    /// The event's wall time.
    pub wall_time: f64,
    /// Write the shape into the index (`save_shape`).
    pub shape: bool,
    /// Reductions to compute and write, in order (already deduplicated).
    pub reductions: Vec<ReductionRequest>,
    /// The health summary to compute (in the same pass) and write after the reductions.
    pub health: HealthSummary,
    /// Write the raw value (already false for empty tensors unless forced).
    pub raw: bool,
    /// TensorBoard histogram tag (already cleaned), when one is due.
    pub histogram: Option<String>,
    /// TensorBoard scalar, when the tensor is in a scalar collection.
    pub tb_scalar: bool,
    /// Keep the value in the flight recorder.
    pub record: bool,
}

/// A value made on the writer thread: the training thread hands over a cheap handle (a
/// framework's reference-counted tensor) instead of copying the elements itself.
pub(crate) enum Deferred {
    /// Made by a closure ([`crate::Hook::save_deferred`]).
    Make(Box<dyn FnOnce() -> Result<TensorValue, String> + Send>),
    /// Lent ([`crate::Hook::save_lent`]): copied only when written.
    Lent(Box<dyn LentTensor>),
}

impl Deferred {
    /// The value of tensor `name` at `step` (a copy, for a lent tensor).
    pub fn make(self, name: &str, step: i64) -> Result<TensorValue, WriterError> {
        let made = match self {
            Deferred::Make(f) => f(),
            Deferred::Lent(t) => t.to_value(),
        };
        made.map_err(|message| WriterError::Convert {
            name: name.to_owned(),
            step,
            message,
        })
    }
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deferred(..)")
    }
}

impl TensorJob {
    /// A raw record of `value` under `name` and nothing else: no shape, reductions,
    /// summaries or recorder copy (`save_tensor` values, cached scalars, raw records).
    pub fn raw(name: String, value: TensorValue, at: (i64, Mode, i64), wall_time: f64) -> Self {
        let (step, mode, mode_step) = at;
        TensorJob {
            name,
            len: value.len(),
            value,
            deferred: None,
            step,
            mode,
            mode_step,
            wall_time,
            shape: false,
            reductions: Vec::new(),
            health: HealthSummary::Off,
            raw: true,
            histogram: None,
            tb_scalar: false,
            record: false,
        }
    }
}

/// A numeric tensor given as the little-endian bytes of its raw value
/// ([`crate::Hook::save_bytes`]), encoded from them with no copy before the encode. The
/// bytes are dropped with the job, right after the encode (or unread after a failure).
#[derive(Debug)]
pub(crate) struct BytesJob {
    /// The tensor's name.
    pub name: String,
    /// Its dtype (numeric).
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its elements' little-endian bytes, in C order.
    pub data: Bytes,
    /// The global step.
    pub step: i64,
    /// The mode.
    pub mode: Mode,
    /// The mode's step.
    pub mode_step: i64,
    /// The event's wall time.
    pub wall_time: f64,
    /// Write the shape into the index (`save_shape`).
    pub write_shape: bool,
}

/// One unit of work for the writer thread.
#[derive(Debug)]
pub(crate) enum Job {
    /// A tensor of the current step.
    Tensor(Box<TensorJob>),
    /// A tensor of the current step as the bytes of its raw value.
    Bytes(Box<BytesJob>),
    /// A TensorBoard scalar (from `save_scalar`).
    TbScalar {
        /// The cleaned tag.
        tag: String,
        /// The value.
        value: f32,
        /// The global step.
        step: i64,
        /// The mode (chooses the TensorBoard file).
        mode: Mode,
        /// The event's wall time.
        wall_time: f64,
    },
    /// The step ended: publish its events file, then its index file, and close the
    /// TensorBoard files.
    EndStep,
    /// Write a whole object (collections file).
    Put {
        /// Its key in the trial.
        key: String,
        /// Its bytes.
        data: Bytes,
    },
    /// Reply once everything before this job is written (with the first failure, if any).
    Flush(SyncSender<Result<(), Arc<WriterError>>>),
    /// Several jobs, in order, sent as one message (one wake-up of the writer).
    Batch(Vec<Job>),
    /// [`crate::Hook::trigger_flight_recorder`]: write what the recorder holds.
    RecorderTrigger {
        /// The global step the call was made in.
        step: i64,
        /// Why, in the caller's words.
        reason: String,
    },
}
