//! The rule service behind the verdicts: a `smdebug_fleet::Watcher` over the served paths,
//! evaluating each run's completed steps as its job writes, its firings kept on the runs.

use crate::poll::{add, record_firing, record_rule_error};
use crate::{Result, Shared};
use smdebug_fleet::{WatchEvent, WatchOptions, Watcher};
use std::sync::Arc;
use std::time::Duration;

/// The watcher of the served paths with the server's rules, its state in memory (the
/// firings of a run are found again after a restart: its steps are evaluated again);
/// `None` without rules.
pub(crate) fn watcher(shared: &Shared) -> Result<Option<Watcher>> {
    if shared.options.rules.is_empty() {
        return Ok(None);
    }
    let mut options = WatchOptions::new(shared.options.paths.clone(), shared.options.rules.clone());
    options.poll = shared.options.poll.max(Duration::from_millis(200));
    options.jobs = 2;
    options.max_failures = 3;
    options.trial.storage = shared.options.storage.clone();
    options.webhook = shared
        .options
        .webhook
        .as_deref()
        .map(smdebug_fleet::WebhookOptions::new);
    Ok(Some(Watcher::new(options)?))
}

/// Runs the watcher until the server stops; an error of the watcher itself (not of a
/// run) is kept for the runs page, and the watcher starts again.
pub(crate) fn run(shared: Arc<Shared>, mut watcher: Watcher) {
    let emit = |e: &WatchEvent<'_>| match e {
        WatchEvent::Found(t) => add(&shared, t),
        WatchEvent::Fired(f) => record_firing(&shared, f),
        WatchEvent::Failed { trial, error, .. } => record_rule_error(&shared, trial, error),
        _ => {}
    };
    // An error of the watcher itself (a listing of the paths that failed) is shown and
    // the watcher goes on after a pause: the server never stops for it.
    while !shared.stopping() {
        match watcher.run(&emit, &shared.stop) {
            Ok(_) => return,
            Err(e) => *crate::runs::lock(&shared.rules_error) = Some(e.to_string()),
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
