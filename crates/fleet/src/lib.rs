//! Fleets of smdebug trials: a team's bucket holds hundreds of training jobs, each with its
//! trial. This crate finds them, runs work over them a bounded number at a time, and runs
//! the rule service that watches them live (`smdebug watch`).
//!
//! * **Discovery** ([`discover`], [`trial_roots`]): a location (local path or object-store
//!   URL) that is itself a trial — `index/` or `collections/` below it — is one trial;
//!   otherwise every trial below it is, found by listing the location's keys once (no file
//!   is opened). Trials come back sorted by name, the path relative to the location.
//! * **The runner** ([`Runner`]): a closure per trial on at most `jobs`
//!   threads, results in trial order; a trial's error is reported by name and the others go
//!   on, unless the runner is strict. The closure opens and drops its trial, so memory is
//!   bounded by `jobs`, not by the fleet.
//! * **Rules over one trial** ([`TrialRules`]): every rule of a list built over a reader
//!   of its own and run on a thread of its own (or one after the other over one reader),
//!   with typed errors ([`RuleRunError`]); `smdebug rules`, the HTML report and the watch
//!   service run their rules through it.
//! * **The watch service** ([`Watcher`]): discovers trials as jobs start, evaluates the
//!   rules on the steps each job has completed (never blocking on a live trial), takes the
//!   rules' actions (the stop-training signal the hook obeys), and keeps its progress in a
//!   state file so that a restart resumes.
//! * **Webhooks** ([`Webhook`], [`WebhookOptions`]): the watcher posts each firing once it
//!   is recorded, as `{"text": …}` (what a Slack incoming webhook takes), in log order,
//!   retried until delivered; the state counts the firings delivered, so a restart posts
//!   the others and none twice.
//!
//! ```
//! use smdebug_fleet::{discover, Runner};
//! use smdebug_synth::{write_trial, Recipe, WriteOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let recipe = Recipe::from_json(
//!     r#"{"seed": 1, "schedule": [{"mode": "TRAIN", "steps": 3}],
//!         "collections": [{"name": "all", "include_regex": [".*"]}],
//!         "tensors": [{"name": "w", "shape": [4]}]}"#,
//!     "doc",
//! )?;
//! for job in ["job-2", "job-1"] {
//!     let out = dir.path().join(job).join("debug-output");
//!     write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default())?;
//! }
//! let trials = discover(&[dir.path().to_str().unwrap()])?;
//! let steps = Runner::new(2).run(&trials, |t| {
//!     let trial = smdebug_trial::create_trial(&t.location)?;
//!     trial.steps(smdebug_trial::Mode::Global, false)
//! })?;
//! assert_eq!(steps[0].trial.name, "job-1/debug-output");
//! assert_eq!(steps[1].result.as_ref().unwrap(), &[0, 1, 2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Exactly once
//!
//! The watcher writes every firing to a *firing log*, a file of JSON lines, and keeps its
//! progress in a *state file*. It may be killed (`kill -9`) at any instant and restarted;
//! every firing must then be in the log exactly once. The order is **record, then
//! report, then remember**:
//!
//! 1. When a rule fires, the firing is appended to the log as one line and the log is
//!    synced (`fsync`). Only then does it count as recorded, and only then is it reported
//!    (the caller's line on standard output).
//! 2. After a pass, the state (per trial and rule: the first step not yet evaluated,
//!    whether the trial has ended, the log's length) is written to a temporary file,
//!    synced and renamed over the old state. The state therefore never counts a firing
//!    that is not in the log.
//! 3. On restart the log is read back. A last line cut short by the kill (no newline) was
//!    never recorded and is cut off. Every trial not finished in the state is evaluated
//!    again **from its first step** with fresh rules, and a firing whose (trial, rule,
//!    step) is already in the log is skipped. Re-evaluating from the start, rather than
//!    from the state's step, keeps the verdicts of rules that carry state from step to
//!    step (loss trends, overfitting) equal to an uninterrupted run. Within one run the
//!    rules are kept between passes, state and all, so a trial's next pass starts at the
//!    first step its rules have not evaluated.
//!
//! A kill before step 1's sync loses nothing that was recorded: the firing is found again.
//! A kill between the sync and the state's rename leaves a state behind the log, and the
//! firing is found again and skipped. The other order (remember, then record) would lose a
//! firing killed between the two. Reports on standard output are at most once (a kill
//! between the sync and the print loses the print, not the record); the log is the record.
//! Actions are at least once: the stop signal is written when the rule fires, before the
//! firing is recorded, and written again (the same object) if the firing is found again.
//!
//! Webhook posts follow the record: a firing joins the webhook's queue when it is recorded,
//! is posted after the pass, and counts as delivered (`WatchState::webhook_sent`, saved at
//! once) when the receiver answered 2xx. A receiver that is down or refuses keeps the
//! firing and the ones after it queued (in the log, for a restart). A kill between the
//! receiver's answer and the state's save posts that one firing again after the restart:
//! delivery is at least once, and twice only in that window.
//!
//! Memory: a pass evaluates at most `jobs` trials at once. Every live trial keeps its reader
//! and rules between passes (its index and the rules' state: what makes a pass evaluate
//! only new steps); with more live trials than `jobs`, a trial lets go of its cached values
//! and open files once evaluated, so that no more than `jobs` trials hold them at a time.
//!
//! Main pieces: [`TrialRef`], [`discover`], [`Runner`], [`TrialRules`] ([`RuleSpec`],
//! [`RuleOutcome`], [`RuleRunError`]), [`Watcher`] ([`WatchOptions`],
//! [`WatchRule`], [`WatchEvent`], [`WatchSummary`]), [`FiringLog`], [`FiringRecord`],
//! [`WatchState`], [`FleetError`].
#![deny(missing_docs, unsafe_code)]

mod discover;
mod error;
mod log;
mod record;
mod rules;
mod runner;
mod state;
mod watch;
mod webhook;

pub use discover::{discover, discover_with, trial_roots, TrialRef};
pub use error::{FleetError, Result};
pub use log::FiringLog;
pub use record::{FiringKey, FiringRecord};
pub use rules::{
    evaluate_rule, mode_of_step, RuleOutcome, RuleRunError, RuleSpec, Schedule, TrialRules,
};
pub use runner::{Runner, TrialOutcome};
pub use state::{TrialState, TrialStatus, WatchState, STATE_VERSION};
pub use watch::{WatchEvent, WatchOptions, WatchRule, WatchSummary, Watcher};
pub use webhook::{webhook_message, Webhook, WebhookError, WebhookOptions};
