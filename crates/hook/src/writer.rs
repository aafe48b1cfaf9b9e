//! The writer thread: everything that costs more than a copy happens here or on the I/O
//! threads it feeds — reductions, protobuf encoding, framing with CRCs, histograms and
//! storage calls.
//!
//! Jobs arrive in order over one bounded channel, so the files of a step are published in
//! the order smdebug publishes them: the events file first, then the index file that points
//! into it. A reader that sees an index file therefore always finds a complete events file.
//! The writer assembles each step's files ([`StepFile`]), hands them to the I/O threads
//! ([`IoPool`]), and runs the flight recorder ([`Recorder`]) when it is on.

use crate::encode::{health_tensors, reduce_tensor, scalar_tensor, StepFile};
use crate::error::WriterError;
use crate::io_pool::{IoPool, Put};
use crate::job::{BytesJob, Deferred, Job, TensorJob};
use crate::lent::LentTensor;
use crate::priority::WriterPriority;
use crate::recorder::{KeptStep, Trigger};
use crate::recorder_wiring::{Recorder, RecorderWiring};
use crate::stats::Shared;
use crate::tensorboard;
use smdebug_config::{HealthSummary, Mode, ReductionShape};
use smdebug_index::{event_file_key, health_tensor_name, tensorboard_file_key, END_OF_JOB_FILE};
use smdebug_record::{
    append_record, append_tensor_event, append_tensor_event_le, histogram_event, scalar_event,
    DType, Footer, Message, RecordInfo, TensorValue,
};
use smdebug_reduce::{Flavor, Health, ReductionRequest};
use smdebug_storage::{BlockingStore, Bytes, StorageError};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

/// Most tensor names whose reduction tensor names the writer remembers.
const MAX_CACHED_NAMES: usize = 4096;

/// Where TensorBoard files go.
pub(crate) struct TbTarget {
    /// The store holding the TensorBoard folder.
    pub store: Arc<BlockingStore>,
    /// Key prefix inside that store (`"tensorboard/"` inside the trial, or `""`).
    pub prefix: String,
    /// `{pid}_{hostname}`.
    pub worker: String,
}

/// Settings of the writer thread.
pub(crate) struct WriterConfig {
    /// The trial's store.
    pub store: Arc<BlockingStore>,
    /// This worker's name, in events and index file names.
    pub worker: String,
    /// Whose semantics reductions follow.
    pub flavor: Flavor,
    /// The shape reductions are saved with.
    pub reduction_shape: ReductionShape,
    /// Where TensorBoard files go; `None`: no TensorBoard output.
    pub tensorboard: Option<TbTarget>,
    /// The flight recorder, when on.
    pub recorder: Option<RecorderWiring>,
    /// The writer and I/O threads' scheduling priority.
    pub priority: WriterPriority,
}

/// A TensorBoard events file of one mode, assembled until the step ends.
struct TbFile {
    /// Its key in the TensorBoard store.
    key: String,
    /// Its framed records.
    bytes: Vec<u8>,
}

/// The writer thread's state.
struct Writer {
    /// Its settings.
    cfg: WriterConfig,
    /// The first failure and the counters, shared with the hook and the I/O threads.
    shared: Arc<Shared>,
    /// The step being assembled.
    current: Option<StepFile>,
    /// The step's TensorBoard files, by mode number.
    tb_files: BTreeMap<u8, TbFile>,
    /// The I/O threads.
    io: IoPool,
    /// Puts of the current job, handed to the I/O threads together when the job is done.
    outgoing: Vec<Put>,
    /// Reduction tensor names by tensor name and request (see [`Writer::reduction_name`]).
    reduction_names: HashMap<String, HashMap<ReductionRequest, String>>,
    /// Size of the last published events file (capacity hint for the next one).
    last_events_len: usize,
    /// The flight recorder, when on.
    recorder: Option<Recorder>,
}

