//! The writer thread: everything that costs more than a copy happens here — reductions,
//! protobuf encoding, framing with CRCs, histograms and storage calls.
//!
//! Jobs arrive in order over one bounded channel, so the files of a step are published in
//! the order smdebug publishes them: the events file first, then the index file that points
//! into it. A reader that sees an index file therefore always finds a complete events file.

use crate::error::WriterError;
use crate::lent::LentTensor;
use crate::recorder::{FlightRecorder, KeptStep, Ring, Trigger};
use crate::tensorboard;
use crate::ReductionShape;
use smdebug_config::PyValue;
use smdebug_config::{HealthSummary, Mode};
use smdebug_index::{
    event_file_key, health_tensor_name, index_file_key, tensorboard_file_key, HealthPart,
    IndexFile, IndexMeta, ShapeEntry, TensorEntry, END_OF_JOB_FILE,
};
use smdebug_record::{
    append_record, append_tensor_event, append_tensor_event_le, histogram_event, scalar_event,
    DType, Footer, Message, RecordInfo, TensorValue,
};
use smdebug_reduce::{Flavor, Health, ReductionRequest, Scalar, TensorView};
use smdebug_storage::{BlockingStore, Bytes, StorageError};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

/// Most tensor names whose reduction tensor names the writer remembers.
const MAX_CACHED_NAMES: usize = 4096;

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
    fn make(self, name: &str, step: i64) -> Result<TensorValue, WriterError> {
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

/// Counters shared with the hook.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The writer thread's first failure; once set, nothing more is written.
    failure: Mutex<Option<Arc<WriterError>>>,
    /// Whether `failure` is set. The writer and I/O threads ask before every job and the
    /// training thread at every step: an atomic load instead of taking a lock the other
    /// threads take too (contended, that lock cost a futex sleep and wake-up per step).
    failed: AtomicBool,
    /// Tensors dropped because the queue was full (drop policy).
    pub dropped: AtomicU64,
    /// Records written to events files.
    pub records: AtomicU64,
    /// Bytes of events files published.
    pub event_bytes: AtomicU64,
}

impl Shared {
    /// The first failure, if any.
    pub fn failure(&self) -> Option<Arc<WriterError>> {
        if !self.failed() {
            return None;
        }
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a failure was recorded.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    fn fail(&self, error: WriterError) {
        let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            tracing::error!("smdebug hook writer: {error}");
            *slot = Some(Arc::new(error));
            // Release: whoever sees the flag then finds the message under the lock.
            self.failed.store(true, Ordering::Release);
        }
    }
}

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
    pub priority: crate::WriterPriority,
}

/// The flight recorder's settings and the keys it polls and writes.
#[derive(Debug, Clone)]
pub(crate) struct RecorderWiring {
    /// Its settings.
    pub cfg: FlightRecorder,
    /// The stop-signal object the hook watches.
    pub stop_key: String,
    /// The recorder's own trigger object.
    pub trigger_key: String,
    /// Where the manifest goes.
    pub manifest_key: String,
}

/// The events and index file of one (step, worker) being assembled.
struct StepFile {
    /// The global step.
    step: i64,
    /// The framed records of the events file.
    events: Vec<u8>,
    /// The index file (`None` until the step has a record or a shape).
    index: Option<IndexFile>,
    /// The index's meta names the events file (set by the first record).
    has_event_file_name: bool,
}

/// A TensorBoard events file of one mode, assembled until the step ends.
struct TbFile {
    /// Its key in the TensorBoard store.
    key: String,
    /// Its framed records.
    bytes: Vec<u8>,
}

/// One object for the I/O thread to store.
struct Put {
    /// The store to put it in.
    store: Arc<BlockingStore>,
    /// Its key there.
    key: String,
    /// Its bytes.
    data: Bytes,
    /// Its size when it is an events file (counted in [`Shared::event_bytes`]), else 0.
    event_bytes: u64,
}

/// Work for the I/O threads, numbered in the order the writer sent it: its puts become
/// visible in that order.
enum IoJob {
    /// The puts a job of the writer produced (a step's events file, then its index file and
    /// TensorBoard files), in order: one message, so one wake-up of an I/O thread per step.
    Puts(Vec<Put>),
    /// Reply once every put before this one is done.
    Flush(SyncSender<()>),
}

