//! The rule service: watches every trial under some prefixes while their jobs write, runs
//! the rules live, records each firing exactly once and takes the rules' actions.

use crate::discover::{discover_with, TrialRef};
use crate::error::{FleetError, Result};
use crate::log::FiringLog;
use crate::record::FiringRecord;
use crate::rules::{evaluate_rule, mode_of_step, RuleRunError, RuleSpec};
use crate::state::{TrialState, TrialStatus, WatchState};
use crate::webhook::{Webhook, WebhookOptions};
use smdebug_rules::{Drive, EndReason, Rule};
use smdebug_trial::parallel::for_each_owned;
use smdebug_trial::{Trial, TrialError, TrialOptions};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One rule the watcher runs on every trial: a [`RuleSpec`], as `smdebug rules` and the
/// report run theirs.
pub type WatchRule = RuleSpec;

/// Settings of a [`Watcher`].
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Where to look for trials (local paths or object-store URLs).
    pub prefixes: Vec<String>,
    /// The rules run on every trial.
    pub rules: Vec<WatchRule>,
    /// The state file (a local path); `None` keeps the state in memory only.
    pub state: Option<PathBuf>,
    /// The firing log (a local path); `None` keeps firings in memory only.
    pub log: Option<PathBuf>,
    /// Trials evaluated at once (at least one); also bounds the trials kept open between
    /// passes.
    pub jobs: usize,
    /// Pause between two passes.
    pub poll: Duration,
    /// With [`Watcher::run`]: end once every trial found has ended (or is broken) and no
    /// new trial appeared for `idle`.
    pub until_idle: bool,
    /// See `until_idle`.
    pub idle: Duration,
    /// Failures in a row after which a trial is given up as broken.
    pub max_failures: u32,
    /// How each trial is opened (its name is set to the fleet name; the collections files
    /// are never waited for: a trial without them is waiting and is looked at again next
    /// pass).
    pub trial: TrialOptions,
    /// Where each firing is posted once it is recorded (in log order; with a state file,
    /// across restarts too).
    pub webhook: Option<WebhookOptions>,
}

impl WatchOptions {
    /// Defaults: 4 jobs, a one-second poll, three failures, no state file, not until idle,
    /// and a reader with a 32 MiB value cache and no read-ahead thread per trial.
    pub fn new(prefixes: Vec<String>, rules: Vec<WatchRule>) -> Self {
        WatchOptions {
            prefixes,
            rules,
            state: None,
            log: None,
            jobs: 4,
            poll: Duration::from_secs(1),
            until_idle: false,
            idle: Duration::ZERO,
            max_failures: 3,
            trial: TrialOptions {
                cache_bytes: 32 << 20,
                read_ahead: false,
                ..TrialOptions::default()
            },
            webhook: None,
        }
    }
}

