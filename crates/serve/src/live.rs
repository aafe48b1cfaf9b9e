//! What open pages are told as it happens, over server-sent events.

use crate::runs::RunSummary;
use serde::Serialize;
use smdebug_fleet::FiringRecord;
use smdebug_report::data::Series;

/// One event of the stream (`/api/events`): the SSE event name is its `type`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LiveEvent {
    /// A run was found or changed (status, last step, modes, workers, verdicts).
    Run {
        /// Its summary now.
        run: RunSummary,
    },
    /// New points of one tensor of a run followed by a page (a scalar's values, a
    /// gradient's or weight's L2 norm): only the steps after the last step the run had
    /// before.
    Points {
        /// The run's id.
        run: String,
        /// Which charts: `scalars`, `gradient_norms` or `weight_norms` (the run data's keys).
        kind: &'static str,
        /// The tensor (a chart of the run page, or a line of a norm chart).
        tensor: String,
        /// Its new points, one series per mode.
        series: Vec<Series>,
    },
    /// A rule fired on a run.
    Firing {
        /// The run's id.
        run: String,
        /// The firing.
        firing: FiringRecord,
    },
}

impl LiveEvent {
    /// The SSE event name.
    pub fn kind(&self) -> &'static str {
        match self {
            LiveEvent::Run { .. } => "run",
            LiveEvent::Points { .. } => "points",
            LiveEvent::Firing { .. } => "firing",
        }
    }

    /// The run it is about.
    pub fn run_id(&self) -> &str {
        match self {
            LiveEvent::Run { run } => &run.id,
            LiveEvent::Points { run, .. } | LiveEvent::Firing { run, .. } => run,
        }
    }
}
