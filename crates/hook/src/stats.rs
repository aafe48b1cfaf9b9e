//! What the hook reports back to the training thread: the outcome of one save ([`Saved`]),
//! the writer's counters over the hook's life ([`HookStats`]), and the state the writer and
//! I/O threads share with the training thread ([`Shared`]: the first failure and the live
//! counters).

use crate::error::WriterError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What [`Hook::save`](crate::Hook::save) did with a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// No collection of the tensor is saved at this step (or this worker does not write).
    NotDue,
    /// Handed to the writer thread.
    Queued,
    /// Due, but dropped because the queue was full ([`QueuePolicy::DropNewest`](crate::QueuePolicy::DropNewest)).
    Dropped,
}

/// What the writer thread did over the hook's life, returned by
/// [`Hook::close`](crate::Hook::close).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HookStats {
    /// Tensor records written to events files (raw tensors, reductions, scalars).
    pub records: u64,
    /// Bytes of events files written.
    pub event_bytes: u64,
    /// Tensors dropped because the queue was full.
    pub dropped: u64,
}

/// The first failure and the counters, shared by the training, writer and I/O threads.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The writer thread's first failure; once set, nothing more is written.
    failure: Mutex<Option<Arc<WriterError>>>,
    /// Whether `failure` is set. The writer and I/O threads ask before every job and the
    /// training thread at every step: an atomic load, so that asking never waits for a lock
    /// the other threads hold (a contended lock puts the asking thread to sleep).
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

    /// Records `error` unless a failure was recorded already (the first one explains the
    /// others).
    pub fn fail(&self, error: WriterError) {
        let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            tracing::error!("smdebug hook writer: {error}");
            *slot = Some(Arc::new(error));
            // Release: whoever sees the flag then finds the message under the lock.
            self.failed.store(true, Ordering::Release);
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> HookStats {
        HookStats {
            records: self.records.load(Ordering::Relaxed),
            event_bytes: self.event_bytes.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}
