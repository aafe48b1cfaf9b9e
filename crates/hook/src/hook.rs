//! [`Hook`]: the training-thread side — steps, modes, collections and the per-tensor
//! decision. Everything it decides is handed to the writer thread as a job.

use crate::builder::{HookBuilder, QueuePolicy, ReductionShape, WallTime};
use crate::error::{HookError, Result};
use crate::tensorboard::clean_tag;
use crate::writer::{self, Job, Shared, TbTarget, TensorJob, WriterConfig};
use smdebug_config::keys::{
    GRADIENTS, NON_HISTOGRAM_COLLECTIONS, NON_REDUCTION_COLLECTIONS, OPTIMIZER_VARIABLES,
    SCALAR_COLLECTIONS,
};
use smdebug_config::{
    is_sagemaker_job, Collection, CollectionManager, Framework, IncludeWorkers, Mode,
    ReductionConfig, SaveConfig,
};
use smdebug_index::{
    collections_file_key, stop_signal_key, tensorboard_worker, validate_worker,
    DEFAULT_TENSORBOARD_DIR, END_OF_JOB_FILE, RULE_STOP_SIGNAL_ENV,
};
use smdebug_record::Tensor;
use smdebug_reduce::{Flavor, Reduction, ReductionRequest};
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Most jobs the training thread holds before handing them to the writer thread as one
/// batch (see [`Hook::send`]); a quarter of the default queue capacity, so the queue holds
/// four batches.
const MAX_PENDING_JOBS: usize = 64;

/// Most tensor elements the training thread holds before handing them over: a step that
/// saves large raw tensors goes on streaming them to the writer as they come, so they are
/// not all in memory at once.
const MAX_PENDING_ELEMENTS: usize = 1 << 20;

/// What [`Hook::save`] did with a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// No collection of the tensor is saved at this step (or this worker does not write).
    NotDue,
    /// Handed to the writer thread.
    Queued,
    /// Due, but dropped because the queue was full ([`QueuePolicy::DropNewest`]).
    Dropped,
}

/// What the writer thread did over the hook's life, returned by [`Hook::close`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HookStats {
    /// Tensor records written to events files (raw tensors, reductions, scalars).
    pub records: u64,
    /// Bytes of events files written.
    pub event_bytes: u64,
    /// Tensors dropped because the queue was full.
    pub dropped: u64,
}

/// A collection as prepared at the first step: its configs resolved against the hook's.
#[derive(Debug)]
struct Prepared {
    name: String,
    save_config: SaveConfig,
    reduction: ReductionConfig,
    save_histogram: bool,
    scalar: bool,
    /// Gradients and optimizer variables are never saved in EVAL and PREDICT.
    train_only: bool,
}

#[derive(Debug)]
struct CachedScalar {
    name: String,
    value: Tensor,
    timestamp: Option<f64>,
}

#[derive(Debug)]
struct StopWatch {
    key: String,
    interval: Duration,
    last_check: Option<Instant>,
    last_step: i64,
    stopped: bool,
}