/// Runs the writer loop until the channel closes (the hook was closed or dropped).
pub(crate) fn run(cfg: WriterConfig, shared: Arc<Shared>, jobs: Receiver<Job>) {
    cfg.priority.apply_to_current_thread();
    let io = IoPool::start(&cfg.store, &shared, cfg.priority);
    let recorder = cfg.recorder.clone().map(Recorder::new);
    let mut w = Writer {
        cfg,
        shared,
        current: None,
        tb_files: BTreeMap::new(),
        io,
        outgoing: Vec::new(),
        reduction_names: HashMap::new(),
        last_events_len: 0,
        recorder,
    };
    for job in jobs {
        w.dispatch(job);
    }
    // The channel closed without EndStep (the hook was dropped mid-step): publish what the
    // step holds, as smdebug's atexit handler would.
    if !w.shared.failed() {
        if let Err(e) = w.end_step().and_then(|()| w.send_puts()) {
            w.shared.fail(e);
        }
        if w.recorder.as_ref().is_some_and(Recorder::manifest_due) {
            w.write_manifest();
            if let Err(e) = w.send_puts() {
                w.shared.fail(e);
            }
        }
    }
    let Writer { io, shared, .. } = w;
    io.stop(&shared);
}

impl Writer {
    /// Runs one job (a batch's jobs arrive here one by one).
    fn dispatch(&mut self, job: Job) {
        let job = match job {
            // Each job of a batch on its own: a flush in it is answered even after a failure.
            Job::Batch(batch) => {
                batch.into_iter().for_each(|j| self.dispatch(j));
                return;
            }
            Job::Flush(reply) => {
                self.io.wait();
                let _ = reply.send(match self.shared.failure() {
                    Some(f) => Err(f),
                    None => Ok(()),
                });
                return;
            }
            job => job,
        };
        if self.shared.failed() {
            // After a failure nothing more is written: a trial with a hole in the middle
            // would look complete to a reader.
            return;
        }
        if let Err(e) = self.handle(job).and_then(|()| self.send_puts()) {
            self.shared.fail(e);
        }
    }

    fn handle(&mut self, job: Job) -> Result<(), WriterError> {
        match job {
            Job::Tensor(t) => self.tensor(*t),
            Job::Bytes(t) => self.tensor_bytes(&t),
            Job::TbScalar {
                tag,
                value,
                step,
                mode,
                wall_time,
            } => {
                let payload = scalar_event(&tag, value, step, wall_time).encode_to_vec();
                self.tb_append(mode, step, &payload)
            }
            Job::EndStep => self.end_step(),
            Job::Put { key, data } => {
                let store = self.cfg.store.clone();
                self.put(store, key, data, 0);
                Ok(())
            }
            Job::RecorderTrigger { step, reason } => {
                self.step_begins(step, None)?;
                self.fire(Trigger::Explicit, reason, step, None)
            }
            // Taken apart by `dispatch` before they get here.
            Job::Flush(_) | Job::Batch(_) => Ok(()),
        }
    }

    fn step_file(&mut self, step: i64) -> Result<&mut StepFile, WriterError> {
        if self.current.as_ref().is_some_and(|c| c.step != step) {
            self.publish_step()?;
        }
        // Steps tend to be alike: starting at the last step's size avoids regrowing (and
        // copying) a buffer of many megabytes several times per step.
        let hint = self.last_events_len;
        let io = &self.io;
        Ok(self.current.get_or_insert_with(|| {
            let events = io
                .spare_buffer()
                .unwrap_or_else(|| Vec::with_capacity(hint));
            StepFile::new(step, events)
        }))
    }

    fn write_record(
        &mut self,
        name: String,
        value: &TensorValue,
        step: i64,
        mode: Mode,
        mode_step: i64,
        wall_time: f64,
    ) -> Result<(), WriterError> {
        self.write_record_with(name, step, mode, mode_step, |events, name| {
            append_tensor_event(
                events,
                name,
                value,
                step,
                mode.as_int(),
                mode_step,
                wall_time,
                Footer::Magic,
            )
        })
    }

