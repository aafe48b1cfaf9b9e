//! Running rules over one trial, one reader and one thread each: the one loop behind
//! `smdebug rules`, the HTML report's verdicts and the watch service's rules, so that they
//! build rules, name their errors and survive a panicking rule alike.

use smdebug_config::Mode;
use smdebug_rules::{
    build_rule, invoke_rule_with, EndReason, Evaluation, Firing, Rule, RuleError, StopTraining,
};
use smdebug_trial::{Trial, TrialError, TrialOptions};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One rule to run: what it is reported as, which built-in rule, its parameters and actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    /// The label firings are reported under (a configuration name, or the rule's name).
    pub label: String,
    /// The built-in rule's name (`VanishingGradient`).
    pub name: String,
    /// Its parameters, as strings (`action_json` adds actions, as in SageMaker).
    pub params: BTreeMap<String, String>,
    /// Whether a firing writes the stop-training signal into the trial.
    pub stop_training: bool,
}

impl RuleSpec {
    /// The built-in rule `name` under its own name, with its default parameters.
    pub fn new(name: &str) -> Self {
        RuleSpec {
            label: name.to_owned(),
            name: name.to_owned(),
            params: BTreeMap::new(),
            stop_training: false,
        }
    }

    /// Builds the rule over `trial`, with the stop-training action when asked.
    ///
    /// A rule that cannot be built because of the trial (reading it failed) is
    /// [`RuleRunError::Failed`]; one that is wrong whatever the trial is
    /// [`RuleRunError::BadRule`].
    pub fn build(&self, trial: Arc<Trial>) -> Result<Box<dyn Rule>, RuleRunError> {
        let spec = self;
        let mut rule = build_rule(&spec.name, &spec.params, trial).map_err(|e| match e {
            RuleError::Trial(_) | RuleError::Analysis(_) => RuleRunError::Failed {
                label: spec.label.clone(),
                error: Box::new(e),
            },
            other => RuleRunError::BadRule {
                label: spec.label.clone(),
                error: Box::new(other),
            },
        })?;
        if spec.stop_training {
            let stop = StopTraining::with_default_key().map_err(|error| RuleRunError::BadRule {
                label: spec.label.clone(),
                error: Box::new(error),
            })?;
            rule.base_mut().add_action(Box::new(stop));
        }
        Ok(rule)
    }
}

/// Why a rule gave no verdict on a trial.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleRunError {
    /// The trial could not be opened (for this rule's reader).
    #[error("opening trial {location}: {error}")]
    Open {
        /// The trial's location.
        location: String,
        /// What the reader said.
        error: Box<TrialError>,
    },
    /// The rule cannot run as asked, whatever the trial: an unknown rule or parameter, a
    /// value that does not parse, an action that cannot be set up. Over a fleet this is
    /// the command's error rather than every trial's.
    #[error("{error}")]
    BadRule {
        /// The rule's label.
        label: String,
        /// What building it said (it names the rule).
        error: Box<RuleError>,
    },
    /// Building or evaluating the rule failed on this trial (a read error, a condition the
    /// rule does not skip).
    #[error("rule {label}: {error}")]
    Failed {
        /// The rule's label.
        label: String,
        /// The rule's error.
        error: Box<RuleError>,
    },
    /// The rule's thread panicked; the other rules' verdicts stand.
    #[error("rule {label}: the rule's thread panicked")]
    Panicked {
        /// The rule's label.
        label: String,
    },
}

impl RuleRunError {
    /// The label of the rule that failed; `None` when the trial could not be opened.
    pub fn label(&self) -> Option<&str> {
        match self {
            RuleRunError::Open { .. } => None,
            RuleRunError::BadRule { label, .. }
            | RuleRunError::Failed { label, .. }
            | RuleRunError::Panicked { label } => Some(label),
        }
    }

    /// Whether the rule is wrong whatever the trial ([`RuleRunError::BadRule`]).
    pub fn is_bad_rule(&self) -> bool {
        matches!(self, RuleRunError::BadRule { .. })
    }
}

