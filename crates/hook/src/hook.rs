//! [`Hook`]: the training-thread side. It holds the parts a save goes through — the step
//! clock ([`StepClock`]), the save decisions ([`SaveDecisions`]: collections × save
//! configs × reduction configs), the queue to the writer thread ([`WriterQueue`]) and the
//! stop-signal watch ([`StopSignalWatch`]) — and ties them together. Everything it decides
//! is handed to the writer thread as a job.

use crate::builder::HookBuilder;
use crate::decisions::SaveDecisions;
use crate::error::{HookError, Result};
use crate::job::{Job, TensorJob};
use crate::queue::WriterQueue;
use crate::stats::HookStats;
use crate::steps::StepClock;
use crate::stop::StopSignalWatch;
use crate::tensorboard::{clean_tag, values_f64};
use crate::wall_time::WallTime;
use crate::writer;
use smdebug_config::{is_sagemaker_job, Collection, CollectionManager, Mode};
use smdebug_index::collections_file_key;
use smdebug_record::TensorValue;
use smdebug_storage::{BlockingStore, Bytes};
use std::collections::HashMap;
use std::sync::Arc;

mod save;

/// A `save_scalar` value, cached until a step that saves something ends (or close).
#[derive(Debug)]
struct CachedScalar {
    /// `scalar/<name>`.
    name: String,
    /// The value (one element).
    value: TensorValue,
    /// The event's wall time; `None` or 0 means the time it is written.
    timestamp: Option<f64>,
}

/// A `save_tensor` value, written at the end of its step.
#[derive(Debug)]
struct CustomTensor {
    /// The tensor's name.
    name: String,
    /// Its value.
    value: TensorValue,
    /// The collection it joins.
    collection: String,
}

/// What this worker writes, fixed when the hook is built.
#[derive(Debug)]
pub(crate) struct Outputs {
    /// This worker writes at all (`include_workers` is all, or this is `worker_0`).
    pub writes: bool,
    /// The `_meta.num_workers` of the collections file.
    pub num_workers_meta: i64,
    /// This worker writes its collections file
    /// ([`HookBuilder::write_collections`](crate::HookBuilder::write_collections)).
    pub write_collections: bool,
    /// Close writes `training_job_end.ts`
    /// ([`HookBuilder::end_marker`](crate::HookBuilder::end_marker)).
    pub end_marker: bool,
    /// TensorBoard summaries are written (a TensorBoard folder is configured).
    pub tensorboard: bool,
    /// Where the events' wall time comes from.
    pub wall_time: WallTime,
    /// Where TensorBoard files go, as the original's `hook.tensorboard_dir` names it.
    pub tensorboard_dir: Option<String>,
}

/// The parts of a hook, assembled from a builder's settings (`start.rs`).
pub(crate) struct HookParts {
    /// The trial's store (the writer thread holds it too).
    pub store: Arc<BlockingStore>,
    /// The out_dir as given.
    pub out_dir: String,
    /// This worker's name.
    pub worker: String,
    /// Where every step counter starts.
    pub init_step: i64,
    /// Which tensors are due at a step, and what to write of them.
    pub decisions: SaveDecisions,
    /// What this worker writes.
    pub outputs: Outputs,
    /// The queue to the writer thread (its thread running).
    pub queue: WriterQueue,
    /// The stop-signal watch.
    pub stop: StopSignalWatch,
    /// Which tensors the flight recorder keeps (`None`: no recorder).
    pub recorded: Option<RecordedCollections>,
}

/// The smdebug writer hook of one worker: call [`Hook::step`] at the start of every step,
/// offer tensors with [`Hook::save`], and [`Hook::close`] at the end.
///
/// The hook decides on the calling thread what is due (collections, save configs, reduction
/// configs) and hands the tensor to a writer thread, which computes reductions, encodes,
/// frames and writes. See the crate documentation for the queue policy.
pub struct Hook {
    /// The trial's store (the writer thread holds it too).
    store: Arc<BlockingStore>,
    /// The out_dir as given.
    out_dir: String,
    /// This worker's name.
    worker: String,
    /// The global step, the mode and the per-mode steps.
    clock: StepClock,
    /// Which tensors are due at a step, and what to write of them.
    decisions: SaveDecisions,
    /// What this worker writes.
    outputs: Outputs,
    /// `save_scalar` values waiting for a step that saves something (or close).
    scalars: Vec<CachedScalar>,
    /// `save_tensor` values of the current step.
    custom: Vec<CustomTensor>,
    /// The collections file was written at the first step.
    exported: bool,
    /// The current step saves something on this worker, so its end writes the cached
    /// scalars and custom tensors and publishes the step.
    step_saves: bool,
    /// [`Hook::save_forced`] wrote into the current step, so its end writes the cached
    /// scalars and publishes the step (its custom tensors only if it saves).
    step_forced: bool,
    /// [`Hook::close`] ran (dropping the hook then does nothing more).
    closed: bool,
    /// The queue to the writer thread.
    queue: WriterQueue,
    /// Whether a stop signal has appeared.
    stop: StopSignalWatch,
    /// Which tensors the flight recorder keeps (`None`: no recorder).
    recorded: Option<RecordedCollections>,
}

