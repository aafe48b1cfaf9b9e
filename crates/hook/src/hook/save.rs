//! The save path of [`Hook`]: which collections save a tensor at this step, and the
//! `save*` calls that turn a tensor into a job for the writer thread. The training-thread
//! lifecycle (steps, modes, closing) is in the parent module.

use super::{CachedScalar, CustomTensor, Hook};
use crate::decisions::Plan;
use crate::error::{HookError, Result};
use crate::job::{BytesJob, Deferred, Job, TensorJob};
use crate::lent::LentTensor;
use crate::stats::Saved;
use smdebug_config::HealthSummary;
use smdebug_record::{DType, TensorValue};
use smdebug_storage::Bytes;

impl Hook {
    /// Declares a tensor name before training: its saved collections are computed (a regex
    /// match records the name in the collection, so it appears in the collections file even
    /// if the tensor is never due). Prepares the collections if no step ran yet. Returns the
    /// names of the saved collections containing it.
    pub fn declare_tensor(&mut self, name: &str) -> Result<Vec<String>> {
        self.decisions.declare(name)
    }

    /// The indices of the collections saving `name` at this step.
    fn saving_collections(&mut self, name: &str) -> Result<Vec<usize>> {
        if !self.clock.started() {
            return Err(HookError::NoStep {
                name: name.to_owned(),
            });
        }
        if !self.outputs.writes {
            return Ok(Vec::new());
        }
        self.decisions
            .saving(name, self.clock.step_mode().0, self.clock.step_mode().1)
    }

    /// Whether a tensor of this name would be saved at this step. Cheap after the first
    /// call per name; lets a training loop skip copying tensors that are not due.
    pub fn should_save(&mut self, name: &str) -> Result<bool> {
        Ok(!self.saving_collections(name)?.is_empty() || self.recording(name)?)
    }

    /// Whether [`Hook::should_save`] can answer yes for any name at this step: a saved
    /// collection is due at the step (every collection's save config, in the mode the step
    /// began in, gradients and optimizer variables never in EVAL or PREDICT) on a worker that
    /// writes, or the flight recorder keeps tensors (at every step). Fixed when
    /// [`Hook::step`] returns until the next step: `set_mode` leaves the step as it began.
    /// False before the first step. A framework hook asks once per step and, on a no, skips
    /// every per-tensor call of the step.
    pub fn anything_due(&self) -> bool {
        let recording = self.recorded.is_some() && self.outputs.writes && self.clock.started();
        self.step_saves || recording
    }

    /// Whether the flight recorder keeps tensor `name` (it is in a recorded collection).
    fn recording(&mut self, name: &str) -> Result<bool> {
        let Some(rec) = &self.recorded else {
            return Ok(false);
        };
        if let Some(&yes) = rec.by_tensor.get(name) {
            return Ok(yes);
        }
        if !self.clock.started() || !self.outputs.writes {
            return Ok(false);
        }
        let names = rec.names.clone();
        let found = self.decisions.containing(name)?.to_vec();
        let prepared = self.decisions.prepared();
        let yes = found
            .iter()
            .any(|&i| names.is_empty() || names.contains(&prepared[i].name));
        if let Some(rec) = &mut self.recorded {
            rec.by_tensor.insert(name.to_owned(), yes);
        }
        Ok(yes)
    }

    /// Makes the flight recorder write what it holds now (steps before this one and this
    /// step's recorded tensors, those saved later in the step too), with `reason` in the
    /// manifest. Does nothing without a recorder.
    pub fn trigger_flight_recorder(&mut self, reason: &str) -> Result<()> {
        if self.recorded.is_none() || !self.clock.started() {
            return Ok(());
        }
        self.queue.send(Job::RecorderTrigger {
            step: self.clock.step(),
            reason: reason.to_owned(),
        })
    }

    /// Whether the raw value of a tensor of this name is due at this step (a due collection
    /// containing it saves raw tensors).
    pub fn raw_due(&mut self, name: &str) -> Result<bool> {
        let saving = self.saving_collections(name)?;
        Ok(self.decisions.raw(&saving))
    }

    /// Offers a tensor at the current step (`_save_for_tensor`): if a collection containing
    /// it is due, its shape, reductions and raw value are written as those collections'
    /// reduction configs say (shape → reductions → raw value, each reduction once, no raw
    /// value for empty tensors), plus TensorBoard summaries when enabled.
    pub fn save(&mut self, name: &str, value: TensorValue) -> Result<Saved> {
        let len = value.len();
        self.save_job(name, len, value, None)
    }

