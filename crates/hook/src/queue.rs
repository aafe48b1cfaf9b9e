//! [`WriterQueue`]: the training thread's end of the bounded channel to the writer thread,
//! and the writer thread itself; [`QueuePolicy`]: what a save does when the channel is
//! full.

use crate::error::{HookError, Result};
use crate::job::Job;
use crate::stats::{HookStats, Saved, Shared};
use crate::writer::{self, WriterConfig};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the training thread does when the writer thread's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueuePolicy {
    /// Wait until the writer thread has taken a job (the default): nothing is lost, and the
    /// training loop slows down to the writer's pace.
    #[default]
    Block,
    /// Drop the tensor being saved and count it
    /// ([`Hook::dropped_tensors`](crate::Hook::dropped_tensors)): the training loop never
    /// waits, and the trial misses those tensors. Step boundaries, scalars, collections
    /// files and the end marker are never dropped.
    DropNewest,
}

/// Most jobs the training thread holds before handing them to the writer thread as one
/// batch (see [`WriterQueue::send`]); a quarter of the default queue capacity, so the queue
/// holds four batches.
pub(crate) const MAX_PENDING_JOBS: usize = 64;

/// Most tensor elements the training thread holds before handing them over: a step that
/// saves large raw tensors goes on streaming them to the writer as they come, so they are
/// not all in memory at once.
pub(crate) const MAX_PENDING_ELEMENTS: usize = 1 << 20;

/// The queue to the writer thread: jobs go in, in order; the writer's first failure and its
/// counters come back through [`Shared`].
pub(crate) struct WriterQueue {
    /// What a tensor job does when the channel is full.
    policy: QueuePolicy,
    /// The channel to the writer thread; dropped at close, which ends the writer's loop.
    tx: Option<SyncSender<Job>>,
    /// Jobs held on the training thread, to be sent as one batch (see
    /// [`WriterQueue::send`]).
    pending: Vec<Job>,
    /// Most jobs in `pending`, and so in one batch.
    batch_jobs: usize,
    /// Elements of the tensors in `pending`.
    pending_elements: usize,
    /// The writer thread, joined at close.
    thread: Option<JoinHandle<()>>,
    /// The writer's first failure and the counters, shared with the writer and I/O threads.
    shared: Arc<Shared>,
}

impl WriterQueue {
    /// Starts the writer thread with `cfg` behind a channel holding at most `capacity`
    /// jobs.
    pub fn start(cfg: WriterConfig, policy: QueuePolicy, capacity: usize) -> Result<Self> {
        let shared = Arc::new(Shared::default());
        // With `Block` the channel carries batches of up to `batch_jobs` jobs: as many slots
        // as keep the queued jobs within `capacity`.
        let (batch_jobs, slots) = match policy {
            QueuePolicy::Block => {
                let batch = capacity.clamp(1, MAX_PENDING_JOBS);
                (batch, (capacity / batch).max(1))
            }
            QueuePolicy::DropNewest => (1, capacity),
        };
        let (tx, rx) = sync_channel(slots);
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("smdebug-hook-writer".into())
            .spawn(move || writer::run(cfg, thread_shared, rx))
            .map_err(HookError::Thread)?;
        Ok(WriterQueue {
            policy,
            tx: Some(tx),
            pending: Vec::new(),
            batch_jobs,
            pending_elements: 0,
            thread: Some(thread),
            shared,
        })
    }

    /// The writer thread's first failure, if any.
    pub fn check(&self) -> Result<()> {
        match self.shared.failure() {
            Some(source) => Err(HookError::WriterFailed { source }),
            None => Ok(()),
        }
    }

    /// The error for a channel whose writer end is gone: its recorded failure, else it
    /// panicked.
    fn gone(&self) -> HookError {
        match self.shared.failure() {
            Some(source) => HookError::WriterFailed { source },
            None => HookError::WriterPanicked,
        }
    }

