//! The one tokio runtime that every [`BlockingStore`](crate::BlockingStore) of a process
//! drives its I/O on, started when first needed and replaced in a forked child.
//!
//! Lock-free on purpose (see [`RuntimeCell`]); that takes a raw pointer to a leaked value,
//! the only unsafe code of the crate.
#![allow(unsafe_code)]

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use tokio::runtime::Runtime;

use crate::error::{Result, StorageError};

/// A runtime and the process that started it.
#[derive(Debug)]
struct Started {
    pid: u32,
    runtime: Runtime,
}

/// A lazily started runtime, one per process: the process-wide one is [`SHARED`].
///
/// A runtime, once kept, is never dropped: dropping it would wait for its threads (which
/// panics inside another runtime) and object-store clients keep connection tasks on it for
/// as long as the process runs. A forked child has none of its parent's threads, so a
/// runtime started before a fork would never make progress there: the child starts its own
/// on first use and leaks the parent's (its memory only; its threads do not exist in the
/// child). The cell is lock-free, so a fork while another thread starts the runtime cannot
/// leave the child waiting on a lock that nobody will release.
#[derive(Debug)]
pub(crate) struct RuntimeCell {
    /// How the runtime is started ([`start_runtime`]; tests make it fail).
    start: fn() -> Result<Runtime>,
    /// The kept runtime (leaked, never freed), or null before the first start.
    current: AtomicPtr<Started>,
}

/// The runtime shared by every blocking store of this process.
pub(crate) static SHARED: RuntimeCell = RuntimeCell::new(start_runtime);

/// Starts the storage runtime: two workers drive every store's I/O.
pub(crate) fn start_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("smdebug-storage")
        .enable_all()
        .build()
        .map_err(|e| StorageError::Runtime {
            reason: format!("cannot start the storage runtime: {e}"),
        })
}

impl RuntimeCell {
    /// A cell whose runtime `start` starts.
    pub(crate) const fn new(start: fn() -> Result<Runtime>) -> Self {
        RuntimeCell {
            start,
            current: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The runtime of this process, started now if there is none yet (or only one started
    /// before a fork, in the parent). A runtime that cannot be started is
    /// [`StorageError::Runtime`]; a later call tries again.
    pub(crate) fn get(&self) -> Result<&'static Runtime> {
        let pid = std::process::id();
        let mut seen = self.current.load(Ordering::Acquire);
        loop {
            // SAFETY: a non-null pointer came from `Box::into_raw` below and is never freed.
            if let Some(started) = unsafe { seen.as_ref() } {
                if started.pid == pid {
                    return Ok(&started.runtime);
                }
            }
            let fresh = Box::into_raw(Box::new(Started {
                pid,
                runtime: (self.start)()?,
            }));
            match self
                .current
                .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // The replaced runtime, if any, belongs to the parent: leaked on purpose.
                Ok(_) => {
                    // SAFETY: just stored; never freed.
                    return Ok(unsafe { &(*fresh).runtime });
                }
                Err(now) => {
                    // Another thread kept its runtime first: this one never ran anything
                    // and shuts down in the background (blocking here could panic inside
                    // a caller's runtime).
                    // SAFETY: `fresh` was never shared.
                    let spare = unsafe { Box::from_raw(fresh) };
                    spare.runtime.shutdown_background();
                    seen = now;
                }
            }
        }
    }

    /// True once this process has kept a runtime.
    #[cfg(test)]
    pub(crate) fn is_started(&self) -> bool {
        // SAFETY: as in `get`.
        unsafe { self.current.load(Ordering::Acquire).as_ref() }
            .is_some_and(|started| started.pid == std::process::id())
    }
}