/// The flight recorder's collections, and the answer per tensor name.
#[derive(Debug)]
pub(crate) struct RecordedCollections {
    /// Collection names; empty: every saved collection.
    names: Vec<String>,
    /// Whether a tensor is recorded, by name (a tensor's collections never change once seen).
    by_tensor: HashMap<String, bool>,
}

impl RecordedCollections {
    /// The collections called `names` (empty: every saved collection), no tensor seen yet.
    pub fn new(names: Vec<String>) -> Self {
        RecordedCollections {
            names,
            by_tensor: HashMap::new(),
        }
    }
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("out_dir", &self.out_dir)
            .field("worker", &self.worker)
            .field("step", &self.clock.step())
            .field("mode", &self.clock.mode())
            .finish_non_exhaustive()
    }
}

impl Hook {
    /// A builder writing to `out_dir` (see [`HookBuilder`]).
    pub fn builder(out_dir: impl Into<String>) -> HookBuilder {
        HookBuilder::new(out_dir)
    }

    /// A hook of `parts`, before its first step.
    pub(crate) fn assemble(parts: HookParts) -> Hook {
        Hook {
            store: parts.store,
            out_dir: parts.out_dir,
            worker: parts.worker,
            clock: StepClock::new(parts.init_step),
            decisions: parts.decisions,
            outputs: parts.outputs,
            scalars: Vec::new(),
            custom: Vec::new(),
            exported: false,
            step_saves: false,
            step_forced: false,
            closed: false,
            queue: parts.queue,
            stop: parts.stop,
            recorded: parts.recorded,
        }
    }

    /// The out_dir as given.
    pub fn out_dir(&self) -> &str {
        &self.out_dir
    }

    /// Where TensorBoard files go (the original's `hook.tensorboard_dir`): the folder given,
    /// `<out_dir>/tensorboard` when exporting without one, `None` when not exporting.
    pub fn tensorboard_dir(&self) -> Option<&str> {
        self.outputs.tensorboard_dir.as_deref()
    }

    /// This worker's name.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// The current global step (`init_step` before the first [`Hook::step`]).
    pub fn global_step(&self) -> i64 {
        self.clock.step()
    }

    /// The current mode (GLOBAL until [`Hook::set_mode`]): right after a switch, the mode
    /// of the steps to come, not the one the step in progress is saved in.
    pub fn mode(&self) -> Mode {
        self.clock.mode()
    }

    /// The current step of the current mode.
    pub fn mode_step(&self) -> i64 {
        self.clock.mode_step()
    }

    /// The collections (after the first step: with their resolved configs).
    pub fn collections(&self) -> &CollectionManager {
        self.decisions.collections()
    }

    /// The collection called `name`, created if missing. Configure collections before the
    /// first step: smdebug prepares them (resolves configs, picks the saved ones) then, and
    /// later changes of regexes or configs are not seen.
    pub fn get_collection(&mut self, name: &str) -> &mut Collection {
        self.decisions.collection_mut(name)
    }

    /// Adds a collection to the saved ones (before the first step).
    pub fn include_collection(&mut self, name: &str) {
        self.decisions.include(name);
    }

    /// Tensors dropped so far because the queue was full ([`QueuePolicy::DropNewest`](crate::QueuePolicy::DropNewest)).
    pub fn dropped_tensors(&self) -> u64 {
        self.queue.dropped()
    }

    /// Switches the mode (`set_mode`) for the steps that follow. A mode seen for the first
    /// time starts its step counter at `init_step`, so its first step is mode step
    /// `init_step + 1`. The current step keeps the mode and mode step it began in: what it
    /// saves after the switch (and its `save_tensor` values and scalars, written when it
    /// ends) is decided by and stamped with them, since an index file has one mode for
    /// the whole step and the new mode has no step yet.
    pub fn set_mode(&mut self, mode: Mode) {
        // The step's due collections stay cached: they depend on the step's mode, which
        // this does not change.
        self.clock.set_mode(mode);
    }

