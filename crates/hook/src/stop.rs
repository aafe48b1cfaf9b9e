//! [`StopSignalWatch`]: polls the trial for the stop-signal object that a rule (or a person)
//! creates to stop the training job.

use smdebug_storage::BlockingStore;
use std::time::{Duration, Instant};

/// Watches for the stop-signal object of one trial ([`crate::Hook::should_stop`]). A poll is
/// a storage round trip, so it happens at most once per step and at most once per
/// `interval`; once the object has been seen, the answer stays yes without further polls.
#[derive(Debug)]
pub(crate) struct StopSignalWatch {
    /// The stop-signal object's key, relative to the trial.
    key: String,
    /// The least time between two polls.
    interval: Duration,
    /// When the store was last polled (`None`: never).
    last_check: Option<Instant>,
    /// The global step of the last poll.
    last_step: i64,
    /// The object was seen: training should stop.
    stopped: bool,
}

impl StopSignalWatch {
    /// A watch for the object `key` polled at most once per `interval`.
    pub fn new(key: String, interval: Duration) -> Self {
        StopSignalWatch {
            key,
            interval,
            last_check: None,
            last_step: i64::MIN,
            stopped: false,
        }
    }

    /// The stop-signal object's key, relative to the trial.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether training should stop at global step `step`, polling `store` when a poll is
    /// due. A failed poll is logged and answers no: the next one may succeed, and stopping
    /// a job over a transient storage error would be worse than stopping it a step later.
    pub fn poll(&mut self, store: &BlockingStore, step: i64) -> bool {
        if self.stopped {
            return true;
        }
        if self.last_step == step && self.last_check.is_some() {
            return false;
        }
        if self.last_check.is_some_and(|t| t.elapsed() < self.interval) {
            return false;
        }
        self.last_check = Some(Instant::now());
        self.last_step = step;
        match store.exists(&self.key) {
            Ok(true) => self.stopped = true,
            Ok(false) => {}
            Err(e) => tracing::warn!("checking the stop signal {}: {e}", self.key),
        }
        self.stopped
    }
}