/// Whose turn it is to publish: the I/O threads publish jobs strictly in their numbers'
/// order, whatever order they finish writing them in.
#[derive(Default)]
struct Turns {
    /// The number of the next job to publish.
    next: Mutex<u64>,
    changed: Condvar,
}

impl Turns {
    /// Waits until job `seq` may publish; the returned guard passes the turn on when it is
    /// dropped (also when the thread unwinds, so the other I/O threads never wait forever).
    fn wait(&self, seq: u64) -> Turn<'_> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        while *next != seq {
            next = self.changed.wait(next).unwrap_or_else(|p| p.into_inner());
        }
        Turn { turns: self }
    }
}

/// Job `seq`'s place in the publishing order. Dropped before its turn was waited for (the
/// thread unwinding while it wrote the job's files), it still waits for the turn and passes
/// it on, so the other I/O threads do not wait forever for a job that will never publish.
struct Ticket<'a> {
    turns: &'a Turns,
    seq: u64,
    used: bool,
}

impl<'a> Ticket<'a> {
    /// Waits for the job's turn (see [`Turns::wait`]).
    fn wait(mut self) -> Turn<'a> {
        self.used = true;
        self.turns.wait(self.seq)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            drop(self.turns.wait(self.seq));
        }
    }
}

/// The turn of one job to publish (see [`Turns::wait`]).
struct Turn<'a> {
    turns: &'a Turns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.turns.next.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.turns.changed.notify_all();
    }
}

/// The bytes from which a job of puts is worth a second I/O thread (see [`Writer::send_io`]).
const SPLIT_JOB_BYTES: usize = 1 << 20;

/// The I/O threads to start for `store`: two when its puts can be written before they are
/// published (local disk, [`BlockingStore::stage`]) and there are two cores, else one.
///
/// On local disk a put's cost is the kernel copying the bytes into the page cache and
/// allocating its pages, which one `write` does on one core, and a writer publishing
/// megabytes per step was bound by that one thread (the whole-trial row of
/// docs/benchmarks.md). Two threads write two steps' files at once and publish them in
/// order. Object stores publish with one request, which cannot be split that way.
fn io_threads(store: &BlockingStore) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if store.storage().as_sync().is_some() && cores >= 2 {
        2
    } else {
        1
    }
}

/// The writer thread's state.
struct Writer {
    /// Its settings.
    cfg: WriterConfig,
    /// The first failure and the counters, shared with the hook and the I/O thread.
    shared: Arc<Shared>,
    /// The step being assembled.
    current: Option<StepFile>,
    /// The step's TensorBoard files, by mode number.
    tb_files: BTreeMap<u8, TbFile>,
    /// The channels to the I/O threads (empty if none could start, and at the end); which
    /// job goes to which, [`Writer::send_io`].
    io: Vec<SyncSender<(u64, IoJob)>>,
    /// The number of the next job sent to the I/O threads (their publishing order).
    io_seq: u64,
    /// Jobs of at least [`SPLIT_JOB_BYTES`] sent so far (they take the I/O threads in turn).
    large_jobs: u64,
    /// Puts of the current job, handed to the I/O thread together when the job is done.
    outgoing: Vec<Put>,
    /// Reduction tensor names by tensor name and request (see [`Writer::reduction_name`]).
    reduction_names: HashMap<String, HashMap<ReductionRequest, String>>,
    /// Size of the last published events file (capacity hint for the next one).
    last_events_len: usize,
    /// Events buffers the I/O thread is done with (see [`run_io`]).
    spare: Receiver<Vec<u8>>,
    /// The flight recorder's ring, when on.
    ring: Option<Ring>,
    /// The last steps published (a recorder never rewrites a step the save config wrote).
    published: VecDeque<i64>,
    /// A recorder firing's manifest waits for its last step to be published.
    manifest_due: bool,
}