    /// Starts a new step (the PyTorch hook's `forward_pre_hook`): ends the previous step
    /// (its cached scalars and custom tensors are written, then its files published),
    /// prepares the collections the first time, and advances the global step and the
    /// current mode's step.
    pub fn step(&mut self) -> Result<()> {
        self.queue.check()?;
        self.end_step(false)?;
        self.decisions.prepare()?;
        self.clock.advance();
        self.decisions.new_step();
        let due = !self
            .decisions
            .due(self.clock.step_mode().0, self.clock.step_mode().1)?
            .is_empty();
        self.step_saves = due && self.outputs.writes;
        if !self.exported {
            // The first export happens at the first step, before any index file, so that a
            // reader (which waits for collections files) can open the trial as soon as a
            // step is visible, even if the job dies later.
            self.export_collections()?;
            self.exported = true;
        }
        self.queue.send_pending()
    }

    /// Ends the current step: custom tensors and cached scalars are written (scalars also
    /// when `closing`, into a file for the current step), then the step is published.
    fn end_step(&mut self, closing: bool) -> Result<()> {
        // Custom tensors given before the first step belong to the first step, as in the
        // original (its hooks write them when the first step saves).
        if self.clock.started() {
            let custom = std::mem::take(&mut self.custom);
            if self.step_saves {
                for c in custom {
                    self.write_custom(c)?;
                }
            }
        }
        if self.step_saves || self.step_forced || closing {
            self.write_scalars()?;
            self.queue.send(Job::EndStep)?;
        }
        self.step_saves = false;
        self.step_forced = false;
        Ok(())
    }

    fn write_custom(&mut self, c: CustomTensor) -> Result<()> {
        let raw = self.decisions.add_custom(&c.name, &c.collection);
        if raw && !c.value.is_empty() {
            self.write_raw_record(&c.name, c.value)?;
        }
        Ok(())
    }

    fn wall(&self) -> f64 {
        self.outputs.wall_time.at(self.clock.step())
    }

    /// The global step, and the mode and mode step the current step began in: what
    /// everything the step saves is stamped with.
    fn stamp(&self) -> (i64, Mode, i64) {
        let (mode, mode_step) = self.clock.step_mode();
        (self.clock.step(), mode, mode_step)
    }

    fn write_scalars(&mut self) -> Result<()> {
        let scalars = std::mem::take(&mut self.scalars);
        if !self.outputs.writes {
            return Ok(());
        }
        for s in scalars {
            let wall_time = s
                .timestamp
                .filter(|&t| t != 0.0)
                .unwrap_or_else(|| self.wall());
            if self.outputs.tensorboard {
                if let Some(v) = values_f64(&s.value) {
                    self.queue.send(Job::TbScalar {
                        tag: clean_tag(&s.name),
                        value: v[0] as f32,
                        step: self.clock.step(),
                        mode: self.clock.step_mode().0,
                        wall_time,
                    })?;
                }
            }
            let job = TensorJob::raw(s.name, s.value, self.stamp(), wall_time);
            self.queue.send(Job::Tensor(Box::new(job)))?;
        }
        Ok(())
    }

    /// Whether training should stop: true once the stop-signal object exists in the trial
    /// (and from then on). Checked at most once per step and at most once per
    /// `stop_check_interval`, so calling it every iteration is cheap; works across
    /// processes and on object storage.
    pub fn should_stop(&mut self) -> bool {
        self.stop.poll(&self.store, self.clock.step())
    }

    /// The key of the stop-signal object, relative to the trial.
    pub fn stop_signal_key(&self) -> &str {
        self.stop.key()
    }

    fn export_collections(&mut self) -> Result<()> {
        if !self.outputs.writes || !self.outputs.write_collections {
            return Ok(());
        }
        let mut cm = self.decisions.collections().clone();
        cm.set_num_workers(self.outputs.num_workers_meta);
        let key = collections_file_key(&self.worker)?;
        self.queue.send(Job::Put {
            key,
            data: Bytes::from(cm.to_json()),
        })
    }

    /// Waits until everything handed to the writer thread so far is written; reports the
    /// writer thread's first failure.
    pub fn flush(&mut self) -> Result<()> {
        self.queue.flush()
    }