fn mode_index(m: Mode) -> usize {
    match m {
        Mode::Train => 0,
        Mode::Eval => 1,
        Mode::Predict => 2,
        Mode::Global => 3,
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The smdebug writer hook of one worker: call [`Hook::step`] at the start of every step,
/// offer tensors with [`Hook::save`], and [`Hook::close`] at the end.
///
/// The hook decides on the calling thread what is due (collections, save configs, reduction
/// configs) and hands the tensor to a writer thread, which computes reductions, encodes,
/// frames and writes. See the crate documentation for the queue policy.
pub struct Hook {
    store: Arc<BlockingStore>,
    out_dir: String,
    cm: CollectionManager,
    framework_defaults: Vec<String>,
    include: Vec<String>,
    hook_save_config: SaveConfig,
    hook_reduction: ReductionConfig,
    prepared: Option<Vec<Prepared>>,
    tensor_colls: HashMap<String, Vec<usize>>,
    step_colls: Option<Vec<usize>>,
    step: i64,
    init_step: i64,
    mode: Mode,
    mode_steps: [Option<i64>; 4],
    started: bool,
    exported: bool,
    writer_open: bool,
    scalars: Vec<CachedScalar>,
    custom: Vec<(String, Tensor, String)>,
    worker: String,
    num_workers_meta: i64,
    writes: bool,
    write_collections: bool,
    end_marker: bool,
    tensorboard: bool,
    wall_time: WallTime,
    policy: QueuePolicy,
    tx: Option<SyncSender<Job>>,
    /// Jobs of the current step not yet handed to the writer (see [`Hook::send`]).
    pending: Vec<Job>,
    /// Most jobs in `pending` (and so in one batch).
    batch_jobs: usize,
    /// Elements of the tensors in `pending`.
    pending_elements: usize,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    stop: StopWatch,
    closed: bool,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("out_dir", &self.out_dir)
            .field("worker", &self.worker)
            .field("step", &self.step)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Hook {
    /// A builder writing to `out_dir` (see [`HookBuilder`]).
    pub fn builder(out_dir: impl Into<String>) -> HookBuilder {
        HookBuilder::new(out_dir)
    }

    pub(crate) fn start(b: HookBuilder) -> Result<Hook> {
        validate_worker(&b.worker)?;
        let location = Location::parse(&b.out_dir)?;
        let store = Arc::new(BlockingStore::open_with(&location, &b.storage_options)?);
        // smdebug refuses an out_dir whose job already ended (it checks local paths only;
        // this hook checks every backend).
        if store.exists(END_OF_JOB_FILE)? {
            return Err(HookError::FinishedTrial {
                location: b.out_dir.clone(),
            });
        }

        let mut cm = if b.default_collections {
            CollectionManager::with_defaults(b.framework)?
        } else {
            CollectionManager::new()
        };
        if let Some(config) = &b.hook_config {
            config.apply_to(&mut cm)?;
        }
        for c in &b.collections {
            cm.add(c.clone());
        }
        let (framework_defaults, always): (Vec<String>, Vec<String>) = if b.default_collections {
            (
                b.framework
                    .default_collections()
                    .into_iter()
                    .map(|(n, _)| n.to_owned())
                    .collect(),
                b.framework
                    .default_include_collections()
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut include: Vec<String> = Vec::new();
        for n in b.include_collections.iter().flatten().chain(always.iter()) {
            if !include.contains(n) {
                include.push(n.clone());
            }
        }
        if !b.include_regex.is_empty() {
            let d = cm.get_or_create(smdebug_config::keys::DEFAULT);
            for r in &b.include_regex {
                d.include(r)?;
            }
            if !include.iter().any(|n| n == smdebug_config::keys::DEFAULT) {
                include.push(smdebug_config::keys::DEFAULT.into());
            }
        }
        if b.save_all {
            cm.get_or_create(smdebug_config::keys::ALL).include(".*")?;
            if !include.iter().any(|n| n == smdebug_config::keys::ALL) {
                include.push(smdebug_config::keys::ALL.into());
            }
        }

        let writes = b.include_workers == IncludeWorkers::All || b.worker == "worker_0";
        let num_workers_meta = match b.include_workers {
            IncludeWorkers::All => b.num_workers,
            IncludeWorkers::One => 1,
        };
        let pytorch = b.framework == Framework::PyTorch;
        let flavor = b.flavor.unwrap_or(if pytorch {
            Flavor::PyTorch
        } else {
            Flavor::Numpy
        });
        let reduction_shape = b.reduction_shape.unwrap_or(match b.framework {
            Framework::PyTorch | Framework::TensorFlow | Framework::TensorFlow2Eager => {
                ReductionShape::Scalar
            }
            _ => ReductionShape::OneElement,
        });

        let tb_target = match (&b.tensorboard_dir, b.export_tensorboard) {
            (Some(dir), _) => {
                let loc = Location::parse(dir)?;
                Some(TbTarget {
                    store: Arc::new(BlockingStore::open_with(&loc, &b.storage_options)?),
                    prefix: String::new(),
                    worker: tensorboard_worker(std::process::id(), &hostname()),
                })
            }
            (None, true) => Some(TbTarget {
                store: store.clone(),
                prefix: format!("{DEFAULT_TENSORBOARD_DIR}/"),
                worker: tensorboard_worker(std::process::id(), &hostname()),
            }),
            (None, false) => None,
        };
        let tensorboard = tb_target.is_some();

        let stop_key = stop_signal_key(
            b.stop_signal_file.as_deref(),
            std::env::var(RULE_STOP_SIGNAL_ENV).ok().as_deref(),
        )?;

        let shared = Arc::new(Shared::default());
        // With `Block` the channel carries batches of up to `batch_jobs` jobs: as many slots
        // as keep the queued jobs within `queue_capacity`.
        let (batch_jobs, slots) = match b.queue_policy {
            QueuePolicy::Block => {
                let batch = b.queue_capacity.clamp(1, MAX_PENDING_JOBS);
                (batch, (b.queue_capacity / batch).max(1))
            }
            QueuePolicy::DropNewest => (1, b.queue_capacity),
        };
        let (tx, rx) = sync_channel(slots);
        let cfg = WriterConfig {
            store: store.clone(),
            worker: b.worker.clone(),
            flavor,
            reduction_shape,
            tensorboard: tb_target,
        };
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("smdebug-hook-writer".into())
            .spawn(move || writer::run(cfg, thread_shared, rx))
            .map_err(HookError::Thread)?;

        let mut mode_steps = [None; 4];
        mode_steps[mode_index(Mode::Global)] = Some(b.init_step);
        Ok(Hook {
            store,
            out_dir: b.out_dir.clone(),
            cm,
            framework_defaults,
            include,
            hook_save_config: b.default_save_config(),
            hook_reduction: b
                .reduction_config
                .clone()
                .unwrap_or_else(ReductionConfig::raw_only),
            prepared: None,
            tensor_colls: HashMap::new(),
            step_colls: None,
            step: b.init_step,
            init_step: b.init_step,
            mode: Mode::Global,
            mode_steps,
            started: false,
            exported: false,
            writer_open: false,
            scalars: Vec::new(),
            custom: Vec::new(),
            worker: b.worker.clone(),
            num_workers_meta,
            writes,
            write_collections: b.write_collections,
            end_marker: b.end_marker,
            tensorboard,
            wall_time: b.wall_time.clone(),
            policy: b.queue_policy,
            tx: Some(tx),
            pending: Vec::new(),
            batch_jobs,
            pending_elements: 0,
            thread: Some(thread),
            shared,
            stop: StopWatch {
                key: stop_key,
                interval: b.stop_check_interval,
                last_check: None,
                last_step: i64::MIN,
                stopped: false,
            },
            closed: false,
        })
    }

    /// The out_dir as given.
    pub fn out_dir(&self) -> &str {
        &self.out_dir
    }

    /// This worker's name.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// The current global step (`init_step` before the first [`Hook::step`]).
    pub fn global_step(&self) -> i64 {
        self.step
    }

    /// The current mode (GLOBAL until [`Hook::set_mode`]).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The current step of the current mode.
    pub fn mode_step(&self) -> i64 {
        self.mode_steps[mode_index(self.mode)].unwrap_or(self.init_step)
    }

    /// The collections (after the first step: with their resolved configs).
    pub fn collections(&self) -> &CollectionManager {
        &self.cm
    }

    /// The collection called `name`, created if missing. Configure collections before the
    /// first step: smdebug prepares them (resolves configs, picks the saved ones) then, and
    /// later changes of regexes or configs are not seen.
    pub fn get_collection(&mut self, name: &str) -> &mut Collection {
        self.cm.get_or_create(name)
    }

    /// Adds a collection to the saved ones (before the first step).
    pub fn include_collection(&mut self, name: &str) {
        if !self.include.iter().any(|n| n == name) {
            self.include.push(name.to_owned());
        }
    }

    /// Tensors dropped so far because the queue was full ([`QueuePolicy::DropNewest`]).
    pub fn dropped_tensors(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Switches the mode (`set_mode`). A mode seen for the first time starts its step
    /// counter at `init_step`, so its first step is mode step `init_step + 1`.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        let slot = &mut self.mode_steps[mode_index(mode)];
        if slot.is_none() {
            *slot = Some(self.init_step);
        }
        self.step_colls = None;
    }

    fn check(&self) -> Result<()> {
        match self.shared.failure() {
            Some(message) => Err(HookError::WriterFailed { message }),
            None => Ok(()),
        }
    }

    /// Hands a job to the writer thread, in order. With [`QueuePolicy::Block`] the jobs of
    /// a step are held on the training thread and sent as one batch (one message of the
    /// channel) when the next step starts (or at [`Hook::flush`] / close, or once
    /// `batch_jobs` jobs or [`MAX_PENDING_ELEMENTS`] elements are held): each message to an
    /// idle writer wakes it, and on a machine with few cores every wake-up can preempt a
    /// thread of the training itself mid-operation. Sent one by one, even back to back, the
    /// jobs of a burst woke the writer several times per step (it takes each job as soon
    /// as it arrives and goes back to sleep), and the sender and the waking writer contend
    /// for the channel's lock. One batch per step costs one wake-up. The writer does the same
    /// work in the same order, one step later at most.
    fn send(&mut self, job: Job) -> Result<()> {
        if self.tx.is_none() {
            return Err(HookError::WriterFailed {
                message: "the hook is closed".into(),
            });
        }
        if self.policy != QueuePolicy::Block {
            return self.send_now(job);
        }
        if let Job::Tensor(t) = &job {
            self.pending_elements += t.value.len();
        }
        self.pending.push(job);
        if self.pending.len() >= self.batch_jobs || self.pending_elements >= MAX_PENDING_ELEMENTS {
            self.send_pending()?;
        }
        Ok(())
    }

    /// Sends the held jobs as one batch (see [`Hook::send`]).
    fn send_pending(&mut self) -> Result<()> {
        self.pending_elements = 0;
        let mut jobs = std::mem::take(&mut self.pending);
        match jobs.len() {
            0 => Ok(()),
            1 => self.send_now(jobs.remove(0)),
            _ => self.send_now(Job::Batch(jobs)),
        }
    }

    fn send_now(&mut self, job: Job) -> Result<()> {
        let Some(tx) = &self.tx else {
            return Err(HookError::WriterFailed {
                message: "the hook is closed".into(),
            });
        };
        tx.send(job).map_err(|_| HookError::WriterFailed {
            message: self
                .shared
                .failure()
                .unwrap_or_else(|| "the writer thread stopped".into()),
        })
    }

    /// Starts a new step (the PyTorch hook's `forward_pre_hook`): ends the previous step
    /// (its cached scalars and custom tensors are written, then its files published),
    /// prepares the collections the first time, and advances the global step and the
    /// current mode's step.
    pub fn step(&mut self) -> Result<()> {
        self.check()?;
        self.end_step(false)?;
        self.prepare()?;
        self.step += 1;
        let mi = mode_index(self.mode);
        self.mode_steps[mi] = Some(self.mode_steps[mi].unwrap_or(self.init_step) + 1);
        if self.mode != Mode::Global {
            self.mode_steps[mode_index(Mode::Global)] = Some(self.step);
        }
        self.step_colls = None;
        self.started = true;
        let due = !self.collections_for_step()?.is_empty();
        self.writer_open = due && self.writes;
        if !self.exported {
            // The first export happens at the first step, before any index file, so that a
            // reader (which waits for collections files) can open the trial as soon as a
            // step is visible, even if the job dies later.
            self.export_collections()?;
            self.exported = true;
        }
        self.send_pending()
    }

    /// Ends the current step: custom tensors and cached scalars are written (scalars also
    /// when `closing`, into a file for the current step), then the step is published.
    fn end_step(&mut self, closing: bool) -> Result<()> {
        let custom = std::mem::take(&mut self.custom);
        if self.writer_open {
            for (name, value, coll) in custom {
                self.write_custom(name, value, &coll)?;
            }
        }
        if self.writer_open || closing {
            self.write_scalars()?;
        }
        if self.writer_open || closing {
            self.send(Job::EndStep)?;
        }
        self.writer_open = false;
        Ok(())
    }

    fn write_custom(&mut self, name: String, value: Tensor, coll: &str) -> Result<()> {
        let prepared_raw = self
            .prepared_index(coll)
            .map(|i| self.prepared_ref()[i].reduction.save_raw_tensor);
        let c = self.cm.get_or_create(coll);
        c.add_tensor_name(name.clone());
        let raw = prepared_raw.unwrap_or_else(|| {
            c.reduction_config
                .as_ref()
                .unwrap_or(&self.hook_reduction)
                .save_raw_tensor
        });
        if raw && !value.is_empty() {
            self.write_raw_record(&name, value)?;
        }
        Ok(())
    }

    fn prepared_ref(&self) -> &[Prepared] {
        self.prepared.as_deref().unwrap_or(&[])
    }

    fn prepared_index(&self, name: &str) -> Option<usize> {
        self.prepared_ref().iter().position(|p| p.name == name)
    }

    fn wall(&self) -> f64 {
        match &self.wall_time {
            WallTime::Now => now(),
            WallTime::PerStep(f) => f(self.step),
        }
    }

    fn write_scalars(&mut self) -> Result<()> {
        let scalars = std::mem::take(&mut self.scalars);
        if !self.writes {
            return Ok(());
        }
        for s in scalars {
            let wall_time = s
                .timestamp
                .filter(|&t| t != 0.0)
                .unwrap_or_else(|| self.wall());
            if self.tensorboard {
                if let Some(v) = crate::tensorboard::values_f64(&s.value) {
                    self.send(Job::TbScalar {
                        tag: clean_tag(&s.name),
                        value: v[0] as f32,
                        step: self.step,
                        mode: self.mode,
                        wall_time,
                    })?;
                }
            }
            let job = TensorJob {
                name: s.name,
                value: s.value,
                step: self.step,
                mode: self.mode,
                mode_step: self.mode_step(),
                wall_time,
                shape: false,
                reductions: Vec::new(),
                raw: true,
                histogram: None,
                tb_scalar: false,
            };
            self.send(Job::Tensor(Box::new(job)))?;
        }
        Ok(())
    }

    /// `_prepare_collections`: checks user collections, picks the saved ones, and resolves
    /// each collection's save config (own modes, the hook's for the rest) and reduction
    /// config (forced raw-only for loss/metric collections).
    fn prepare(&mut self) -> Result<()> {
        if self.prepared.is_some() {
            return Ok(());
        }
        let save_all = self.include.iter().any(|n| n == smdebug_config::keys::ALL);
        let mut prepared = Vec::new();
        for c in self.cm.collections_mut() {
            let is_default = self.framework_defaults.contains(&c.name);
            if !is_default && c.include_regex().is_empty() && c.tensor_names.is_empty() {
                return Err(HookError::InvalidCollectionConfiguration {
                    name: c.name.clone(),
                });
            }
            if NON_HISTOGRAM_COLLECTIONS.contains(&c.name.as_str()) {
                c.save_histogram = false;
            }
            match &mut c.save_config {
                None => c.save_config = Some(self.hook_save_config.clone()),
                Some(own) => own.merge_default(&self.hook_save_config),
            }
            if NON_REDUCTION_COLLECTIONS.contains(&c.name.as_str()) {
                c.reduction_config = Some(ReductionConfig::raw_only());
            } else if c.reduction_config.is_none() {
                c.reduction_config = Some(self.hook_reduction.clone());
            }
            let saved = save_all || self.include.contains(&c.name);
            if saved {
                prepared.push(Prepared {
                    name: c.name.clone(),
                    save_config: c.save_config.clone().unwrap_or_default(),
                    reduction: c.reduction_config.clone().unwrap_or_default(),
                    save_histogram: c.save_histogram,
                    scalar: SCALAR_COLLECTIONS.contains(&c.name.as_str()),
                    train_only: c.name == GRADIENTS || c.name == OPTIMIZER_VARIABLES,
                });
            }
        }
        self.prepared = Some(prepared);
        Ok(())
    }

    /// The saved collections due at the current step (cached per step).
    fn collections_for_step(&mut self) -> Result<&[usize]> {
        if self.step_colls.is_none() {
            let ms = self.mode_step();
            let eval = matches!(self.mode, Mode::Eval | Mode::Predict);
            let mut due = Vec::new();
            for (i, p) in self.prepared_ref().iter().enumerate() {
                if eval && p.train_only {
                    continue;
                }
                let yes = p.save_config.should_save(self.mode, ms).map_err(|source| {
                    HookError::SaveConfig {
                        collection: p.name.clone(),
                        mode: self.mode,
                        step: ms,
                        source,
                    }
                })?;
                if yes {
                    due.push(i);
                }
            }
            self.step_colls = Some(due);
        }
        Ok(self.step_colls.as_deref().unwrap_or(&[]))
    }

    /// The saved collections a tensor belongs to (`_get_collections_with_tensor`), cached
    /// for the hook's life; a regex match adds the name to the collection's tensor names.
    fn tensor_collections(&mut self, name: &str) -> Result<&[usize]> {
        if !self.tensor_colls.contains_key(name) {
            let mut found = Vec::new();
            let names: Vec<String> = self.prepared_ref().iter().map(|p| p.name.clone()).collect();
            for (i, cname) in names.iter().enumerate() {
                let Some(c) = self.cm.get_mut(cname) else {
                    continue;
                };
                if c.has_tensor_name(name) {
                    found.push(i);
                } else if c.matches_regex(name)? {
                    c.add_tensor_name(name);
                    found.push(i);
                }
            }
            self.tensor_colls.insert(name.to_owned(), found);
        }
        Ok(self.tensor_colls.get(name).map_or(&[], Vec::as_slice))
    }

    /// Declares a tensor name before training: its saved collections are computed (a regex
    /// match records the name in the collection, so it appears in the collections file even
    /// if the tensor is never due). Prepares the collections if no step ran yet. Returns the
    /// names of the saved collections containing it.
    pub fn declare_tensor(&mut self, name: &str) -> Result<Vec<String>> {
        self.prepare()?;
        let idx = self.tensor_collections(name)?.to_vec();
        Ok(idx
            .into_iter()
            .map(|i| self.prepared_ref()[i].name.clone())
            .collect())
    }

    /// The indices of the collections saving `name` at this step.
    fn saving_collections(&mut self, name: &str) -> Result<Vec<usize>> {
        if !self.started {
            return Err(HookError::NoStep {
                name: name.to_owned(),
            });
        }
        if !self.writes {
            return Ok(Vec::new());
        }
        let step = self.collections_for_step()?.to_vec();
        if step.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.tensor_collections(name)?;
        Ok(t.iter().copied().filter(|i| step.contains(i)).collect())
    }

    /// Whether a tensor of this name would be saved at this step. Cheap after the first
    /// call per name; lets a training loop skip copying tensors that are not due.
    pub fn should_save(&mut self, name: &str) -> Result<bool> {
        Ok(!self.saving_collections(name)?.is_empty())
    }

    /// Whether the raw value of a tensor of this name is due at this step (a due collection
    /// containing it saves raw tensors).
    pub fn raw_due(&mut self, name: &str) -> Result<bool> {
        let saving = self.saving_collections(name)?;
        let prepared = self.prepared_ref();
        Ok(saving
            .iter()
            .any(|&i| prepared[i].reduction.save_raw_tensor))
    }

    /// Offers a tensor at the current step (`_save_for_tensor`): if a collection containing
    /// it is due, its shape, reductions and raw value are written as those collections'
    /// reduction configs say (shape → reductions → raw value, each reduction once, no raw
    /// value for empty tensors), plus TensorBoard summaries when enabled.
    pub fn save(&mut self, name: &str, value: Tensor) -> Result<Saved> {
        let saving = self.saving_collections(name)?;
        if saving.is_empty() {
            return Ok(Saved::NotDue);
        }
        let prepared = self.prepared_ref();
        let mut shape = false;
        let mut raw = false;
        let mut reductions: Vec<ReductionRequest> = Vec::new();
        let mut histogram = None;
        let mut tb_scalar = false;
        for &i in &saving {
            let p = &prepared[i];
            let rc = &p.reduction;
            shape |= rc.save_shape;
            raw |= rc.save_raw_tensor;
            if p.scalar {
                tb_scalar = true;
            } else {
                let plain = rc
                    .reductions
                    .iter()
                    .map(|r| r.name())
                    .chain(rc.norms.iter().map(|n| n.name()))
                    .map(|n| (n, false));
                let abs = rc
                    .abs_reductions
                    .iter()
                    .map(|r| r.name())
                    .chain(rc.abs_norms.iter().map(|n| n.name()))
                    .map(|n| (n, true));
                for (op, is_abs) in plain.chain(abs) {
                    let Ok(r) = op.parse::<Reduction>() else {
                        continue;
                    };
                    let req = ReductionRequest::new(r, is_abs);
                    if !reductions.contains(&req) {
                        reductions.push(req);
                    }
                }
            }
            if self.tensorboard
                && histogram.is_none()
                && p.save_histogram
                && !NON_HISTOGRAM_COLLECTIONS.contains(&p.name.as_str())
            {
                histogram = Some(clean_tag(&format!("{}/{}", p.name, name)));
            }
        }
        let job = TensorJob {
            name: name.to_owned(),
            raw: raw && !value.is_empty(),
            histogram: histogram.filter(|_| !value.is_empty()),
            tb_scalar: tb_scalar && self.tensorboard,
            value,
            step: self.step,
            mode: self.mode,
            mode_step: self.mode_step(),
            wall_time: self.wall(),
            shape,
            reductions,
        };
        self.enqueue(job)
    }

    fn enqueue(&mut self, job: TensorJob) -> Result<Saved> {
        let job = Job::Tensor(Box::new(job));
        match self.policy {
            QueuePolicy::Block => {
                self.send(job)?;
                Ok(Saved::Queued)
            }
            QueuePolicy::DropNewest => {
                let Some(tx) = &self.tx else {
                    return Err(HookError::WriterFailed {
                        message: "the hook is closed".into(),
                    });
                };
                match tx.try_send(job) {
                    Ok(()) => Ok(Saved::Queued),
                    Err(TrySendError::Full(_)) => {
                        self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                        Ok(Saved::Dropped)
                    }
                    Err(TrySendError::Disconnected(_)) => {
                        self.check()?;
                        Err(HookError::WriterFailed {
                            message: "the writer thread stopped".into(),
                        })
                    }
                }
            }
        }
    }

    /// Writes a raw record of `value` under `name` into the current step, with no
    /// collection or save-config check, even when the tensor is empty. A low-level escape
    /// for tools that reproduce smdebug's writer classes (e.g. a second value under the
    /// same name, which readers resolve to the last one).
    pub fn write_raw_record(&mut self, name: &str, value: Tensor) -> Result<Saved> {
        if !self.started {
            return Err(HookError::NoStep {
                name: name.to_owned(),
            });
        }
        if !self.writes {
            return Ok(Saved::NotDue);
        }
        let job = TensorJob {
            name: name.to_owned(),
            value,
            step: self.step,
            mode: self.mode,
            mode_step: self.mode_step(),
            wall_time: self.wall(),
            shape: false,
            reductions: Vec::new(),
            raw: true,
            histogram: None,
            tb_scalar: false,
        };
        self.send(Job::Tensor(Box::new(job)))?;
        Ok(Saved::Queued)
    }

    /// `save_tensor`: a custom tensor for collection `collection` (created if missing; the
    /// name is added to it). It is written as a raw tensor at the end of the current step if
    /// that step saves anything and the collection saves raw tensors — with no save-config
    /// check of its own. One value per name and step: a later call replaces an earlier one.
    pub fn save_tensor(&mut self, name: &str, value: Tensor, collection: &str) {
        self.custom.retain(|(n, _, _)| n != name);
        self.custom
            .push((name.to_owned(), value, collection.to_owned()));
    }

    /// `save_scalar(name, value)`: recorded as `scalar/<name>` (float64, shape `[1]`) in the
    /// events file of the step that is current when the cache is flushed (the end of the
    /// next step that saves something, or close), and as a TensorBoard scalar. `timestamp`
    /// (seconds since the epoch) becomes the event's wall time; `None` or 0 means now.
    pub fn save_scalar(&mut self, name: &str, value: f64, timestamp: Option<f64>) {
        self.scalars.push(CachedScalar {
            name: format!("scalar/{name}"),
            value: Tensor::from(ndarray::arr1(&[value]).into_dyn()),
            timestamp,
        });
    }

    /// Like [`Hook::save_scalar`] with a tensor value of any dtype, which must have exactly
    /// one element (its shape is kept, e.g. 0-d).
    pub fn save_scalar_tensor(
        &mut self,
        name: &str,
        value: Tensor,
        timestamp: Option<f64>,
    ) -> Result<()> {
        let name = format!("scalar/{name}");
        if value.len() != 1 {
            return Err(HookError::NotAScalar {
                name,
                len: value.len(),
            });
        }
        self.scalars.push(CachedScalar {
            name,
            value,
            timestamp,
        });
        Ok(())
    }

    /// Whether training should stop: true once the stop-signal object exists in the trial
    /// (and from then on). Checked at most once per step and at most once per
    /// `stop_check_interval`, so calling it every iteration is cheap; works across
    /// processes and on object storage.
    pub fn should_stop(&mut self) -> bool {
        if self.stop.stopped {
            return true;
        }
        if self.stop.last_step == self.step && self.stop.last_check.is_some() {
            return false;
        }
        if self
            .stop
            .last_check
            .is_some_and(|t| t.elapsed() < self.stop.interval)
        {
            return false;
        }
        self.stop.last_check = Some(Instant::now());
        self.stop.last_step = self.step;
        match self.store.exists(&self.stop.key) {
            Ok(true) => self.stop.stopped = true,
            Ok(false) => {}
            Err(e) => tracing::warn!("checking the stop signal {}: {e}", self.stop.key),
        }
        self.stop.stopped
    }

    /// The key of the stop-signal object, relative to the trial.
    pub fn stop_signal_key(&self) -> &str {
        &self.stop.key
    }

    fn export_collections(&mut self) -> Result<()> {
        if !self.writes || !self.write_collections {
            return Ok(());
        }
        let mut cm = self.cm.clone();
        cm.set_num_workers(self.num_workers_meta);
        let key = collections_file_key(&self.worker)?;
        self.send(Job::Put {
            key,
            data: Bytes::from(cm.to_json()),
        })
    }

    /// Waits until everything handed to the writer thread so far is written; reports the
    /// writer thread's first failure.
    pub fn flush(&mut self) -> Result<()> {
        self.send_pending()?;
        let (reply_tx, reply_rx) = sync_channel(1);
        self.send_now(Job::Flush(reply_tx))?;
        match reply_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(HookError::WriterFailed { message }),
            Err(_) => {
                self.check()?;
                Err(HookError::WriterFailed {
                    message: "the writer thread stopped".into(),
                })
            }
        }
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
            return Ok(self.stats());
        }
        self.closed = true;
        let result = self.finish();
        self.tx = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                return Err(HookError::WriterFailed {
                    message: "the writer thread panicked".into(),
                });
            }
        }
        result?;
        self.check()?;
        if self.writes && self.end_marker && !is_sagemaker_job() {
            writer::write_end_marker(&self.store)
                .map_err(|message| HookError::WriterFailed { message })?;
        }
        Ok(self.stats())
    }

    fn finish(&mut self) -> Result<()> {
        self.check()?;
        self.prepare()?;
        // Closed before any step: there is no step to put cached scalars in (smdebug would
        // write them at step -1, which no reader can open), so they are dropped.
        if self.writes && self.started {
            self.end_step(true)?;
        }
        self.export_collections()?;
        self.send_pending()
    }

    fn stats(&self) -> HookStats {
        HookStats {
            records: self.shared.records.load(Ordering::Relaxed),
            event_bytes: self.shared.event_bytes.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
        }
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
    use smdebug_config::SaveConfigMode;

    fn loss() -> Tensor {
        Tensor::from(ndarray::arr1(&[1.0f32]).into_dyn())
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
        assert!(h.pending.is_empty());
        for i in 0..3 {
            let name = format!("L{i}MSELoss_output_0");
            assert_eq!(h.save(&name, loss()).unwrap(), Saved::Queued);
        }
        assert_eq!(h.pending.len(), 3);
        h.step().unwrap();
        assert!(h.pending.is_empty());
        h.save("L0MSELoss_output_0", loss()).unwrap();
        h.flush().unwrap();
        assert!(h.pending.is_empty());
        // Step 0: three losses; step 1: one.
        assert_eq!(h.close().unwrap().records, 4);
    }

    #[test]
    fn held_jobs_are_bounded_by_the_batch_size() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 256);
        assert_eq!(h.batch_jobs, MAX_PENDING_JOBS);
        h.step().unwrap();
        let n = MAX_PENDING_JOBS * 2 + 5;
        let mut most = 0;
        for i in 0..n {
            h.save(&format!("L{i}MSELoss_output_0"), loss()).unwrap();
            most = most.max(h.pending.len());
        }
        assert_eq!(most, MAX_PENDING_JOBS - 1);
        assert_eq!(h.close().unwrap().records, n as u64);
    }

    #[test]
    fn a_queue_smaller_than_a_batch_holds_no_more_jobs_than_its_capacity() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::Block, 3);
        assert_eq!(h.batch_jobs, 3);
        h.step().unwrap();
        let n = MAX_PENDING_JOBS * 2 + 5;
        for i in 0..n {
            h.save(&format!("L{i}MSELoss_output_0"), loss()).unwrap();
            assert!(h.pending.len() < 3);
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
            assert!(h.pending.is_empty(), "a queue of one job holds single jobs");
        }
        let big = Tensor::from(ndarray::Array1::<f32>::zeros(MAX_PENDING_ELEMENTS).into_dyn());
        h.save("BigMSELoss_output_0", big).unwrap();
        assert!(h.pending.is_empty(), "a large tensor is sent at once");
        assert_eq!(h.close().unwrap().records, n as u64 + 1);
    }

    #[test]
    fn drop_newest_decides_at_save_time() {
        let d = tempfile::tempdir().unwrap();
        let mut h = hook(d.path(), QueuePolicy::DropNewest, 256);
        h.step().unwrap();
        h.save("MSELoss_output_0", loss()).unwrap();
        assert!(h.pending.is_empty());
        assert_eq!(h.close().unwrap().records, 1);
    }
}