/// [`invoke_rule_with`] from `start` to before `end` (the end of training when `None`),
/// collecting every firing and calling `on_firing` as each happens; the error names the
/// rule by `label`.
pub fn evaluate_rule(
    label: &str,
    rule: &mut dyn Rule,
    start: i64,
    end: Option<i64>,
    on_firing: &mut dyn FnMut(&Firing),
) -> Result<Evaluation, RuleRunError> {
    invoke_rule_with(rule, start, end, false, on_firing).map_err(|error| RuleRunError::Failed {
        label: label.to_owned(),
        error: Box::new(error),
    })
}

/// The mode and mode step of global step `step` in `trial`, without refreshing it: what a
/// firing is reported with. `None` when the trial does not know the step.
pub fn mode_of_step(trial: &Trial, step: i64) -> Option<(Mode, i64)> {
    trial.no_refresh(|t| t.mode_modestep(step)).ok().flatten()
}

/// How the rules of one trial are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Concurrently, each on its own thread and its own reader of the trial (rules switch
    /// refreshing on and off around their evaluation, which must not interfere between
    /// threads): a live trial's firings of every rule arrive as the job writes its steps.
    Concurrent,
    /// One after the other on the calling thread, over one reader of the trial: a fleet
    /// runs trials in parallel already.
    OneByOne,
}

/// What one rule gave on a trial.
#[derive(Debug)]
pub struct RuleOutcome {
    /// The rule's label.
    pub label: String,
    /// Its evaluation: every firing, the steps evaluated and skipped, its remarks and why
    /// it stopped.
    pub evaluation: Evaluation,
    /// The mode and mode step of the first firing's step (for tables of verdicts).
    pub first_mode: Option<(Mode, i64)>,
}

impl RuleOutcome {
    /// The first and last step the rule fired at.
    pub fn span(&self) -> Option<(i64, i64)> {
        let steps = self.evaluation.firings.iter().map(|f| f.step);
        steps.clone().min().zip(steps.max())
    }

    /// Why the rule stopped, in words: `end step N`, `rule ended` or `end of training`.
    pub fn end(&self) -> String {
        match self.evaluation.end {
            EndReason::EndStep => format!("end step {}", self.evaluation.next_step),
            EndReason::EndOfRule => "rule ended".into(),
            EndReason::EndOfTraining(_) => "end of training".into(),
        }
    }
}

/// A rule built over its reader, or why it could not be.
type Built = Result<Box<dyn Rule>, RuleRunError>;

/// The rules of one trial, built over their readers and ready to run.
///
/// ```
/// use smdebug_fleet::{RuleSpec, Schedule, TrialRules};
/// use smdebug_synth::{write_trial, Recipe, WriteOptions};
///
/// let dir = tempfile::tempdir()?;
/// let recipe = Recipe::from_json(
///     r#"{"seed": 1, "schedule": [{"mode": "TRAIN", "steps": 3}],
///         "collections": [{"name": "all", "include_regex": [".*"]}],
///         "tensors": [{"name": "gradients/w", "shape": [4]}]}"#,
///     "doc",
/// )?;
/// let path = dir.path().to_str().unwrap();
/// write_trial(&recipe, path, WriteOptions::default())?;
/// let specs = [RuleSpec::new("VanishingGradient"), RuleSpec::new("NoSuchRule")];
/// let rules = TrialRules::open(path, &specs, &Default::default(), 0, None, Schedule::Concurrent)?;
/// assert!(rules.first_error().is_some_and(|e| e.is_bad_rule()));
/// let outcomes = rules.run(&|_, _| {});
/// assert_eq!(outcomes[0].as_ref().unwrap().label, "VanishingGradient");
/// assert!(outcomes[1].is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TrialRules {
    /// Per spec, its label and its rule (or why it could not be built).
    rules: Vec<(String, Built)>,
    start: i64,
    end: Option<i64>,
    schedule: Schedule,
}