    /// Appends the record `encode` writes into the step's events file and its index entry.
    fn write_record_with(
        &mut self,
        name: String,
        step: i64,
        mode: Mode,
        mode_step: i64,
        encode: impl FnOnce(&mut Vec<u8>, &str) -> Result<RecordInfo, smdebug_record::RecordError>,
    ) -> Result<(), WriterError> {
        // The key goes into the index once per step, not into every record.
        let named = self
            .current
            .as_ref()
            .is_some_and(|c| c.step == step && c.names_event_file());
        let event_key = if named {
            None
        } else {
            Some(event_file_key(step, &self.cfg.worker)?)
        };
        let file = self.step_file(step)?;
        file.append(name, (mode, mode_step), event_key, encode)?;
        self.shared.records.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// [`smdebug_index::reduction_tensor_name`], remembered: the same tensors are reduced at
    /// every step.
    fn reduction_name(&mut self, name: &str, request: &ReductionRequest) -> String {
        if let Some(tag) = self.reduction_names.get(name).and_then(|m| m.get(request)) {
            return tag.clone();
        }
        let tag = smdebug_index::reduction_tensor_name(name, request.reduction.name(), request.abs);
        // Bounded, for programs that invent a new tensor name at every step.
        if self.reduction_names.len() < MAX_CACHED_NAMES || self.reduction_names.contains_key(name)
        {
            self.reduction_names
                .entry(name.to_owned())
                .or_default()
                .insert(*request, tag.clone());
        }
        tag
    }

    /// Adds `name`'s shape entry to the step's index file (made on the step's first entry).
    fn push_shape(
        &mut self,
        step: i64,
        mode: Mode,
        mode_step: i64,
        name: &str,
        shape: &[usize],
    ) -> Result<(), WriterError> {
        self.step_file(step)?
            .push_shape((mode, mode_step), name, shape);
        Ok(())
    }

    /// A lent tensor of which only the raw value (and its shape) is due: its shape entry
    /// and raw record, encoded straight from the lent elements when they are C-contiguous
    /// (no copy into a [`TensorValue`] first: one copy of the elements fewer, as
    /// [`Writer::tensor_bytes`]); `None` when the job needs a value or the elements cannot
    /// be lent as bytes.
    fn raw_from_lent(&mut self, t: &TensorJob) -> Option<Result<(), WriterError>> {
        let Some(Deferred::Lent(lent)) = &t.deferred else {
            return None;
        };
        let raw_only = t.raw
            && !t.record
            && t.reductions.is_empty()
            && t.health == HealthSummary::Off
            && t.histogram.is_none()
            && !t.tb_scalar;
        if !raw_only {
            return None;
        }
        let mut written = None;
        lent.with_view(&mut |view| {
            let Some(bytes) = view.le_bytes() else {
                return;
            };
            written = Some(self.raw_record_le(t, view.dtype().into(), view.shape(), bytes));
        });
        written
    }

    /// The shape entry (when due) and the raw record of `t`, encoded from `le_bytes`.
    fn raw_record_le(
        &mut self,
        t: &TensorJob,
        dtype: DType,
        shape: &[usize],
        le_bytes: &[u8],
    ) -> Result<(), WriterError> {
        let at = (t.step, t.mode, t.mode_step, t.wall_time);
        self.shape_and_record_le(&t.name, at, t.shape, dtype, shape, le_bytes)
    }

    /// A tensor's shape entry (when `write_shape`) and raw record, encoded from its
    /// little-endian elements; `at` is its (global step, mode, mode step, wall time).
    fn shape_and_record_le(
        &mut self,
        name: &str,
        (step, mode, mode_step, wall_time): (i64, Mode, i64, f64),
        write_shape: bool,
        dtype: DType,
        shape: &[usize],
        le_bytes: &[u8],
    ) -> Result<(), WriterError> {
        if write_shape {
            self.push_shape(step, mode, mode_step, name, shape)?;
        }
        self.write_record_with(name.to_owned(), step, mode, mode_step, |events, name| {
            append_tensor_event_le(
                events,
                name,
                dtype,
                shape,
                le_bytes,
                step,
                mode.as_int(),
                mode_step,
                wall_time,
                Footer::Magic,
            )
        })
    }

    /// A tensor given as bytes: its shape entry and raw record, encoded straight from them.
    fn tensor_bytes(&mut self, t: &BytesJob) -> Result<(), WriterError> {
        self.step_begins(t.step, Some((t.mode, t.mode_step)))?;
        let at = (t.step, t.mode, t.mode_step, t.wall_time);
        self.shape_and_record_le(&t.name, at, t.write_shape, t.dtype, &t.shape, &t.data)
    }

    fn tensor(&mut self, mut t: TensorJob) -> Result<(), WriterError> {
        self.step_begins(t.step, Some((t.mode, t.mode_step)))?;
        if let Some(Deferred::Lent(_)) = &t.deferred {
            // Only kept by the flight recorder (not written now): copied from its view into
            // a buffer the ring let go, checked as it is copied.
            let live = self.recorder.as_ref().is_some_and(|r| r.live(t.step));
            let kept_only = t.record
                && !live
                && !t.shape
                && !t.raw
                && t.reductions.is_empty()
                && t.health == HealthSummary::Off
                && t.histogram.is_none()
                && !t.tb_scalar;
            if kept_only {
                if let Some(Deferred::Lent(lent)) = t.deferred.take() {
                    return self.record_lent(t, lent);
                }
            }
        }
        if let Some(written) = self.raw_from_lent(&t) {
            return written;
        }
        if let Some(make) = t.deferred.take() {
            t.value = make.make(&t.name, t.step)?;
        }
        if t.shape {
            self.push_shape(t.step, t.mode, t.mode_step, &t.name, t.value.shape())?;
        }
        let mut health = None;
        if !t.reductions.is_empty() || t.health != HealthSummary::Off {
            let (results, h) = reduce_tensor(&t.value, &t.reductions, t.health, self.cfg.flavor);
            health = h;
            for (request, result) in t.reductions.iter().zip(results) {
                // A reduction the original cannot compute (min of an empty tensor, the
                // numpy norm of a 3-d tensor, ...) is skipped with a warning, as smdebug does.
                let Some(scalar) = result else {
                    tracing::debug!("reduction {} of {} skipped", request.name(), t.name);
                    continue;
                };
                let tag = self.reduction_name(&t.name, request);
                let value = scalar_tensor(scalar, self.cfg.reduction_shape);
                self.write_record(tag, &value, t.step, t.mode, t.mode_step, t.wall_time)?;
            }
            if let Some(h) = &health {
                for (part, value) in health_tensors(h) {
                    let tag = health_tensor_name(&t.name, part);
                    self.write_record(tag, &value, t.step, t.mode, t.mode_step, t.wall_time)?;
                }
            }
        }
        if let Some(tag) = &t.histogram {
            if let Some(h) = tensorboard::values_f64(&t.value)
                .as_deref()
                .and_then(tensorboard::make_histogram)
            {
                let payload = histogram_event(tag, h, t.step, t.wall_time).encode_to_vec();
                self.tb_append(t.mode, t.step, &payload)?;
            }
        }
        if t.raw {
            let name = t.name.clone();
            self.write_record(name, &t.value, t.step, t.mode, t.mode_step, t.wall_time)?;
        }
        if t.tb_scalar && t.value.len() == 1 {
            if let Some(v) = tensorboard::values_f64(&t.value) {
                let tag = tensorboard::clean_tag(&t.name);
                let payload = scalar_event(&tag, v[0] as f32, t.step, t.wall_time).encode_to_vec();
                self.tb_append(t.mode, t.step, &payload)?;
            }
        }
        if t.record {
            self.record(t, health)?;
        }
        Ok(())
    }

    /// A job of global step `step` arrives: a step before it is over. Publishes it even
    /// without an EndStep (a step only the recorder wrote is not due by the save config, so
    /// the hook sends none), and polls for the recorder's signal once per step. `mode`: the
    /// job's mode and mode step, when it has them (for the manifest of a firing).
    fn step_begins(&mut self, step: i64, mode: Option<(Mode, i64)>) -> Result<(), WriterError> {
        if self.current.as_ref().is_some_and(|c| c.step < step) {
            self.publish_step()?;
        }
        let Some(rec) = &mut self.recorder else {
            return Ok(());
        };
        if rec.step_begins(step) {
            self.write_manifest();
        }
        let Some(rec) = &mut self.recorder else {
            return Ok(());
        };
        let Some(key) = rec.poll_signal(&self.cfg.store, step) else {
            return Ok(());
        };
        let why = format!("the signal object {key} appeared in the trial");
        self.fire(Trigger::Signal(key.clone()), why, step, mode)?;
        if let Some(rec) = &self.recorder {
            rec.served(&self.cfg.store, &key);
        }
        Ok(())
    }

    /// Keeps a lent tensor nothing else writes now in the recorder (see
    /// [`Recorder::keep_lent`]), firing it when the tensor holds NaN or infinities.
    fn record_lent(&mut self, t: TensorJob, lent: Box<dyn LentTensor>) -> Result<(), WriterError> {
        let Some(rec) = &mut self.recorder else {
            return Ok(());
        };
        let (step, at) = (t.step, (t.mode, t.mode_step));
        if let Some(why) = rec.keep_lent(t, lent)? {
            self.fire(Trigger::NonFinite, why, step, Some(at))?;
        }
        Ok(())
    }

    /// Keeps a recorded tensor (or writes it at once in a step a trigger fired in), and
    /// fires the non-finite trigger when it holds NaN or infinities. `health`: the tensor's
    /// summary when the caller computed one.
    fn record(&mut self, t: TensorJob, health: Option<Health>) -> Result<(), WriterError> {
        let Some(rec) = &mut self.recorder else {
            return Ok(());
        };
        if rec.live(t.step) {
            // A step a trigger fired in is written, not watched: no scan for NaN.
            if !t.raw && !t.value.is_empty() {
                self.write_record(t.name, &t.value, t.step, t.mode, t.mode_step, t.wall_time)?;
            }
            return Ok(());
        }
        let (step, at) = (t.step, (t.mode, t.mode_step));
        if let Some(why) = rec.keep_value(t, health) {
            self.fire(Trigger::NonFinite, why, step, Some(at))?;
        }
        Ok(())
    }

    /// Writes everything the recorder holds: steps before `step` as steps of their own
    /// (but a step the save config already wrote, which is left as it is), the tensors of
    /// `step` into its step file, and from then on the rest of `step`'s recorded tensors as
    /// they arrive. The manifest follows once `step` is published. `at`: the mode and mode
    /// step of `step`, when the caller knows them (else those of its kept tensors, if any).
    fn fire(
        &mut self,
        trigger: Trigger,
        why: String,
        step: i64,
        at: Option<(Mode, i64)>,
    ) -> Result<(), WriterError> {
        let Some(rec) = &mut self.recorder else {
            return Ok(());
        };
        let mut firing = rec.begin_firing(step);
        let mut written = Vec::new();
        for s in std::mem::take(&mut firing.earlier) {
            self.write_kept_step(s, &mut written)?;
        }
        let mut at = at;
        if let Some(s) = firing.this_step.take() {
            at = Some((s.mode, s.mode_step));
            for k in s.tensors {
                if !k.raw_written && !k.value.is_empty() {
                    self.write_record(k.name, &k.value, s.step, s.mode, s.mode_step, s.wall_time)?;
                }
            }
            written.push(s.step);
        }
        if !written.contains(&step) {
            written.push(step);
        }
        if let Some(rec) = &mut self.recorder {
            rec.end_firing(trigger, why, step, at, firing, written);
        }
        Ok(())
    }

    /// Publishes one kept step as its own events and index file.
    fn write_kept_step(&mut self, s: KeptStep, written: &mut Vec<i64>) -> Result<(), WriterError> {
        let event_key = event_file_key(s.step, &self.cfg.worker)?;
        let mut file = StepFile::new(s.step, Vec::new());
        for k in s.tensors.into_iter().filter(|k| !k.value.is_empty()) {
            let key = (!file.names_event_file()).then(|| event_key.clone());
            file.append(k.name, (s.mode, s.mode_step), key, |events, name| {
                append_tensor_event(
                    events,
                    name,
                    &k.value,
                    s.step,
                    s.mode.as_int(),
                    s.mode_step,
                    s.wall_time,
                    Footer::Magic,
                )
            })?;
            self.shared.records.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(objects) = file.into_objects(&self.cfg.worker)? {
            self.put_step(objects.events, objects.index);
            written.push(s.step);
        }
        Ok(())
    }

    /// Puts the flight recorder's manifest: every firing so far.
    fn write_manifest(&mut self) {
        let Some(rec) = &mut self.recorder else {
            return;
        };
        let (key, data) = rec.manifest(&self.cfg.worker);
        let store = self.cfg.store.clone();
        self.put(store, key, data, 0);
    }

    fn tb_append(&mut self, mode: Mode, step: i64, payload: &[u8]) -> Result<(), WriterError> {
        let Some(tb) = &self.cfg.tensorboard else {
            return Ok(());
        };
        let file = match self.tb_files.entry(mode.as_int()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let key = tensorboard_file_key(mode, step, &tb.worker)?;
                e.insert(TbFile {
                    key: format!("{}{key}", tb.prefix),
                    bytes: Vec::new(),
                })
            }
        };
        append_record(&mut file.bytes, payload, Footer::Crc);
        Ok(())
    }

    /// Publishes the step's events file, then its index file (smdebug's `FileWriter.close`
    /// order). A step with only shapes has an index file and no events file.
    fn publish_step(&mut self) -> Result<(), WriterError> {
        let Some(file) = self.current.take() else {
            return Ok(());
        };
        let step = file.step;
        let Some(objects) = file.into_objects(&self.cfg.worker)? else {
            return Ok(());
        };
        if let Some((_, events)) = &objects.events {
            self.last_events_len = events.len();
        }
        self.put_step(objects.events, objects.index);
        if self.recorder.as_mut().is_some_and(|r| r.published(step)) {
            self.write_manifest();
        }
        Ok(())
    }

    /// Queues the puts of a step's events file (if any), then its index file.
    fn put_step(&mut self, events: Option<(String, Vec<u8>)>, (key, index): (String, String)) {
        let store = self.cfg.store.clone();
        if let Some((key, events)) = events {
            let len = events.len() as u64;
            self.put(store.clone(), key, Bytes::from(events), len);
        }
        self.put(store, key, Bytes::from(index), 0);
    }

    /// Queues a put for the I/O thread (sent with the others of this job, in order).
    fn put(&mut self, store: Arc<BlockingStore>, key: String, data: Bytes, event_bytes: u64) {
        self.outgoing.push(Put {
            store,
            key,
            data,
            event_bytes,
        });
    }

    /// Hands the queued puts to the I/O thread as one message.
    fn send_puts(&mut self) -> Result<(), WriterError> {
        if self.outgoing.is_empty() {
            return Ok(());
        }
        // Without an I/O thread (it could not start, a failure already recorded) nothing
        // can be stored either: the send fails.
        self.io.send(std::mem::take(&mut self.outgoing))
    }

    fn end_step(&mut self) -> Result<(), WriterError> {
        self.publish_step()?;
        let files = std::mem::take(&mut self.tb_files);
        if let Some(store) = self.cfg.tensorboard.as_ref().map(|tb| tb.store.clone()) {
            for (_, f) in files {
                self.put(store.clone(), f.key, Bytes::from(f.bytes), 0);
            }
        }
        Ok(())
    }
}

/// Writes the end-of-training marker (from the training thread, after the writer thread
/// has ended).
pub(crate) fn write_end_marker(store: &BlockingStore) -> Result<(), StorageError> {
    store.put(END_OF_JOB_FILE, Bytes::new())
}
