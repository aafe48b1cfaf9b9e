//! The runs the server knows: every trial discovered under the served paths, by an opaque
//! id. A run is found only by its id, never by a path, so no request names a file.

use serde::Serialize;
use sha2::{Digest, Sha256};
use smdebug_fleet::FiringRecord;
use smdebug_trial::Trial;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

/// Firings kept per run (the runs page shows the first; the run page marks them).
pub(crate) const FIRINGS_KEPT: usize = 10_000;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its job is writing (or has not written its collections files yet).
    Live,
    /// Its job wrote the end-of-training marker and every step is read.
    Ended,
    /// It cannot be read; the error says why.
    Broken,
}

/// One rule's verdict on one run, from the rule service the server runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RuleState {
    /// Firings so far.
    pub fired: usize,
    /// The first step it fired at.
    pub first_step: Option<i64>,
}

/// What the runs page shows of a run (also what an event sends when it changes).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The opaque id its pages and API calls use.
    pub id: String,
    /// Its fleet name (the path relative to the served location).
    pub name: String,
    /// The folder part of the name (for grouping).
    pub folder: String,
    /// Live, ended or broken.
    pub status: Status,
    /// Why it is broken, or the last error met while reading it.
    pub error: Option<String>,
    /// The last complete global step.
    pub last_step: Option<i64>,
    /// Number of complete global steps.
    pub steps: usize,
    /// Its modes.
    pub modes: Vec<String>,
    /// Number of workers.
    pub workers: usize,
    /// Per rule label, its verdict so far.
    pub rules: BTreeMap<String, RuleState>,
    /// The first firing (by step).
    pub first_firing: Option<FiringRecord>,
    /// Why the rule service could not evaluate the run (its last failure), if it could not.
    pub rules_error: Option<String>,
}

/// The mutable part of a run.
#[derive(Debug)]
pub(crate) struct RunState {
    pub summary: RunSummary,
    /// Every firing recorded so far, in the order found (at most [`FIRINGS_KEPT`]).
    pub firings: Vec<FiringRecord>,
    /// Consecutive failures to open or refresh.
    pub failures: u32,
    /// When it was last polled.
    pub polled: Option<Instant>,
    /// The tensors live points are sent for (scalars, gradients, weights), and the tensor
    /// count they were found at.
    pub live_names: Option<(usize, LiveNames)>,
}

/// The tensors of a run whose new points are sent: scalars, gradients, weights.
pub(crate) type LiveNames = [(&'static str, Vec<String>); 3];

/// A detail computed from the trial, kept until the trial has new steps.
pub(crate) type Cached<T> = Mutex<Option<(Stamp, Arc<T>)>>;

/// What a cached detail depends on: the steps read when it was made.
pub(crate) type Stamp = (usize, Option<i64>, bool);

/// One run: its trial (opened by the poller), its state and what its pages asked for.
pub(crate) struct Run {
    pub id: String,
    pub name: String,
    pub location: String,
    pub trial: Mutex<Option<Arc<Trial>>>,
    pub state: Mutex<RunState>,
    /// Open pages following it (its live points are computed only while there are some).
    pub followers: AtomicUsize,
    pub detail: Cached<smdebug_report::ReportData>,
    pub health: Cached<serde_json::Value>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Run {
    /// The run's state now.
    pub fn summary(&self) -> RunSummary {
        lock(&self.state).summary.clone()
    }

    /// Its open trial, once the poller opened it.
    pub fn trial(&self) -> Option<Arc<Trial>> {
        lock(&self.trial).clone()
    }

    /// What a detail made now depends on.
    pub fn stamp(&self) -> Stamp {
        let s = lock(&self.state);
        (
            s.summary.steps,
            s.summary.last_step,
            s.summary.status == Status::Ended,
        )
    }
}

/// The opaque id of a location: 16 hex digits of its SHA-256, the same across restarts.
pub(crate) fn run_id(location: &str) -> String {
    hex::encode(&Sha256::digest(location.as_bytes())[..8])
}

/// Every run, by id and by fleet name.
#[derive(Default)]
pub(crate) struct Runs {
    by_id: RwLock<BTreeMap<String, Arc<Run>>>,
    by_name: RwLock<HashMap<String, String>>,
    /// The rule labels every run is judged by.
    pub rules: Vec<String>,
}

impl Runs {
    pub fn new(rules: Vec<String>) -> Self {
        Runs {
            rules,
            ..Default::default()
        }
    }

    /// Adds a run found by discovery; `None` when it is known already.
    pub fn add(&self, name: &str, location: &str) -> Option<Arc<Run>> {
        let id = run_id(location);
        let mut by_id = self.by_id.write().unwrap_or_else(|p| p.into_inner());
        if by_id.contains_key(&id) {
            return None;
        }
        let folder = name.rsplit_once('/').map_or("", |(f, _)| f).to_owned();
        let run = Arc::new(Run {
            id: id.clone(),
            name: name.to_owned(),
            location: location.to_owned(),
            trial: Mutex::new(None),
            state: Mutex::new(RunState {
                summary: RunSummary {
                    id: id.clone(),
                    name: name.to_owned(),
                    folder,
                    status: Status::Live,
                    error: None,
                    last_step: None,
                    steps: 0,
                    modes: Vec::new(),
                    workers: 0,
                    rules: self
                        .rules
                        .iter()
                        .map(|r| (r.clone(), RuleState::default()))
                        .collect(),
                    first_firing: None,
                    rules_error: None,
                },
                firings: Vec::new(),
                failures: 0,
                polled: None,
                live_names: None,
            }),
            followers: AtomicUsize::new(0),
            detail: Mutex::new(None),
            health: Mutex::new(None),
        });
        by_id.insert(id.clone(), Arc::clone(&run));
        self.by_name
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), id);
        Some(run)
    }

    /// The run of an id.
    pub fn get(&self, id: &str) -> Option<Arc<Run>> {
        self.by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// The run of a fleet name.
    pub fn by_name(&self, name: &str) -> Option<Arc<Run>> {
        let id = self
            .by_name
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()?;
        self.get(&id)
    }

    /// Every run, sorted by name.
    pub fn all(&self) -> Vec<Arc<Run>> {
        let mut v: Vec<Arc<Run>> = self
            .by_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.by_id.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A page following a run, counted while it is alive.
pub(crate) struct Following(pub Arc<Run>);

impl Following {
    pub fn new(run: Arc<Run>) -> Self {
        run.followers.fetch_add(1, Ordering::Relaxed);
        Following(run)
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.0.followers.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_opaque_and_stable() {
        let a = run_id("/data/jobs/a");
        assert_eq!(a.len(), 16);
        assert_eq!(a, run_id("/data/jobs/a"));
        assert_ne!(a, run_id("/data/jobs/b"));
        let runs = Runs::new(vec!["R".into()]);
        let run = runs.add("x/a", "/data/jobs/x/a").unwrap();
        assert!(runs.add("x/a", "/data/jobs/x/a").is_none());
        assert_eq!(run.summary().folder, "x");
        assert!(runs.get(&run.id).is_some());
        assert!(runs.get("/data/jobs/x/a").is_none());
        assert!(runs.get("../x/a").is_none());
        assert_eq!(runs.by_name("x/a").unwrap().id, run.id);
        assert!(run.summary().rules.contains_key("R"));
    }
}