/// One I/O thread: storage calls (fsync on disk, a round trip on object stores) overlap
/// the encoding of the next step. Each job's puts are first written
/// ([`BlockingStore::stage`]; on local disk a temporary file, while another I/O thread writes
/// the next job's), then published in the job's turn ([`Turns`]), in order, so an events
/// file is still visible before its index file and steps appear in order. After a failure
/// nothing more is published; staged files are removed.
///
/// An events buffer that nobody else holds after its put goes back to the writer through
/// `spare` to hold a later step: a step's buffer is megabytes, and freeing and allocating one
/// per step makes the allocator hand pages back to the kernel and fault them in again (with
/// TLB shootdowns that interrupt the training thread too).
fn run_io(
    shared: Arc<Shared>,
    jobs: Receiver<(u64, IoJob)>,
    turns: Arc<Turns>,
    spare: SyncSender<Vec<u8>>,
    priority: crate::WriterPriority,
) {
    priority.apply_to_current_thread();
    for (seq, job) in jobs {
        let ticket = Ticket {
            turns: &turns,
            seq,
            used: false,
        };
        match job {
            IoJob::Flush(reply) => {
                let _turn = ticket.wait();
                let _ = reply.send(());
            }
            IoJob::Puts(puts) => {
                // Nothing is written after a put that failed (not even its folder).
                let mut failed = shared.failed();
                let staged: Vec<_> = puts
                    .into_iter()
                    .map(|put| {
                        let keep = (put.event_bytes > 0).then(|| put.data.clone());
                        let staged = (!failed).then(|| put.store.stage(&put.key, put.data));
                        failed |= matches!(staged, Some(Err(_)));
                        (put.store, put.key, put.event_bytes, keep, staged)
                    })
                    .collect();
                let _turn = ticket.wait();
                for (store, key, event_bytes, keep, staged) in staged {
                    if shared.failed() {
                        // The rest is dropped unpublished (its temporary files removed).
                        break;
                    }
                    match staged.map(|s| s.and_then(|s| store.publish(s))) {
                        Some(Ok(())) => {
                            shared.event_bytes.fetch_add(event_bytes, Ordering::Relaxed);
                        }
                        Some(Err(source)) => shared.fail(WriterError::Store { key, source }),
                        None => break,
                    }
                    if let Some(Ok(buffer)) = keep.map(Bytes::try_into_mut) {
                        // Full (the writer has spares enough) or gone: the buffer is freed.
                        let _ = spare.try_send(Vec::from(buffer));
                    }
                }
            }
        }
    }
}

/// Runs the writer loop until the channel closes (the hook was closed or dropped).
pub(crate) fn run(cfg: WriterConfig, shared: Arc<Shared>, jobs: Receiver<Job>) {
    cfg.priority.apply_to_current_thread();
    let priority = cfg.priority;
    let threads = io_threads(&cfg.store);
    // Each I/O thread has its own channel, so a job wakes only the thread that runs it
    // (which one: `Writer::send_io`). Steps in flight (queued or with an I/O thread): three
    // with one thread, four with two; bounded memory, and enough to overlap I/O and
    // encoding.
    let capacity = if threads == 1 { 2 } else { 1 };
    let (spare_tx, spare_rx) = sync_channel(2);
    let turns = Arc::new(Turns::default());
    let mut io_threads = Vec::new();
    let mut io = Vec::new();
    for _ in 0..threads {
        let (tx, jobs) = sync_channel(capacity);
        let (io_shared, turns, spare) = (shared.clone(), turns.clone(), spare_tx.clone());
        match std::thread::Builder::new()
            .name("smdebug-hook-io".into())
            .spawn(move || run_io(io_shared, jobs, turns, spare, priority))
        {
            Ok(t) => {
                io_threads.push(t);
                io.push(tx);
            }
            Err(e) => {
                // One thread is enough to write everything (one put at a time).
                if io_threads.is_empty() {
                    shared.fail(WriterError::IoThread(e));
                }
                break;
            }
        }
    }
    drop(spare_tx);
    let mut w = Writer {
        cfg,
        shared,
        current: None,
        tb_files: BTreeMap::new(),
        io,
        io_seq: 0,
        large_jobs: 0,
        outgoing: Vec::new(),
        reduction_names: HashMap::new(),
        last_events_len: 0,
        spare: spare_rx,
        ring: None,
        published: VecDeque::new(),
        manifest_due: false,
    };
    w.ring = w.cfg.recorder.as_ref().map(|r| Ring::new(r.cfg.clone()));
    for job in jobs {
        w.dispatch(job);
    }
    // The channel closed without EndStep (the hook was dropped mid-step): publish what the
    // step holds, as smdebug's atexit handler would.
    if !w.shared.failed() {
        if let Err(e) = w.end_step().and_then(|()| w.send_puts()) {
            w.shared.fail(e);
        }
        if w.manifest_due {
            w.write_manifest();
            if let Err(e) = w.send_puts() {
                w.shared.fail(e);
            }
        }
    }
    w.io.clear();
    for t in io_threads {
        if t.join().is_err() {
            w.shared.fail(WriterError::IoThreadStopped);
        }
    }
}

