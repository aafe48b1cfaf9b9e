//! The poller: finds new trials under the served paths, keeps one open `Trial` per run and
//! refreshes it as the reader does (one listing after the last index key read), and sends
//! the new points of a run that a page follows.

use crate::live::LiveEvent;
use crate::runs::{lock, Run, Status, FIRINGS_KEPT};
use crate::Shared;
use smdebug_fleet::{discover_with, TrialRef};
use smdebug_report::StepRange;
use smdebug_trial::{Mode, Trial, TrialError, TrialOptions};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a run nobody follows is refreshed (at least; more runs, longer), and a broken
/// one retried.
const IDLE_POLL: Duration = Duration::from_secs(2);
const BROKEN_POLL: Duration = Duration::from_secs(10);
/// Runs refreshed at once.
const POLL_THREADS: usize = 4;

/// The options every run's trial is opened with: no wait for the collections files (a run
/// without them is looked at again), corrupt index files skipped and named, a small cache.
pub(crate) fn trial_options(shared: &Shared, name: &str) -> TrialOptions {
    TrialOptions {
        name: Some(name.to_owned()),
        collections_timeout: Some(Duration::ZERO),
        skip_corrupt_index_files: true,
        cache_bytes: 16 << 20,
        read_ahead: false,
        storage: shared.options.storage.clone(),
        ..TrialOptions::default()
    }
}

/// The served local folders, resolved through their links: a trial is served only when its
/// own resolved folder is inside one of them, so a link inside a served folder cannot
/// expose a folder outside it. Object-store prefixes have no links.
pub(crate) fn local_roots(paths: &[String]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| !p.contains("://"))
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect()
}

/// Whether a discovered trial is inside the served paths.
pub(crate) fn contained(roots: &[PathBuf], location: &str) -> bool {
    if location.contains("://") {
        return true;
    }
    match std::fs::canonicalize(location) {
        Ok(real) => roots.iter().any(|r| real.starts_with(r)),
        Err(_) => false,
    }
}

/// Adds the trials found under the served paths; the error of a failed discovery is kept
/// for the runs page.
pub(crate) fn discover(shared: &Shared) {
    match discover_with(&shared.options.paths, &shared.options.storage) {
        Ok(found) => {
            *lock(&shared.discovery_error) = None;
            for t in found {
                add(shared, &t);
            }
        }
        Err(e) => *lock(&shared.discovery_error) = Some(e.to_string()),
    }
}

/// Adds one trial (when it is inside the served paths and new) and tells the pages.
pub(crate) fn add(shared: &Shared, t: &TrialRef) {
    let roots = local_roots(&shared.options.paths);
    if !contained(&roots, &t.location) {
        return;
    }
    if let Some(run) = shared.runs.add(&t.name, &t.location) {
        shared.send(LiveEvent::Run { run: run.summary() });
    }
}