impl TrialRules {
    /// Opens the trial at `location` (one reader per rule under
    /// [`Schedule::Concurrent`], one for all under [`Schedule::OneByOne`]) and builds every
    /// rule of `specs` over it, to run from global step `start` to before `end`.
    ///
    /// When `options` loads the last steps or a step range, the first reader resolves it
    /// and the others load the same steps; `start` and `end` are narrowed to the steps
    /// loaded. `Err` only when the first reader cannot be opened; a rule that cannot be
    /// built (or whose own reader cannot be opened) gives its error in [`run`](Self::run)'s
    /// result, and [`first_error`](Self::first_error) tells before anything runs.
    pub fn open(
        location: &str,
        specs: &[RuleSpec],
        options: &TrialOptions,
        start: i64,
        end: Option<i64>,
        schedule: Schedule,
    ) -> Result<TrialRules, RuleRunError> {
        let mut options = options.clone();
        let open = |options: &TrialOptions| {
            Trial::open(location, options.clone())
                .map(Arc::new)
                .map_err(|error| RuleRunError::Open {
                    location: location.to_owned(),
                    error: Box::new(error),
                })
        };
        let first = open(&options)?;
        let (mut start, mut end) = (start, end);
        if options.last_steps.is_some() || options.range_steps.is_some() {
            let (begin, last) = first.step_range();
            options.range_steps = Some((begin, last));
            options.last_steps = None;
            start = start.max(begin.unwrap_or(start));
            end = match (end, last) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let rules = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let trial = if i == 0 || schedule == Schedule::OneByOne {
                    Ok(Arc::clone(&first))
                } else {
                    open(&options)
                };
                (spec.label.clone(), trial.and_then(|t| spec.build(t)))
            })
            .collect();
        Ok(TrialRules {
            rules,
            start,
            end,
            schedule,
        })
    }

    /// The first global step evaluated.
    pub fn start_step(&self) -> i64 {
        self.start
    }

    /// The global step evaluation stops before (`None`: the end of training).
    pub fn end_step(&self) -> Option<i64> {
        self.end
    }

    /// The first rule, in the order of the specs, that could not be built.
    pub fn first_error(&self) -> Option<&RuleRunError> {
        self.rules.iter().find_map(|(_, r)| r.as_ref().err())
    }

    /// Itself when every rule was built; otherwise the first error, in the order of the
    /// specs, and nothing runs: for callers that run all the rules or none.
    pub fn check(mut self) -> Result<TrialRules, RuleRunError> {
        let failed = self.rules.iter().position(|(_, r)| r.is_err());
        if let Some(Err(e)) = failed.map(|i| self.rules.swap_remove(i).1) {
            return Err(e);
        }
        Ok(self)
    }

    /// Runs every rule that was built (see [`Schedule`]), calling
    /// `on_firing(firing, first_of_its_rule)` as firings happen (from the rules' threads);
    /// one result per spec, in their order. A rule whose thread panics is
    /// [`RuleRunError::Panicked`]; the others run to their end.
    pub fn run(
        self,
        on_firing: &(dyn Fn(&Firing, bool) + Sync),
    ) -> Vec<Result<RuleOutcome, RuleRunError>> {
        let (start, end) = (self.start, self.end);
        let one = |label: String, rule: Built| {
            let mut rule = rule?;
            let mut seen = 0usize;
            let evaluation = evaluate_rule(&label, rule.as_mut(), start, end, &mut |f| {
                seen += 1;
                on_firing(f, seen == 1);
            })?;
            let first_mode = evaluation
                .firings
                .first()
                .and_then(|f| mode_of_step(rule.base().base_trial(), f.step));
            Ok(RuleOutcome {
                label,
                evaluation,
                first_mode,
            })
        };
        if self.schedule == Schedule::OneByOne {
            return self.rules.into_iter().map(|(l, r)| one(l, r)).collect();
        }
        std::thread::scope(|scope| {
            let one = &one;
            let handles: Vec<_> = self
                .rules
                .into_iter()
                .map(|(label, rule)| (label.clone(), scope.spawn(move || one(label, rule))))
                .collect();
            handles
                .into_iter()
                .map(|(label, handle)| {
                    handle
                        .join()
                        .unwrap_or(Err(RuleRunError::Panicked { label }))
                })
                .collect()
        })
    }
}