/// Something the watcher did, handed to the caller as it happens (from worker threads).
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchEvent<'a> {
    /// A new trial was found.
    Found(&'a TrialRef),
    /// A firing was recorded (it is in the firing log).
    Fired(&'a FiringRecord),
    /// A trial's job ended and every rule evaluated every step.
    Ended {
        /// The trial's fleet name.
        trial: &'a str,
        /// Its firings, all runs of the watcher together.
        firings: u64,
    },
    /// A firing was posted to the webhook (the receiver answered 2xx).
    Delivered(&'a FiringRecord),
    /// The webhook did not take a firing; it and the ones after it are tried again next
    /// pass.
    WebhookFailed {
        /// The error of the last attempt.
        error: &'a str,
        /// Firings waiting to be posted.
        pending: usize,
    },
    /// A trial failed.
    Failed {
        /// The trial's fleet name.
        trial: &'a str,
        /// The error.
        error: &'a str,
        /// Whether it is given up (broken) or will be tried again.
        broken: bool,
    },
}

/// Counts for the summary the watcher prints on exit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchSummary {
    /// Trials known (found in this run or an earlier one).
    pub trials: usize,
    /// Trials whose job ended and that were evaluated to the end.
    pub ended: usize,
    /// Trials given up.
    pub broken: usize,
    /// Trials still waiting or being watched.
    pub live: usize,
    /// Firings recorded by this run.
    pub firings_new: u64,
    /// Firings in the log, all runs together.
    pub firings_total: u64,
    /// Steps at which a rule ran in this run, every rule and trial together (a step
    /// evaluated by two rules counts twice). A trial evaluated over several passes counts
    /// each step once; after a restart its steps are evaluated again and count again.
    pub steps_evaluated: u64,
    /// Passes made by this run.
    pub passes: u64,
    /// Firings of the log not posted to the webhook yet (0 without a webhook).
    pub webhook_pending: usize,
}

/// A trial and its rules, kept between passes so that each pass evaluates only the steps
/// written since the last one. With more live trials than jobs, the trial's cached values
/// and open files are let go after each pass (its index and the rules' state stay).
struct Session {
    trial: Arc<Trial>,
    rules: Vec<RuleRun>,
}

struct RuleRun {
    label: String,
    rule: Box<dyn Rule>,
    next: i64,
    done: bool,
}

/// How one pass over one trial went.
enum Advance {
    /// Not started yet (no collections files).
    Waiting,
    /// Evaluated what is there; the session to keep.
    Watched(Session),
    /// Ended: every rule done.
    Ended(BTreeMap<String, i64>),
    /// Not looked at: the watcher is stopping. The session (when there was one) to keep.
    Skipped(Option<Session>),
}

/// The rule service engine. [`Watcher::pass`] looks once at every live trial; [`Watcher::run`]
/// repeats passes, saving the state after each.
///
/// Exactly once (the crate docs explain why): a firing is recorded (appended to the
/// firing log and synced) before anything else about it happens, the state is saved only
/// after the firings it counts are recorded, and a trial whose rules are rebuilt (after a
/// restart or a failure) is evaluated again from its first step with every firing already
/// in the log skipped. Between passes of one run the rules are kept, so a trial resumes at
/// the first step its rules have not evaluated.
pub struct Watcher {
    options: WatchOptions,
    state: WatchState,
    log: Mutex<FiringLog>,
    sessions: HashMap<String, Session>,
    summary: WatchSummary,
    /// Firings recorded by this run (from worker threads).
    recorded: AtomicU64,
    /// Steps evaluated by this run (from worker threads).
    evaluated: AtomicU64,
    last_found: Instant,
    webhook: Option<Webhook>,
    /// Firings recorded and not posted yet, in log order (only with a webhook).
    outbox: Mutex<VecDeque<FiringRecord>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("options", &self.options)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Watcher {
    /// A watcher resuming from the state and firing log the options name (both are created
    /// when missing).
    pub fn new(options: WatchOptions) -> Result<Self> {
        if options.prefixes.is_empty() {
            return Err(FleetError::InvalidOptions("no prefix to watch".into()));
        }
        if options.rules.is_empty() {
            return Err(FleetError::InvalidOptions("no rule to run".into()));
        }
        let labels: Vec<String> = options.rules.iter().map(|r| r.label.clone()).collect();
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].contains(l) {
                return Err(FleetError::Rule {
                    rule: l.clone(),
                    reason: "two rules have this label".into(),
                });
            }
            smdebug_rules::find_rule(&options.rules[i].name).map_err(|e| FleetError::Rule {
                rule: l.clone(),
                reason: e.to_string(),
            })?;
        }
        let (log, records) = match &options.log {
            Some(path) => FiringLog::open(path)?,
            None => (FiringLog::in_memory(), Vec::new()),
        };
        let state = match &options.state {
            Some(path) => WatchState::load(path)?,
            None => None,
        };
        let state = match state {
            Some(s) => {
                let path = options.state.clone().unwrap_or_default();
                if s.rules != labels {
                    return Err(FleetError::Corrupt {
                        path,
                        reason: format!(
                            "the state was made for the rules {:?}, not {labels:?}: use another state file",
                            s.rules
                        ),
                    });
                }
                if options.log.is_some() && s.log_bytes > log.bytes() {
                    return Err(FleetError::Corrupt {
                        path,
                        reason: format!(
                            "the state counts {} bytes of firing log, the log has {}",
                            s.log_bytes,
                            log.bytes()
                        ),
                    });
                }
                s
            }
            None => WatchState::new(labels),
        };
        let webhook = match &options.webhook {
            Some(w) => Some(
                Webhook::new(w.clone()).map_err(|e| FleetError::InvalidOptions(e.to_string()))?,
            ),
            None => None,
        };
        // The firings of the log after the last one delivered wait to be posted.
        let outbox = match &webhook {
            Some(_) => records
                .into_iter()
                .skip(usize::try_from(state.webhook_sent).unwrap_or(usize::MAX))
                .collect(),
            None => VecDeque::new(),
        };
        let summary = WatchSummary {
            firings_total: log.len() as u64,
            ..Default::default()
        };
        Ok(Watcher {
            options,
            state,
            log: Mutex::new(log),
            sessions: HashMap::new(),
            summary,
            recorded: AtomicU64::new(0),
            evaluated: AtomicU64::new(0),
            last_found: Instant::now(),
            webhook,
            outbox: Mutex::new(outbox),
        })
    }

    /// The state as it stands.
    pub fn state(&self) -> &WatchState {
        &self.state
    }

    /// The counts so far.
    pub fn summary(&self) -> WatchSummary {
        let mut s = self.summary.clone();
        s.trials = self.state.trials.len();
        let count = |status| {
            self.state
                .trials
                .values()
                .filter(|t| t.status == status)
                .count()
        };
        s.ended = count(TrialStatus::Ended);
        s.broken = count(TrialStatus::Broken);
        s.live = s.trials - s.ended - s.broken;
        s.firings_total = lock(&self.log).len() as u64;
        s.firings_new = self.recorded.load(Ordering::Relaxed);
        s.steps_evaluated = self.evaluated.load(Ordering::Relaxed);
        s.webhook_pending = lock(&self.outbox).len();
        s
    }

    /// Whether every trial found is done with (and at least one was found).
    pub fn idle(&self) -> bool {
        !self.state.trials.is_empty() && self.state.trials.values().all(|t| t.status.is_final())
    }

    /// One pass: finds new trials, then evaluates every live trial as far as its job has
    /// written (at most `jobs` at once), recording firings as they happen.
    pub fn pass(&mut self, on_event: &(dyn Fn(&WatchEvent<'_>) + Sync)) -> Result<()> {
        self.pass_until(on_event, &AtomicBool::new(false))
    }

    /// [`pass`](Self::pass) that starts no trial once `stop` is set (the trials in
    /// progress finish; the others are left as they stand for the next run).
    fn pass_until(
        &mut self,
        on_event: &(dyn Fn(&WatchEvent<'_>) + Sync),
        stop: &AtomicBool,
    ) -> Result<()> {
        let found = discover_with(&self.options.prefixes, &self.options.trial.storage)?;
        for t in found {
            if !self.state.trials.contains_key(&t.name) {
                on_event(&WatchEvent::Found(&t));
                self.last_found = Instant::now();
                self.state.trials.insert(
                    t.name.clone(),
                    TrialState {
                        location: t.location.clone(),
                        ..Default::default()
                    },
                );
            }
        }
        let live: Vec<(TrialRef, Option<Session>)> = self
            .state
            .trials
            .iter()
            .filter(|(_, s)| !s.status.is_final())
            .map(|(name, s)| {
                let trial = TrialRef {
                    name: name.clone(),
                    location: s.location.clone(),
                };
                let session = self.sessions.remove(name);
                (trial, session)
            })
            .collect();
        // Sessions are kept between passes, so that a pass evaluates only new steps. With
        // more live trials than jobs, each lets go of its cached values and open files
        // once evaluated, so that no more than `jobs` trials hold them at any time.
        let release = live.len() > self.options.jobs.max(1);
        let fatal: Mutex<Option<FleetError>> = Mutex::new(None);
        let shared = Shared {
            options: &self.options,
            log: &self.log,
            recorded: &self.recorded,
            evaluated: &self.evaluated,
            release,
            outbox: self.webhook.as_ref().map(|_| &self.outbox),
        };
        let mut results = Vec::with_capacity(live.len());
        let advance = |_, (trial, session): (TrialRef, _)| {
            if stop.load(Ordering::Relaxed) {
                return (trial, Ok(Advance::Skipped(session)));
            }
            let r = shared.advance(&trial, session, on_event, &fatal);
            (trial, r)
        };
        let Ok(()) = for_each_owned(live, self.options.jobs, "smdebug-watch", advance, |_, r| {
            results.push(r);
            Ok::<(), std::convert::Infallible>(())
        });
        if let Some(e) = fatal.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        let log = lock(&self.log);
        for (trial, result) in results {
            let Some(st) = self.state.trials.get_mut(&trial.name) else {
                continue;
            };
            st.firings = log.count(&trial.name);
            match result {
                Ok(Advance::Skipped(session)) => {
                    if let Some(session) = session {
                        self.sessions.insert(trial.name.clone(), session);
                    }
                }
                Ok(Advance::Waiting) => st.failures = 0,
                Ok(Advance::Watched(session)) => {
                    st.status = TrialStatus::Watching;
                    st.failures = 0;
                    st.error = None;
                    st.next_step = session
                        .rules
                        .iter()
                        .map(|r| (r.label.clone(), r.next))
                        .collect();
                    self.sessions.insert(trial.name.clone(), session);
                }
                Ok(Advance::Ended(next_step)) => {
                    st.status = TrialStatus::Ended;
                    st.failures = 0;
                    st.error = None;
                    st.next_step = next_step;
                    on_event(&WatchEvent::Ended {
                        trial: &trial.name,
                        firings: st.firings,
                    });
                }
                Err(e) => {
                    let error = e.to_string();
                    st.failures += 1;
                    let broken = st.failures >= self.options.max_failures.max(1);
                    if broken {
                        st.status = TrialStatus::Broken;
                    }
                    on_event(&WatchEvent::Failed {
                        trial: &trial.name,
                        error: &error,
                        broken,
                    });
                    st.error = Some(error);
                }
            }
        }
        drop(log);
        self.summary.passes += 1;
        Ok(())
    }

    /// Saves the state (when there is a state file). Every firing the state counts is
    /// already recorded in the log.
    pub fn save(&mut self) -> Result<()> {
        self.state.log_bytes = lock(&self.log).bytes();
        match &self.options.state {
            Some(path) => self.state.save(path),
            None => Ok(()),
        }
    }

    /// Posts the firings waiting for the webhook, oldest first, saving the state after
    /// each one delivered (so that a restart posts none of them again); stops at the first
    /// one not delivered, which waits for the next pass with the ones after it. Without a
    /// webhook, nothing.
    pub fn deliver(&mut self, on_event: &(dyn Fn(&WatchEvent<'_>) + Sync)) -> Result<()> {
        let Some(webhook) = self.webhook.take() else {
            return Ok(());
        };
        let r = self.deliver_with(&webhook, on_event);
        self.webhook = Some(webhook);
        r
    }

    fn deliver_with(
        &mut self,
        webhook: &Webhook,
        on_event: &(dyn Fn(&WatchEvent<'_>) + Sync),
    ) -> Result<()> {
        loop {
            let Some(firing) = lock(&self.outbox).front().cloned() else {
                return Ok(());
            };
            match webhook.post(&firing) {
                Ok(()) => {
                    lock(&self.outbox).pop_front();
                    self.state.webhook_sent += 1;
                    on_event(&WatchEvent::Delivered(&firing));
                    self.save()?;
                }
                Err(e) => {
                    let pending = lock(&self.outbox).len();
                    on_event(&WatchEvent::WebhookFailed {
                        error: &e.to_string(),
                        pending,
                    });
                    return Ok(());
                }
            }
        }
    }

    /// Passes until `stop` is set, or with `until_idle` until every trial is done with;
    /// the state is saved after every pass. Once `stop` is set (a signal handler may set
    /// it), the pass in progress starts no further trial, the state is saved and the
    /// summary returned.
    pub fn run(
        &mut self,
        on_event: &(dyn Fn(&WatchEvent<'_>) + Sync),
        stop: &AtomicBool,
    ) -> Result<WatchSummary> {
        loop {
            self.pass_until(on_event, stop)?;
            self.save()?;
            self.deliver(on_event)?;
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if self.options.until_idle
                && self.idle()
                && self.last_found.elapsed() >= self.options.idle
            {
                break;
            }
            let until = Instant::now() + self.options.poll;
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(
                    until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(50)),
                );
            }
        }
        Ok(self.summary())
    }
}

/// What the worker threads of a pass share: the options, the log and the counts (not the
/// sessions, which hold rules that are not `Sync`).
struct Shared<'a> {
    options: &'a WatchOptions,
    log: &'a Mutex<FiringLog>,
    recorded: &'a AtomicU64,
    evaluated: &'a AtomicU64,
    /// Whether a trial lets go of its cached values and open files once evaluated.
    release: bool,
    /// Where recorded firings wait for the webhook, when there is one.
    outbox: Option<&'a Mutex<VecDeque<FiringRecord>>>,
}

impl Shared<'_> {
    /// Opens the trial (or takes its session) and evaluates every rule on the steps the
    /// job has completed; to the end when the job has ended.
    fn advance(
        &self,
        trial: &TrialRef,
        session: Option<Session>,
        on_event: &(dyn Fn(&WatchEvent<'_>) + Sync),
        fatal: &Mutex<Option<FleetError>>,
    ) -> std::result::Result<Advance, BoxError> {
        let mut session = match session {
            Some(s) => s,
            None => match self.open(trial) {
                Ok(Some(s)) => s,
                Ok(None) => return Ok(Advance::Waiting),
                Err(Opened::Trial(e)) => return Err(e),
                Err(Opened::Fatal(e)) => {
                    lock(fatal).get_or_insert(e);
                    return Ok(Advance::Waiting);
                }
            },
        };
        // The end marker is looked for before the index is read: when it is there, every
        // step is written and the rules may run to the end without waiting.
        let ended = session.trial.has_training_ended()?;
        session.trial.refresh_data()?;
        let end = (!ended).then(|| session.trial.last_complete_step() + 1);
        let base = Arc::clone(&session.trial);
        for run in session.rules.iter_mut().filter(|r| !r.done) {
            if end.is_some_and(|e| e <= run.next) {
                continue;
            }
            let label = run.label.clone();
            let actions: Vec<String> = run
                .rule
                .base()
                .actions()
                .iter()
                .map(|a| a.name().to_owned())
                .collect();
            let eval = evaluate_rule(&label, run.rule.as_mut(), run.next, end, &mut |f| {
                let (mode, mode_step) = mode_of_step(&base, f.step)
                    .map_or((None, None), |(m, s)| (Some(m.name().to_owned()), Some(s)));
                let record = FiringRecord {
                    trial: trial.name.clone(),
                    rule: label.clone(),
                    step: f.step,
                    mode,
                    mode_step,
                    tensor: f.tensor.clone(),
                    message: f.message.clone(),
                    actions: actions.clone(),
                };
                self.record(&record, on_event, fatal);
            })?;
            self.evaluated
                .fetch_add(eval.steps_evaluated, Ordering::Relaxed);
            run.next = eval.next_step;
            run.done = matches!(eval.end, EndReason::EndOfTraining(_) | EndReason::EndOfRule);
        }
        if lock(fatal).is_some() {
            return Ok(Advance::Waiting);
        }
        if ended && session.rules.iter().all(|r| r.done) {
            let next = session
                .rules
                .iter()
                .map(|r| (r.label.clone(), r.next))
                .collect();
            return Ok(Advance::Ended(next));
        }
        if self.release {
            session.trial.clear_cache();
        }
        Ok(Advance::Watched(session))
    }

    /// Records a firing once; tells the caller only about a firing recorded now.
    fn record(
        &self,
        record: &FiringRecord,
        on_event: &(dyn Fn(&WatchEvent<'_>) + Sync),
        fatal: &Mutex<Option<FleetError>>,
    ) {
        let mut log = lock(self.log);
        let recorded = log.record(record);
        if let (Ok(true), Some(outbox)) = (&recorded, self.outbox) {
            // Queued while the log is held: the outbox keeps the log's order.
            lock(outbox).push_back(record.clone());
        }
        drop(log);
        match recorded {
            Ok(true) => {
                self.recorded.fetch_add(1, Ordering::Relaxed);
                on_event(&WatchEvent::Fired(record));
            }
            Ok(false) => {}
            Err(e) => {
                lock(fatal).get_or_insert(e);
            }
        }
    }

    /// Opens a trial and builds its rules; `None` while its collections files are missing.
    fn open(&self, trial: &TrialRef) -> std::result::Result<Option<Session>, Opened> {
        let options = TrialOptions {
            name: Some(trial.name.clone()),
            collections_timeout: Some(Duration::ZERO),
            ..self.options.trial.clone()
        };
        let opened = match Trial::open(&trial.location, options) {
            Ok(t) => Arc::new(t),
            Err(TrialError::Timeout { .. }) => return Ok(None),
            Err(e) => return Err(Opened::Trial(e.into())),
        };
        let mut rules = Vec::with_capacity(self.options.rules.len());
        for spec in &self.options.rules {
            let fatal = |reason: String| {
                Opened::Fatal(FleetError::Rule {
                    rule: spec.label.clone(),
                    reason,
                })
            };
            let rule = match spec.build(Arc::clone(&opened)) {
                Ok(r) => r,
                // Building read the trial and failed: the trial's problem.
                Err(e @ RuleRunError::Failed { .. }) => return Err(Opened::Trial(e.into())),
                Err(RuleRunError::BadRule { error, .. }) => {
                    // The rule's errors name it already.
                    let text = error.to_string();
                    let prefix = format!("rule {}: ", spec.name);
                    let reason = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
                    return Err(fatal(reason));
                }
                Err(e) => return Err(fatal(e.to_string())),
            };
            if rule.drive() == Drive::WallClock {
                return Err(fatal(
                    "a wall-clock rule cannot be watched (it blocks until it fires); run it with `smdebug rules`".into(),
                ));
            }
            rules.push(RuleRun {
                label: spec.label.clone(),
                rule,
                next: 0,
                done: false,
            });
        }
        Ok(Some(Session {
            trial: opened,
            rules,
        }))
    }
}

/// Why a trial could not be opened for watching.
enum Opened {
    /// The trial's own problem: it fails, the others go on.
    Trial(BoxError),
    /// A problem of the rules asked for: the watcher stops.
    Fatal(FleetError),
}

/// A trial's error, whatever layer it came from (only shown, never matched on).
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