    /// [`Hook::save`] of a value made on the writer thread by `make`, for a tensor of `len`
    /// elements: the training thread pays for the decisions and a queue message, not for
    /// copying the elements. For a framework whose tensors are reference-counted and
    /// immutable (an activation, a gradient), `make` captures a clone of the handle and
    /// converts it; a tensor the training loop later updates in place (a parameter before
    /// the optimizer step) must be copied now, through [`Hook::save`]. An error from `make`
    /// stops the writer like a storage error ([`crate::WriterError::Convert`]).
    pub fn save_deferred(
        &mut self,
        name: &str,
        len: usize,
        make: impl FnOnce() -> std::result::Result<TensorValue, String> + Send + 'static,
    ) -> Result<Saved> {
        let empty = TensorValue::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0])));
        let deferred = Deferred::Make(Box::new(make));
        self.save_job(name, len, empty, Some(deferred))
    }

    /// [`Hook::save`] of a tensor the framework lends ([`LentTensor`]: elements nothing
    /// writes to again, such as an activation or a gradient): the training thread pays for
    /// the decisions and a queue message only. The writer thread copies the elements once,
    /// when something of the tensor is written at this step or the flight recorder keeps
    /// it, and drops the handle right after ([`LentTensor`]). An error from
    /// [`LentTensor::to_value`] stops the writer like a storage error
    /// ([`crate::WriterError::Convert`]).
    pub fn save_lent(&mut self, name: &str, tensor: impl LentTensor) -> Result<Saved> {
        let len = tensor.len();
        let empty = TensorValue::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0])));
        let deferred = Deferred::Lent(Box::new(tensor));
        self.save_job(name, len, empty, Some(deferred))
    }

    fn save_job(
        &mut self,
        name: &str,
        len: usize,
        value: TensorValue,
        deferred: Option<Deferred>,
    ) -> Result<Saved> {
        let saving = self.saving_collections(name)?;
        let record = self.recording(name)?;
        if saving.is_empty() && !record {
            return Ok(Saved::NotDue);
        }
        let tensorboard = self.outputs.tensorboard;
        let plan = if saving.is_empty() {
            Plan::default()
        } else {
            self.decisions.plan(name, &saving, tensorboard)
        };
        let job = TensorJob {
            name: name.to_owned(),
            raw: plan.raw && len != 0,
            histogram: plan.histogram.filter(|_| len != 0),
            tb_scalar: plan.scalar && tensorboard,
            value,
            deferred,
            len,
            step: self.clock.step(),
            mode: self.clock.step_mode().0,
            mode_step: self.clock.step_mode().1,
            wall_time: self.wall(),
            shape: plan.shape,
            reductions: plan.reductions,
            health: plan.health,
            record,
        };
        self.queue.offer(Job::Tensor(Box::new(job)))
    }

    /// [`Hook::save`] of a numeric tensor given as its dtype, its shape and the little-endian
    /// bytes of its elements in C order, e.g. a [`Bytes::from_owner`] of a buffer that a
    /// Python or C caller lends: when what is due of the tensor is its raw value and shape
    /// only (no reductions, health summary, TensorBoard summary or flight-recorder copy),
    /// the writer thread encodes the record straight from `data` (no copy before the encode)
    /// and drops `data` right after. The job goes to the writer at once, not with the step's
    /// batch, so that a caller waiting for its buffer to be released waits for the encode
    /// only (and not with [`QueuePolicy::DropNewest`](crate::QueuePolicy::DropNewest), which
    /// must not block). In every other case nothing is done and `Ok(None)` comes back: pass
    /// the value to [`Hook::save`] as a [`TensorValue`].
    ///
    /// Fails with [`HookError::TensorBytes`] when `data` does not hold `shape` of `dtype`
    /// (or `dtype` is a string dtype).
    pub fn save_bytes(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[usize],
        data: Bytes,
    ) -> Result<Option<Saved>> {
        let expected = dtype
            .item_size()
            .and_then(|item| shape.iter().try_fold(item, |n, &d| n.checked_mul(d)));
        if expected != Some(data.len()) {
            return Err(HookError::TensorBytes {
                name: name.to_owned(),
                dtype: dtype.name(),
                shape: shape.to_vec(),
                len: data.len(),
            });
        }
        let saving = self.saving_collections(name)?;
        let record = self.recording(name)?;
        if saving.is_empty() && !record {
            return Ok(Some(Saved::NotDue));
        }
        if record || data.is_empty() || !self.queue.blocks() {
            return Ok(None);
        }
        let tensorboard = self.outputs.tensorboard;
        let plan = self.decisions.plan(name, &saving, tensorboard);
        let only_raw = plan.raw
            && plan.reductions.is_empty()
            && plan.health == HealthSummary::Off
            && plan.histogram.is_none()
            && !(plan.scalar && tensorboard);
        if !only_raw {
            return Ok(None);
        }
        let job = BytesJob {
            name: name.to_owned(),
            dtype,
            shape: shape.to_vec(),
            data,
            step: self.clock.step(),
            mode: self.clock.step_mode().0,
            mode_step: self.clock.step_mode().1,
            wall_time: self.wall(),
            write_shape: plan.shape,
        };
        self.queue.send_at_once(Job::Bytes(Box::new(job)))?;
        Ok(Some(Saved::Queued))
    }

    /// Writes a raw record of `value` under `name` into the current step, with no
    /// collection or save-config check, even when the tensor is empty. A low-level escape
    /// for tools that reproduce smdebug's writer classes (e.g. a second value under the
    /// same name, which readers resolve to the last one).
    pub fn write_raw_record(&mut self, name: &str, value: TensorValue) -> Result<Saved> {
        if !self.clock.started() {
            return Err(HookError::NoStep {
                name: name.to_owned(),
            });
        }
        if !self.outputs.writes {
            return Ok(Saved::NotDue);
        }
        let job = TensorJob::raw(name.to_owned(), value, self.stamp(), self.wall());
        self.queue.send(Job::Tensor(Box::new(job)))?;
        Ok(Saved::Queued)
    }

    /// `save_tensor`: a custom tensor for collection `collection` (created if missing; the
    /// name is added to it). It is written as a raw tensor at the end of the current step
    /// (of the first step when given before it) if that step saves anything and the
    /// collection saves raw tensors — with no save-config check of its own, whether or not
    /// the collection is among the saved ones. One value per name and step: a later call
    /// replaces an earlier one.
    pub fn save_tensor(&mut self, name: &str, value: TensorValue, collection: &str) {
        self.custom.retain(|c| c.name != name);
        self.custom.push(CustomTensor {
            name: name.to_owned(),
            value,
            collection: collection.to_owned(),
        });
    }

    /// A forced save (smdebug's `_save_for_tensor(..., check_before_write=False)`, which its
    /// Keras hook does with the epoch's losses and metrics at the end of every epoch): adds
    /// `name` to collection `collection` (created if missing) and writes its raw value into
    /// the current step at once, whether or not the step is due and whether or not the
    /// collection is saved, if the collection saves raw values (as for
    /// [`Hook::save_tensor`]). The step is then published when it ends, with the cached
    /// scalars, as a due step is; its `save_tensor` values stay unwritten unless it is due.
    /// A `save_tensor` value of the same name in this step is written first (if the step is
    /// due), so that the forced one, written after it, is the one readers take.
    pub fn save_forced(
        &mut self,
        name: &str,
        value: TensorValue,
        collection: &str,
    ) -> Result<Saved> {
        if !self.clock.started() {
            return Err(HookError::NoStep {
                name: name.to_owned(),
            });
        }
        if !self.outputs.writes {
            return Ok(Saved::NotDue);
        }
        if let Some(i) = self.custom.iter().position(|c| c.name == name) {
            let earlier = self.custom.remove(i);
            if self.step_saves {
                self.write_custom(earlier)?;
            }
        }
        if !self.decisions.add_custom(name, collection) || value.is_empty() {
            return Ok(Saved::NotDue);
        }
        self.step_forced = true;
        self.write_raw_record(name, value)
    }

    /// `save_scalar(name, value)`: recorded as `scalar/<name>` (float64, shape `[1]`) in the
    /// events file of the step that is current when the cache is flushed (the end of the
    /// next step that saves something, or close), and as a TensorBoard scalar. `timestamp`
    /// (seconds since the epoch) becomes the event's wall time; `None` or 0 means the time
    /// of this call (as smdebug's `ScalarCache` stamps it).
    pub fn save_scalar(&mut self, name: &str, value: f64, timestamp: Option<f64>) {
        // smdebug stamps a scalar when it is saved, not when the cache is written.
        let timestamp = Some(
            timestamp
                .filter(|&t| t != 0.0)
                .unwrap_or_else(|| self.wall()),
        );
        self.scalars.push(CachedScalar {
            name: format!("scalar/{name}"),
            value: TensorValue::from(ndarray::arr1(&[value]).into_dyn()),
            timestamp,
        });
    }

    /// Like [`Hook::save_scalar`] with a tensor value of any dtype, which must have exactly
    /// one element (its shape is kept, e.g. 0-d).
    pub fn save_scalar_tensor(
        &mut self,
        name: &str,
        value: TensorValue,
        timestamp: Option<f64>,
    ) -> Result<()> {
        let name = format!("scalar/{name}");
        if value.len() != 1 {
            return Err(HookError::NotAScalar {
                name,
                len: value.len(),
            });
        }
        let timestamp = Some(
            timestamp
                .filter(|&t| t != 0.0)
                .unwrap_or_else(|| self.wall()),
        );
        self.scalars.push(CachedScalar {
            name,
            value,
            timestamp,
        });
        Ok(())
    }
}
