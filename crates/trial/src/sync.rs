//! The crate's one way of taking a lock.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, also when a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every update is a single
    // insert), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