    /// Offers a tensor job as the queue policy says: with [`QueuePolicy::Block`] it is sent
    /// (see [`WriterQueue::send`]); with [`QueuePolicy::DropNewest`] it is dropped and
    /// counted when the channel is full.
    pub fn offer(&mut self, job: Job) -> Result<Saved> {
        match self.policy {
            QueuePolicy::Block => {
                self.send(job)?;
                Ok(Saved::Queued)
            }
            QueuePolicy::DropNewest => {
                let Some(tx) = &self.tx else {
                    return Err(HookError::Closed);
                };
                match tx.try_send(job) {
                    Ok(()) => Ok(Saved::Queued),
                    Err(TrySendError::Full(_)) => {
                        self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                        Ok(Saved::Dropped)
                    }
                    Err(TrySendError::Disconnected(_)) => Err(self.gone()),
                }
            }
        }
    }

    /// Hands a job to the writer thread, in order, never dropping it. With
    /// [`QueuePolicy::Block`] the jobs of a step are held on the training thread and sent as
    /// one batch (one message of the channel) when the next step starts (or at
    /// [`crate::Hook::flush`] / close, or once `batch_jobs` jobs or
    /// [`MAX_PENDING_ELEMENTS`] elements are held): each message to an idle writer wakes
    /// it, and on a machine with few cores every wake-up can preempt a thread of the
    /// training itself mid-operation. Sent one by one, even back to back, the jobs of a
    /// burst would wake the writer several times per step (it takes each job as soon as it
    /// arrives and goes back to sleep), and the sender and the waking writer would contend
    /// for the channel's lock. One batch per step costs one wake-up. The writer does the same work
    /// in the same order, one step later at most.
    pub fn send(&mut self, job: Job) -> Result<()> {
        if self.tx.is_none() {
            return Err(HookError::Closed);
        }
        if self.policy != QueuePolicy::Block {
            return self.send_now(job);
        }
        if let Job::Tensor(t) = &job {
            self.pending_elements += t.len;
        }
        self.pending.push(job);
        if self.pending.len() >= self.batch_jobs || self.pending_elements >= MAX_PENDING_ELEMENTS {
            self.send_pending()?;
        }
        Ok(())
    }

    /// Whether jobs wait for room in the channel ([`QueuePolicy::Block`]).
    pub fn blocks(&self) -> bool {
        self.policy == QueuePolicy::Block
    }

    /// Hands a job to the writer thread now, after the held ones, instead of with the
    /// step's batch.
    pub fn send_at_once(&mut self, job: Job) -> Result<()> {
        self.send_pending()?;
        self.send_now(job)
    }

    /// Sends the held jobs as one batch (see [`WriterQueue::send`]).
    pub fn send_pending(&mut self) -> Result<()> {
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
            return Err(HookError::Closed);
        };
        tx.send(job).map_err(|_| self.gone())
    }

    /// Waits until everything handed over so far is written; reports the writer thread's
    /// first failure.
    pub fn flush(&mut self) -> Result<()> {
        self.send_pending()?;
        let (reply_tx, reply_rx) = sync_channel(1);
        self.send_now(Job::Flush(reply_tx))?;
        match reply_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(HookError::WriterFailed { source }),
            Err(_) => Err(self.gone()),
        }
    }

    /// Closes the channel (the writer publishes what it holds and ends), waits for the
    /// writer thread, and reports its first failure. Held jobs must have been sent.
    pub fn close(&mut self) -> Result<()> {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                return Err(HookError::WriterPanicked);
            }
        }
        self.check()
    }

    /// Tensors dropped so far because the channel was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// What the writer thread did so far.
    pub fn stats(&self) -> HookStats {
        self.shared.stats()
    }

    /// Jobs held on the training thread.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.pending.len()
    }

    /// Most jobs in one batch.
    #[cfg(test)]
    pub fn batch_jobs(&self) -> usize {
        self.batch_jobs
    }
}