    /// Ends training (`hook.close()`): writes cached scalars, publishes the last step,
    /// writes the collections file again with every tensor name seen, waits for the writer
    /// thread, then writes `training_job_end.ts` (not in SageMaker jobs, where SageMaker
    /// writes it). Dropping the hook does the same, ignoring errors.
    pub fn close(mut self) -> Result<HookStats> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<HookStats> {
        if self.closed {
            return Ok(self.queue.stats());
        }
        self.closed = true;
        let result = self.finish();
        let closed = self.queue.close();
        // A panicked writer explains any other failure: it comes first.
        if let Err(e @ HookError::WriterPanicked) = closed {
            return Err(e);
        }
        result?;
        closed?;
        if self.outputs.writes && self.outputs.end_marker && !is_sagemaker_job() {
            writer::write_end_marker(&self.store)?;
        }
        Ok(self.queue.stats())
    }

    fn finish(&mut self) -> Result<()> {
        self.queue.check()?;
        self.decisions.prepare()?;
        // Closed before any step: there is no step to put cached scalars in (smdebug would
        // write them at step -1, which no reader can open), so they are dropped.
        if self.outputs.writes && self.clock.started() {
            self.end_step(true)?;
        }
        self.export_collections()?;
        self.queue.send_pending()
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            tracing::error!("closing the smdebug hook: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{QueuePolicy, MAX_PENDING_ELEMENTS, MAX_PENDING_JOBS};
    use crate::stats::Saved;
    use smdebug_config::SaveConfig;
    use smdebug_config::SaveConfigMode;

    fn loss() -> TensorValue {
        TensorValue::from(ndarray::arr1(&[1.0f32]).into_dyn())
    }

    fn hook(dir: &std::path::Path, policy: QueuePolicy, capacity: usize) -> Hook {
        HookBuilder::new(dir.to_str().unwrap())
            .save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .queue_policy(policy)
            .queue_capacity(capacity)
            .build()
            .unwrap()
    }

    #[test]
    fn a_step_is_handed_over_in_one_burst_when_the_next_step_starts() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 256);
        h.step().unwrap();
        assert!(h.queue.held() == 0);
        for i in 0..3 {
            let name = format!("L{i}MSELoss_output_0");
            assert_eq!(h.save(&name, loss()).unwrap(), Saved::Queued);
        }
        assert_eq!(h.queue.held(), 3);
        h.step().unwrap();
        assert!(h.queue.held() == 0);
        h.save("L0MSELoss_output_0", loss()).unwrap();
        h.flush().unwrap();
        assert!(h.queue.held() == 0);
        // Step 0: three losses; step 1: one.
        assert_eq!(h.close().unwrap().records, 4);
    }

    #[test]
    fn held_jobs_are_bounded_by_the_batch_size() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 256);
        assert_eq!(h.queue.batch_jobs(), MAX_PENDING_JOBS);
        h.step().unwrap();
        let n = MAX_PENDING_JOBS * 2 + 5;
        let mut most = 0;
        for i in 0..n {
            h.save(&format!("L{i}MSELoss_output_0"), loss()).unwrap();
            most = most.max(h.queue.held());
        }
        assert_eq!(most, MAX_PENDING_JOBS - 1);
        assert_eq!(h.close().unwrap().records, n as u64);
    }

    #[test]
    fn a_queue_smaller_than_a_batch_holds_no_more_jobs_than_its_capacity() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 3);
        assert_eq!(h.queue.batch_jobs(), 3);
        h.step().unwrap();
        let n = MAX_PENDING_JOBS * 2 + 5;
        for i in 0..n {
            h.save(&format!("L{i}MSELoss_output_0"), loss()).unwrap();
            assert!(h.queue.held() < 3);
        }
        assert_eq!(h.close().unwrap().records, n as u64);
    }

    #[test]
    fn held_jobs_are_bounded_and_a_tiny_queue_still_gets_everything() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 1);
        h.step().unwrap();
        let n = MAX_PENDING_JOBS * 2 + 5;
        for i in 0..n {
            h.save(&format!("L{i}MSELoss_output_0"), loss()).unwrap();
            assert!(h.queue.held() == 0, "a queue of one job holds single jobs");
        }
        let big = TensorValue::from(ndarray::Array1::<f32>::zeros(MAX_PENDING_ELEMENTS).into_dyn());
        h.save("BigMSELoss_output_0", big).unwrap();
        assert!(h.queue.held() == 0, "a large tensor is sent at once");
        assert_eq!(h.close().unwrap().records, n as u64 + 1);
    }

    #[test]
    fn drop_newest_decides_at_save_time() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::DropNewest, 256);
        h.step().unwrap();
        h.save("MSELoss_output_0", loss()).unwrap();
        assert!(h.queue.held() == 0);
        assert_eq!(h.close().unwrap().records, 1);
    }
}