/// The requested reductions (`None` where one cannot be computed) and, when asked for, the
/// health summary, from one pass.
fn reduce_tensor(
    t: &TensorValue,
    requests: &[ReductionRequest],
    health: HealthSummary,
    flavor: Flavor,
) -> (Vec<Option<Scalar>>, Option<Health>) {
    let Some(view) = t.reduce_view() else {
        return (vec![None; requests.len()], None);
    };
    let (out, health) = if health == HealthSummary::Off {
        (view.reduce(requests, flavor), None)
    } else {
        let histogram = health == HealthSummary::Histogram;
        let (out, h) = view.reduce_with_health(requests, flavor, histogram);
        (out, Some(h))
    };
    (out.into_iter().map(|r| r.ok()).collect(), health)
}

/// The health summary of a tensor the flight recorder watches, when it holds NaN or
/// infinities: a cheap all-finite scan first, since at nearly every step nothing is wrong
/// and the counts and range only go into the trigger's message.
fn non_finite(v: &TensorView<'_>) -> Option<Health> {
    (!v.all_finite()).then(|| v.health(false))
}

/// The records of a health summary (layout in `smdebug_index::HealthPart`).
pub(crate) fn health_tensors(h: &Health) -> Vec<(HealthPart, TensorValue)> {
    let counts = [h.elements, h.nan, h.pos_inf, h.neg_inf, h.zeros].map(saturating_i64);
    let mut out = vec![
        (
            HealthPart::Counts,
            TensorValue::from(ndarray::arr1(&counts).into_dyn()),
        ),
        (
            HealthPart::Range,
            TensorValue::from(ndarray::arr1(&[h.finite_min, h.finite_max, h.amax]).into_dyn()),
        ),
    ];
    if let Some(hist) = &h.histogram {
        let v: Vec<i64> = hist.iter().copied().map(saturating_i64).collect();
        out.push((
            HealthPart::Histogram,
            TensorValue::from(ndarray::Array1::from(v).into_dyn()),
        ));
    }
    out
}

