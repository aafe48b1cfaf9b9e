//! [`WallTime`]: where the `wall_time` of each event comes from, and the clock it reads.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The `wall_time` written in each event.
#[derive(Clone, Default)]
pub enum WallTime {
    /// The time of the save, as smdebug writes it.
    #[default]
    Now,
    /// A function of the global step (for reproducible trials, e.g. `base + step`).
    PerStep(Arc<dyn Fn(i64) -> f64 + Send + Sync>),
}

impl WallTime {
    /// The wall time of an event saved now, at global step `step`.
    pub(crate) fn at(&self, step: i64) -> f64 {
        match self {
            WallTime::Now => now(),
            WallTime::PerStep(f) => f(step),
        }
    }
}

impl std::fmt::Debug for WallTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WallTime::Now => f.write_str("Now"),
            WallTime::PerStep(_) => f.write_str("PerStep(..)"),
        }
    }
}

/// Seconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