/// Polls until the server stops.
pub(crate) fn run(shared: Arc<Shared>) {
    let mut discovered = Instant::now();
    while !shared.stopping() {
        if discovered.elapsed() >= shared.options.discover_every {
            discover(&shared);
            discovered = Instant::now();
        }
        let all = shared.runs.all();
        // Runs nobody follows are refreshed at most 50 a second together (a fleet of 1,000
        // on an object store costs 50 listings a second, not 500).
        let idle = IDLE_POLL.max(Duration::from_millis(20 * all.len() as u64));
        let due: Vec<Arc<Run>> = all
            .into_iter()
            .filter(|r| is_due(&shared, r, idle))
            .collect();
        let Ok(()) = smdebug_trial::parallel::for_each_ordered(
            &due,
            POLL_THREADS,
            1,
            "smdebug-serve-poll",
            |run| poll_caught(&shared, run),
            |_, ()| Ok::<(), std::convert::Infallible>(()),
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn is_due(shared: &Shared, run: &Run, idle: Duration) -> bool {
    let st = lock(&run.state);
    let every = match st.summary.status {
        Status::Ended => return false,
        Status::Broken => BROKEN_POLL.max(idle),
        Status::Live if run.followers.load(Ordering::Relaxed) > 0 => shared.options.poll,
        Status::Live => idle.max(shared.options.poll),
    };
    st.polled.is_none_or(|t| t.elapsed() >= every)
}

/// [`poll`], a panic in the reader being that run's error rather than the poller's end.
pub(crate) fn poll_caught(shared: &Shared, run: &Arc<Run>) {
    let r = catch_unwind(AssertUnwindSafe(|| poll(shared, run)));
    let error = match r {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e.to_string(),
        Err(panic) => format!("the reader panicked: {}", panic_text(&panic)),
    };
    let mut st = lock(&run.state);
    st.failures += 1;
    st.summary.status = Status::Broken;
    st.summary.error = Some(error);
    let summary = st.summary.clone();
    drop(st);
    shared.send(LiveEvent::Run { run: summary });
}

pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Opens the run's trial if needed, refreshes it and updates the run.
fn poll(shared: &Shared, run: &Arc<Run>) -> Result<(), BoxError> {
    lock(&run.state).polled = Some(Instant::now());
    let trial = match run.trial() {
        Some(t) => t,
        None => match Trial::open(&run.location, trial_options(shared, &run.name)) {
            Ok(t) => {
                // Only the poller refreshes: a page's reads see the steps it announced.
                t.set_dynamic_refresh(false);
                let t = Arc::new(t);
                *lock(&run.trial) = Some(Arc::clone(&t));
                t
            }
            // No collections files yet: the job has not started writing.
            Err(TrialError::Timeout { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        },
    };
    // The marker first: when it is there, the refresh after it sees every step.
    let ended = trial.has_training_ended()?;
    trial.refresh_data()?;
    let steps = trial.steps(Mode::Global, false)?;
    let modes: Vec<String> = trial.modes().iter().map(|m| m.to_string()).collect();
    let workers = trial.workers()?.len().max(trial.num_workers());
    let errors = trial.index_errors();
    let error = errors.first().map(|(step, e)| {
        format!(
            "{} index file(s) could not be read; step {step}: {e}",
            errors.len()
        )
    });
    let mut st = lock(&run.state);
    let before = st.summary.last_step;
    let last = steps.last().copied();
    let status = if ended { Status::Ended } else { Status::Live };
    let changed = st.summary.steps != steps.len()
        || st.summary.last_step != last
        || st.summary.status != status
        || st.summary.error != error
        || st.summary.modes != modes
        || st.summary.workers != workers;
    st.failures = 0;
    st.summary.steps = steps.len();
    st.summary.last_step = last;
    st.summary.status = status;
    st.summary.error = error;
    st.summary.modes = modes;
    st.summary.workers = workers;
    let summary = st.summary.clone();
    drop(st);
    if !changed {
        return Ok(());
    }
    shared.send(LiveEvent::Run { run: summary });
    let new_steps = last.is_some() && last != before;
    if new_steps && run.followers.load(Ordering::Relaxed) > 0 {
        send_points(shared, run, &trial, before)?;
    }
    Ok(())
}

/// Sends the new points of every scalar, gradient and weight of the run drawn on its page
/// (the steps after `after`).
fn send_points(
    shared: &Shared,
    run: &Run,
    trial: &Trial,
    after: Option<i64>,
) -> Result<(), BoxError> {
    let groups = {
        let tensors = trial.tensor_names()?.len();
        let known = lock(&run.state).live_names.clone();
        match known {
            Some((n, groups)) if n == tensors => groups,
            _ => {
                let (gradients, weights) = smdebug_report::norm_tensors(trial)?;
                let groups = [
                    ("scalars", smdebug_report::scalar_tensors(trial)?),
                    ("gradient_norms", gradients),
                    ("weight_norms", weights),
                ];
                lock(&run.state).live_names = Some((tensors, groups.clone()));
                groups
            }
        }
    };
    let range = StepRange {
        start: after.map(|a| a + 1),
        end: None,
    };
    for (kind, names) in groups {
        for tensor in names {
            let chart = match kind {
                "scalars" => smdebug_report::scalar_curves(trial, &tensor, range, usize::MAX)?,
                _ => smdebug_report::norm_curve(trial, &tensor, range, usize::MAX)?,
            };
            if chart.series.iter().all(|s| s.steps.is_empty()) {
                continue;
            }
            shared.send(LiveEvent::Points {
                run: run.id.clone(),
                kind,
                tensor,
                series: chart.series,
            });
        }
    }
    Ok(())
}

/// An error of a run, whichever layer it came from (only shown).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Records a firing of the rule service on its run, once.
pub(crate) fn record_firing(shared: &Shared, firing: &smdebug_fleet::FiringRecord) {
    let Some(run) = shared.runs.by_name(&firing.trial) else {
        return;
    };
    let mut st = lock(&run.state);
    if st.firings.iter().any(|f| f.key() == firing.key()) {
        return;
    }
    if st.firings.len() < FIRINGS_KEPT {
        st.firings.push(firing.clone());
    }
    let rule = st.summary.rules.entry(firing.rule.clone()).or_default();
    rule.fired += 1;
    if rule.first_step.is_none_or(|s| firing.step < s) {
        rule.first_step = Some(firing.step);
    }
    if st
        .summary
        .first_firing
        .as_ref()
        .is_none_or(|f| firing.step < f.step)
    {
        st.summary.first_firing = Some(firing.clone());
    }
    let summary = st.summary.clone();
    drop(st);
    shared.send(LiveEvent::Firing {
        run: run.id.clone(),
        firing: firing.clone(),
    });
    shared.send(LiveEvent::Run { run: summary });
}

/// Notes that the rule service could not evaluate a run.
pub(crate) fn record_rule_error(shared: &Shared, trial: &str, error: &str) {
    let Some(run) = shared.runs.by_name(trial) else {
        return;
    };
    let mut st = lock(&run.state);
    st.summary.rules_error = Some(error.to_owned());
    let summary = st.summary.clone();
    drop(st);
    shared.send(LiveEvent::Run { run: summary });
}