/// A count as int64 (counts of elements held in memory never reach `i64::MAX`).
fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A reduction result as the tensor smdebug stores: 0-d (PyTorch/TF hooks) or shape `[1]`
/// (the numpy path through `make_numpy_array`), in the result's dtype.
pub(crate) fn scalar_tensor(s: Scalar, shape: ReductionShape) -> TensorValue {
    fn arr<T: Clone>(v: T, shape: ReductionShape) -> ndarray::ArrayD<T> {
        match shape {
            ReductionShape::Scalar => ndarray::arr0(v).into_dyn(),
            ReductionShape::OneElement => ndarray::arr1(&[v]).into_dyn(),
        }
    }
    match s {
        Scalar::Bool(v) => TensorValue::from(arr(v, shape)),
        Scalar::I8(v) => TensorValue::from(arr(v, shape)),
        Scalar::I16(v) => TensorValue::from(arr(v, shape)),
        Scalar::I32(v) => TensorValue::from(arr(v, shape)),
        Scalar::I64(v) => TensorValue::from(arr(v, shape)),
        Scalar::U8(v) => TensorValue::from(arr(v, shape)),
        Scalar::U16(v) => TensorValue::from(arr(v, shape)),
        Scalar::U32(v) => TensorValue::from(arr(v, shape)),
        Scalar::U64(v) => TensorValue::from(arr(v, shape)),
        Scalar::F16(v) => TensorValue::from(arr(v, shape)),
        Scalar::F32(v) => TensorValue::from(arr(v, shape)),
        Scalar::F64(v) => TensorValue::from(arr(v, shape)),
    }
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
                self.wait_io();
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
        let spare = &self.spare;
        Ok(self.current.get_or_insert_with(|| StepFile {
            step,
            events: match spare.try_recv() {
                Ok(mut buffer) => {
                    buffer.clear();
                    buffer
                }
                Err(_) => Vec::with_capacity(hint),
            },
            index: None,
            has_event_file_name: false,
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
            .is_some_and(|c| c.step == step && c.has_event_file_name);
        let event_key = if named {
            None
        } else {
            Some(event_file_key(step, &self.cfg.worker)?)
        };
        let file = self.step_file(step)?;
        let info = encode(&mut file.events, &name).map_err(|source| WriterError::Encode {
            name: name.clone(),
            step,
            source,
        })?;
        // smdebug's IndexWriter takes the meta from the first tensor record (replacing a
        // meta that only a shape set, which lacks the event file name).
        if !file.has_event_file_name {
            let meta = IndexMeta {
                mode,
                mode_step,
                event_file_name: event_key,
            };
            match &mut file.index {
                Some(index) => index.meta = meta,
                None => file.index = Some(IndexFile::new(meta)),
            }
            file.has_event_file_name = true;
        }
        if let Some(index) = file.index.as_mut() {
            index.tensors.push(TensorEntry {
                name,
                start_idx: info.offset,
                length: info.len,
                payload_crc32c: Some(info.payload_crc32c),
            });
        }
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
        let file = self.step_file(step)?;
        let index = file.index.get_or_insert_with(|| {
            IndexFile::new(IndexMeta {
                mode,
                mode_step,
                event_file_name: None,
            })
        });
        index.shapes.push(ShapeEntry {
            name: name.to_owned(),
            original_name: name.to_owned(),
            shape: shape.iter().map(|&d| d as u64).collect(),
        });
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
            let live = self
                .ring
                .as_ref()
                .is_some_and(|r| r.live_step == Some(t.step));
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
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        if ring.live_step.is_some_and(|l| l < step) {
            ring.live_step = None;
            if self.manifest_due {
                self.write_manifest();
            }
        }
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        if !ring.cfg.on_signal
            || ring.last_poll_step == step
            || ring
                .last_poll
                .is_some_and(|t| t.elapsed() < ring.cfg.signal_interval)
        {
            return Ok(());
        }
        ring.last_poll = Some(std::time::Instant::now());
        ring.last_poll_step = step;
        let Some(wiring) = self.cfg.recorder.clone() else {
            return Ok(());
        };
        let store = self.cfg.store.clone();
        let seen_stop = ring.seen_stop;
        let trigger = match store.exists(&wiring.trigger_key) {
            Ok(true) => Some(wiring.trigger_key.clone()),
            Ok(false) if !seen_stop => match store.exists(&wiring.stop_key) {
                Ok(true) => Some(wiring.stop_key.clone()),
                Ok(false) => None,
                Err(e) => {
                    tracing::warn!("polling {}: {e}", wiring.stop_key);
                    None
                }
            },
            Ok(false) => None,
            Err(e) => {
                tracing::warn!("polling {}: {e}", wiring.trigger_key);
                None
            }
        };
        let Some(key) = trigger else {
            return Ok(());
        };
        if key == wiring.stop_key {
            if let Some(r) = &mut self.ring {
                r.seen_stop = true;
            }
        }
        let why = format!("the signal object {key} appeared in the trial");
        self.fire(Trigger::Signal(key.clone()), why, step, mode)?;
        if key == wiring.trigger_key {
            // Gone once served, so that the next firing of the rule fires the recorder again.
            if let Err(e) = store.delete(&key) {
                tracing::warn!("deleting {key}: {e}");
            }
        }
        Ok(())
    }

    /// Keeps a copy of a lent tensor nothing else writes now in the recorder, made from its
    /// view into a buffer of the step the ring let go last, and checked for NaN and
    /// infinities piece by piece as it is copied (through [`LentTensor::to_value`] when the
    /// tensor cannot lend a view).
    fn record_lent(&mut self, t: TensorJob, lent: Box<dyn LentTensor>) -> Result<(), WriterError> {
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        let check = ring.cfg.on_non_finite && !ring.fired_non_finite;
        let at = (t.step, t.mode, t.mode_step, t.wall_time);
        let mut bad = None;
        let mut copy = None;
        let viewed = lent.with_view(&mut |v| {
            let (len, dtype) = (v.shape().iter().product::<usize>(), v.dtype());
            if !ring.make_room(at, len * dtype.item_size()) {
                // Left out (the budget cannot hold it): checked in place, not copied.
                bad = check.then(|| non_finite(&v)).flatten();
                return;
            }
            let spare = ring.take_spare(len, dtype);
            let mut finite = true;
            // Checked piece by piece as it is copied: one pass over the tensor's memory.
            let mut inspect = |piece: TensorView<'_>| finite = finite && piece.all_finite();
            let inspect: &mut dyn FnMut(TensorView<'_>) =
                if check { &mut inspect } else { &mut |_| {} };
            copy = Some(TensorValue::from_reduce_view(&v, spare, inspect));
            if !finite {
                bad = non_finite(&v);
            }
        });
        if !viewed {
            // No view: the copy it takes is kept instead.
            let mut t = t;
            t.value = Deferred::Lent(lent).make(&t.name, t.step)?;
            return self.record(t, None);
        }
        // The handle goes back at once: a framework's allocator reuses its buffer while it
        // is still in the cache (held for N steps, every step's buffers would be new to it).
        drop(lent);
        self.keep(t, copy, bad)
    }

    /// Keeps a recorded tensor (or writes it at once in a step a trigger fired in), and
    /// fires the non-finite trigger when it holds NaN or infinities. `health`: the tensor's
    /// summary when the caller computed one.
    fn record(&mut self, t: TensorJob, health: Option<Health>) -> Result<(), WriterError> {
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        if ring.live_step == Some(t.step) {
            // A step a trigger fired in is written, not watched: no scan for NaN.
            if !t.raw && !t.value.is_empty() {
                self.write_record(t.name, &t.value, t.step, t.mode, t.mode_step, t.wall_time)?;
            }
            return Ok(());
        }
        let bad = match health {
            _ if !ring.cfg.on_non_finite || ring.fired_non_finite => None,
            Some(h) => Some(h).filter(|h| !h.all_finite()),
            None => t.value.reduce_view().and_then(|v| non_finite(&v)),
        };
        let mut t = t;
        // An empty placeholder (no heap allocation) stands in for the moved value.
        let empty = TensorValue::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0])));
        let value = std::mem::replace(&mut t.value, empty);
        self.keep(t, Some(value), bad)
    }

    /// Puts a recorded tensor's value into the ring (not in a live step; `None`: it was left
    /// out, too large for the budget) and fires the non-finite trigger when `bad` (the
    /// summary of a tensor found to hold NaN or infinities) is given.
    fn keep(
        &mut self,
        t: TensorJob,
        value: Option<TensorValue>,
        bad: Option<Health>,
    ) -> Result<(), WriterError> {
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        let why = bad.as_ref().map(|h| {
            format!(
                "tensor {} holds {} NaN, {} +Inf, {} -Inf of {} elements at step {} ({} step {})",
                t.name,
                h.nan,
                h.pos_inf,
                h.neg_inf,
                h.elements,
                t.step,
                t.mode.name(),
                t.mode_step
            )
        });
        match value {
            Some(value) => ring.keep(
                (t.step, t.mode, t.mode_step, t.wall_time),
                t.name,
                value,
                t.raw,
            ),
            None => ring.left_out += 1,
        }
        if let Some(why) = why {
            if let Some(r) = &mut self.ring {
                r.fired_non_finite = true;
            }
            self.fire(Trigger::NonFinite, why, t.step, Some((t.mode, t.mode_step)))?;
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
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        // Steps S−N..S: at a step's first job (the signal's poll) the ring still holds N + 1
        // steps before S.
        let oldest = step - ring.cfg.steps as i64;
        let kept: Vec<KeptStep> = ring
            .take()
            .into_iter()
            .filter(|s| s.step >= oldest)
            .collect();
        let left_out = std::mem::take(&mut ring.left_out);
        ring.live_step = Some(step);
        let mut written = Vec::new();
        let mut already = Vec::new();
        let (mut mode, mut mode_step) = (at.map(|a| a.0), at.map(|a| a.1));
        for s in kept {
            if s.step == step {
                (mode, mode_step) = (Some(s.mode), Some(s.mode_step));
                for k in s.tensors {
                    if !k.raw_written && !k.value.is_empty() {
                        self.write_record(
                            k.name,
                            &k.value,
                            s.step,
                            s.mode,
                            s.mode_step,
                            s.wall_time,
                        )?;
                    }
                }
                written.push(s.step);
            } else if self.published.contains(&s.step) || s.step > step {
                already.push(s.step);
            } else {
                self.write_kept_step(s, &mut written)?;
            }
        }
        if !written.contains(&step) {
            written.push(step);
        }
        let entry = PyValue::Object(vec![
            ("trigger".into(), PyValue::Str(trigger.name().into())),
            (
                "signal".into(),
                match &trigger {
                    Trigger::Signal(k) => PyValue::Str(k.clone()),
                    _ => PyValue::Null,
                },
            ),
            ("reason".into(), PyValue::Str(why)),
            ("step".into(), PyValue::Int(step)),
            (
                "mode".into(),
                mode.map_or(PyValue::Null, |m| PyValue::Str(m.name().into())),
            ),
            (
                "mode_step".into(),
                mode_step.map_or(PyValue::Null, PyValue::Int),
            ),
            (
                "steps".into(),
                PyValue::Array(written.into_iter().map(PyValue::Int).collect()),
            ),
            (
                "steps_already_saved".into(),
                PyValue::Array(already.into_iter().map(PyValue::Int).collect()),
            ),
            ("tensors_left_out".into(), PyValue::Int(left_out as i64)),
            ("wall_time".into(), PyValue::Float(crate::hook::now())),
        ]);
        if let Some(r) = &mut self.ring {
            r.manifest.push(entry);
        }
        self.manifest_due = true;
        tracing::info!("flight recorder fired ({}) at step {step}", trigger.name());
        Ok(())
    }

    /// Publishes one kept step as its own events and index file.
    fn write_kept_step(&mut self, s: KeptStep, written: &mut Vec<i64>) -> Result<(), WriterError> {
        let event_key = event_file_key(s.step, &self.cfg.worker)?;
        let mut events = Vec::new();
        let mut index = IndexFile::new(IndexMeta {
            mode: s.mode,
            mode_step: s.mode_step,
            event_file_name: Some(event_key.clone()),
        });
        for k in s.tensors.into_iter().filter(|k| !k.value.is_empty()) {
            let info = append_tensor_event(
                &mut events,
                &k.name,
                &k.value,
                s.step,
                s.mode.as_int(),
                s.mode_step,
                s.wall_time,
                Footer::Magic,
            )
            .map_err(|source| WriterError::Encode {
                name: k.name.clone(),
                step: s.step,
                source,
            })?;
            index.tensors.push(TensorEntry {
                name: k.name,
                start_idx: info.offset,
                length: info.len,
                payload_crc32c: Some(info.payload_crc32c),
            });
            self.shared.records.fetch_add(1, Ordering::Relaxed);
        }
        if index.tensors.is_empty() {
            return Ok(());
        }
        let store = self.cfg.store.clone();
        let len = events.len() as u64;
        self.put(store.clone(), event_key, Bytes::from(events), len);
        let key = index_file_key(s.step, &self.cfg.worker)?;
        self.put(store, key, Bytes::from(index.to_json()), 0);
        written.push(s.step);
        Ok(())
    }

    /// Puts the manifest: every firing so far.
    fn write_manifest(&mut self) {
        self.manifest_due = false;
        let (Some(ring), Some(wiring)) = (&self.ring, &self.cfg.recorder) else {
            return;
        };
        let doc = PyValue::Object(vec![
            ("worker".into(), PyValue::Str(self.cfg.worker.clone())),
            ("recordings".into(), PyValue::Array(ring.manifest.clone())),
        ]);
        let key = wiring.manifest_key.clone();
        let store = self.cfg.store.clone();
        let text = smdebug_config::pyjson::to_string(&doc);
        self.put(store, key, Bytes::from(text), 0);
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
        let Some(index) = file.index else {
            return Ok(());
        };
        let store = self.cfg.store.clone();
        if !file.events.is_empty() {
            let key = event_file_key(file.step, &self.cfg.worker)?;
            let len = file.events.len() as u64;
            self.last_events_len = file.events.len();
            self.put(store.clone(), key, Bytes::from(file.events), len);
        }
        let key = index_file_key(file.step, &self.cfg.worker)?;
        self.put(store, key, Bytes::from(index.to_json()), 0);
        if self.ring.is_some() {
            self.published.push_back(file.step);
            if self.published.len() > 64 {
                self.published.pop_front();
            }
            if self.manifest_due && self.ring.as_ref().and_then(|r| r.live_step) <= Some(file.step)
            {
                self.write_manifest();
            }
        }
        Ok(())
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
        // can be stored either.
        let puts = IoJob::Puts(std::mem::take(&mut self.outgoing));
        self.send_io(puts)
    }

    /// Sends `job` to the I/O threads with its number.
    fn send_io(&mut self, job: IoJob) -> Result<(), WriterError> {
        if self.io.is_empty() {
            return Err(WriterError::IoThreadStopped);
        }
        // Only a job of many bytes goes to the next I/O thread in turn; the others go to the
        // first. A second thread pays off where the kernel's copy of megabytes into the page
        // cache is the work; for a step of a few small files it would only add a wake-up and
        // a wait for its turn, on the cores the training step runs on.
        let thread = match &job {
            IoJob::Puts(puts)
                if puts.iter().map(|p| p.data.len()).sum::<usize>() >= SPLIT_JOB_BYTES =>
            {
                self.large_jobs += 1;
                (self.large_jobs % self.io.len() as u64) as usize
            }
            _ => 0,
        };
        let io = &self.io[thread];
        io.send((self.io_seq, job))
            .map_err(|_| WriterError::IoThreadStopped)?;
        self.io_seq += 1;
        Ok(())
    }

    /// Waits until every put handed to the I/O threads is done.
    fn wait_io(&mut self) {
        let (tx, rx) = sync_channel(1);
        if self.send_io(IoJob::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_pass_in_order_and_past_a_job_whose_thread_panicked() {
        let turns = Arc::new(Turns::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        // Started in reverse: each job publishes only in its turn.
        let mut threads = Vec::new();
        for seq in (0..4u64).rev() {
            let (turns, order) = (turns.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let ticket = Ticket {
                    turns: &turns,
                    seq,
                    used: false,
                };
                if seq == 1 {
                    panic!("job 1 fails while writing its files");
                }
                let _turn = ticket.wait();
                order.lock().unwrap().push(seq);
            }));
        }
        let panicked = threads
            .into_iter()
            .map(|t| t.join().is_err())
            .filter(|&p| p)
            .count();
        assert_eq!(panicked, 1);
        assert_eq!(*order.lock().unwrap(), [0, 2, 3]);
        assert_eq!(*turns.next.lock().unwrap(), 4);
    }

    #[test]
    fn scalar_tensors_have_the_requested_shape_and_dtype() {
        let t = scalar_tensor(Scalar::I64(6), ReductionShape::Scalar);
        assert_eq!(t.shape(), &[] as &[usize]);
        assert_eq!(t.dtype(), smdebug_record::DType::Int64);
        let t = scalar_tensor(Scalar::F32(1.5), ReductionShape::OneElement);
        assert_eq!(t.shape(), &[1]);
    }
}
