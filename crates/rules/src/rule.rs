//! The `Rule` trait, the state every rule shares ([`RuleBase`]), required tensors, and the
//! invoker (`invoke`, `invoke_rule`), with smdebug's semantics (docs/src/semantics.md §11).

use crate::actions::Action;
use crate::error::{Result, RuleError};
use crate::firing::Firing;
use smdebug_config::Mode;
use smdebug_exceptions::AnalysisError;
use smdebug_trial::{TensorFilter, Trial};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Something a rule met at a step and set aside instead of judging it: input it cannot
/// read the way its condition needs (NaN activations are not dead units). A remark is not
/// a firing: no action runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Remark {
    /// The rule's name.
    pub rule: String,
    /// The global step.
    pub step: i64,
    /// The tensor concerned, when one is.
    pub tensor: Option<String>,
    /// What was set aside and why, in words.
    pub message: String,
}

impl Remark {
    /// One JSON object: `rule`, `step`, `tensor` (or null), `remark`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rule": self.rule,
            "step": self.step,
            "tensor": self.tensor,
            "remark": self.message,
        })
    }
}

/// How a rule is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// Step by step: the invoker waits for each global step and calls
    /// [`Rule::invoke_at_step`] (every built-in rule but one).
    Steps,
    /// By the clock: the invoker calls [`Rule::poll`] until it says the rule ended
    /// (StalledTrainingRule).
    WallClock,
}

/// What one [`Rule::poll`] of a wall-clock rule found.
#[derive(Debug, Clone, PartialEq)]
pub enum Poll {
    /// Nothing to report; poll again.
    Continue,
    /// The condition was met at this step (the rule has set its finding); evaluation ends.
    Fired(i64),
    /// The rule ended without firing (training finished).
    Ended,
}

/// The tensors a rule declared it needs at a step, per trial (`RequiredTensors`): the
/// invoker waits for their steps and reads their values before the rule runs.
#[derive(Debug, Default, Clone)]
pub struct RequiredTensors {
    per_trial: Vec<BTreeMap<String, Vec<i64>>>,
}

impl RequiredTensors {
    fn new(trials: usize) -> Self {
        RequiredTensors {
            per_trial: vec![BTreeMap::new(); trials],
        }
    }

    /// Names required from trial `trial` (0 = base), sorted.
    pub fn names(&self, trial: usize) -> Vec<&str> {
        self.per_trial
            .get(trial)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The steps required of `name` in trial `trial`.
    pub fn steps(&self, name: &str, trial: usize) -> &[i64] {
        self.per_trial
            .get(trial)
            .and_then(|m| m.get(name))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Forgets everything (done before each step).
    pub fn clear(&mut self) {
        for m in &mut self.per_trial {
            m.clear();
        }
    }
}

/// The state every rule has: its name, trials (base first), required tensors, actions, the
/// explanation of its last firing, and the remarks not yet handed out.
#[derive(Debug)]
pub struct RuleBase {
    name: String,
    trials: Vec<Arc<Trial>>,
    required: RequiredTensors,
    actions: Vec<Box<dyn Action>>,
    finding: Option<(Option<String>, String)>,
    remarks: Vec<Remark>,
}

impl RuleBase {
    /// A rule named `name` over `base` and `others`.
    pub fn new(name: impl Into<String>, base: Arc<Trial>, others: Vec<Arc<Trial>>) -> Self {
        let mut trials = vec![base];
        trials.extend(others);
        RuleBase {
            name: name.into(),
            required: RequiredTensors::new(trials.len()),
            trials,
            actions: Vec::new(),
            finding: None,
            remarks: Vec::new(),
        }
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The base trial.
    pub fn base_trial(&self) -> &Arc<Trial> {
        &self.trials[0]
    }

    /// The other trials.
    pub fn other_trials(&self) -> &[Arc<Trial>] {
        &self.trials[1..]
    }

    /// All trials, base first.
    pub fn trials(&self) -> &[Arc<Trial>] {
        &self.trials
    }

    /// The actions run when the rule fires.
    pub fn actions(&self) -> &[Box<dyn Action>] {
        &self.actions
    }

    /// Adds an action run when the rule fires.
    pub fn add_action(&mut self, action: Box<dyn Action>) {
        self.actions.push(action);
    }

    /// The required tensors declared for the current step.
    pub fn required(&self) -> &RequiredTensors {
        &self.required
    }

    /// `req_tensors.add(name, steps, trial, should_match_regex)`: requires `name` at
    /// `steps` from trial `trial` (0 = base). With `should_match_regex`, every tensor whose
    /// name `name` matches (`re.search`) is required; otherwise the tensor must exist
    /// (`TensorUnavailable`).
    pub fn require(
        &mut self,
        name: &str,
        steps: &[i64],
        trial: usize,
        should_match_regex: bool,
    ) -> Result<()> {
        let t = self
            .trials
            .get(trial)
            .ok_or_else(|| RuleError::InvalidConfiguration {
                rule: self.name.clone(),
                message: format!("required tensors of trial {trial}, which the rule does not have"),
            })?;
        let names = if should_match_regex {
            t.tensor_names_filtered(&TensorFilter {
                regex: Some(vec![name.to_owned()]),
                ..TensorFilter::default()
            })?
        } else {
            if !t.has_tensor(name)? {
                return Err(AnalysisError::TensorUnavailable {
                    tensor: name.to_owned(),
                }
                .into());
            }
            vec![name.to_owned()]
        };
        for n in names {
            self.required.per_trial[trial]
                .entry(n)
                .or_default()
                .extend_from_slice(steps);
        }
        Ok(())
    }

    /// `req_tensors.fetch()`: waits for the union of required steps of each trial, then
    /// reads every required value (into the trial's cache).
    fn fetch_required(&self) -> Result<()> {
        for (t, req) in self.trials.iter().zip(&self.required.per_trial) {
            let mut steps: Vec<i64> = req.values().flatten().copied().collect();
            steps.sort_unstable();
            steps.dedup();
            if steps.is_empty() {
                continue;
            }
            t.wait_for_steps(&steps, Mode::Global)?;
            for (name, steps) in req {
                let tensor = t.tensor(name)?;
                for &s in steps {
                    tensor.value(s, Mode::Global, None)?;
                }
            }
        }
        Ok(())
    }

    /// Records why the rule is about to fire (shown by [`Firing`]).
    pub fn note(&mut self, tensor: Option<&str>, message: impl Into<String>) {
        self.finding = Some((tensor.map(str::to_owned), message.into()));
    }

    /// Records a [`Remark`] at `step`: input the rule set aside instead of judging.
    pub fn remark(&mut self, step: i64, tensor: Option<&str>, message: impl Into<String>) {
        let remark = Remark {
            rule: self.name.clone(),
            step,
            tensor: tensor.map(str::to_owned),
            message: message.into(),
        };
        tracing::info!("rule {} at step {step}: {}", remark.rule, remark.message);
        self.remarks.push(remark);
    }

    /// The remarks recorded since the last call ([`invoke_rule`] collects them into
    /// [`Evaluation::remarks`]).
    pub fn take_remarks(&mut self) -> Vec<Remark> {
        std::mem::take(&mut self.remarks)
    }

    fn take_firing(&mut self, step: i64) -> Firing {
        let (tensor, message) = self
            .finding
            .take()
            .unwrap_or((None, "the rule's condition was met".to_owned()));
        Firing {
            rule: self.name.clone(),
            step,
            tensor,
            message,
            trial: self.trials[0].name().to_owned(),
        }
    }
}

/// A rule: a condition evaluated step by step over a base trial (and optionally others).
///
/// Implementors keep a [`RuleBase`] and return it from [`Rule::base`]/[`Rule::base_mut`];
/// [`invoke`] and [`invoke_rule`] do the waiting, the refresh control and the actions.
/// Rule objects keep state between invocations, also across separate `invoke_rule` calls.
pub trait Rule: Send + std::fmt::Debug {
    /// The shared state.
    fn base(&self) -> &RuleBase;
    /// The shared state, mutably.
    fn base_mut(&mut self) -> &mut RuleBase;

    /// Declares the tensors needed at `step` with [`RuleBase::require`] (default: none).
    fn set_required_tensors(&mut self, step: i64) -> Result<()> {
        let _ = step;
        Ok(())
    }

    /// Evaluates the condition at global step `step`; `true` means the rule fires. Called
    /// with refreshing switched off on every trial, after the step (and the required
    /// tensors) became available. A rule that fires should call [`RuleBase::note`] first.
    fn invoke_at_step(&mut self, step: i64) -> Result<bool>;

    /// How the rule is driven (default: step by step).
    fn drive(&self) -> Drive {
        Drive::Steps
    }

    /// For [`Drive::WallClock`] rules: waits at most one poll period and reports. The
    /// default (for step-driven rules) ends at once.
    fn poll(&mut self) -> Result<Poll> {
        Ok(Poll::Ended)
    }
}

struct RefreshOff<'a>(&'a [Arc<Trial>]);

impl Drop for RefreshOff<'_> {
    fn drop(&mut self) {
        // smdebug's `no_refresh` switches refreshing back on afterwards, whatever it was.
        for t in self.0 {
            t.set_dynamic_refresh(true);
        }
    }
}

/// `Rule.invoke(step)`: waits for global step `step` in the base trial (may fail with
/// `StepUnavailable` or `NoMoreData`; blocks while it is not yet available), then with
/// refreshing off on all trials declares and fetches the required tensors and evaluates the
/// rule. If it fires, runs the actions and returns [`RuleError::ConditionMet`].
pub fn invoke(rule: &mut dyn Rule, step: i64) -> Result<()> {
    rule.base()
        .base_trial()
        .wait_for_steps(&[step], Mode::Global)?;
    let trials: Vec<Arc<Trial>> = rule.base().trials().to_vec();
    let fired = {
        for t in &trials {
            t.set_dynamic_refresh(false);
        }
        let _restore = RefreshOff(&trials);
        rule.base_mut().required.clear();
        rule.base_mut().finding = None;
        rule.set_required_tensors(step)?;
        rule.base().fetch_required()?;
        rule.invoke_at_step(step)?
    };
    if fired {
        return Err(fire(rule, step, false));
    }
    Ok(())
}

fn fire(rule: &mut dyn Rule, step: i64, end_of_rule: bool) -> RuleError {
    let firing = rule.base_mut().take_firing(step);
    for action in rule.base().actions() {
        if let Err(e) = action.invoke(&firing, rule.base().trials()) {
            return e;
        }
    }
    RuleError::ConditionMet {
        condition: AnalysisError::RuleEvaluationConditionMet {
            rule: firing.rule.clone(),
            step,
            end_of_rule,
        },
        firing: Box::new(firing),
    }
}

/// Why [`invoke_rule`] stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum EndReason {
    /// `end_step` was reached.
    EndStep,
    /// The rule asked to end evaluation (`end_of_rule`; wall-clock rules after firing).
    EndOfRule,
    /// Training ended and the next step does not exist (`NoMoreData`; the original
    /// propagates that exception to the caller).
    EndOfTraining(AnalysisError),
}

/// What [`invoke_rule`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Every firing, in step order.
    pub firings: Vec<Firing>,
    /// Steps at which the rule body ran.
    pub steps_evaluated: u64,
    /// Steps skipped because they (or a tensor the rule required) were not available.
    pub steps_skipped: u64,
    /// What the rule set aside instead of judging, in step order.
    pub remarks: Vec<Remark>,
    /// The step the loop stopped at (the first step not evaluated).
    pub next_step: i64,
    /// Why it stopped.
    pub end: EndReason,
}

/// `invoke_rule(rule, start_step, end_step, raise_eval_cond)`: evaluates `rule` at every
/// global step from `start_step` until `end_step` (exclusive) or, with `end_step = None`,
/// until the end of training.
///
/// As in smdebug: unavailable steps and tensors (`StepUnavailable`,
/// `TensorUnavailableForStep`, `TensorUnavailable`) are skipped; the loop blocks on a step
/// that is not written yet; with `raise_eval_cond` the first firing is returned as
/// [`RuleError::ConditionMet`], otherwise every firing is collected and the loop goes on.
/// Difference: where the original lets `NoMoreData` escape, this returns normally with
/// [`EndReason::EndOfTraining`] (and the firings so far).
pub fn invoke_rule(
    rule: &mut dyn Rule,
    start_step: i64,
    end_step: Option<i64>,
    raise_eval_cond: bool,
) -> Result<Evaluation> {
    invoke_rule_with(rule, start_step, end_step, raise_eval_cond, &mut |_| {})
}

/// [`invoke_rule`] calling `on_firing` as each firing happens (for live output).
pub fn invoke_rule_with(
    rule: &mut dyn Rule,
    start_step: i64,
    end_step: Option<i64>,
    raise_eval_cond: bool,
    on_firing: &mut dyn FnMut(&Firing),
) -> Result<Evaluation> {
    let mut eval = Evaluation {
        firings: Vec::new(),
        steps_evaluated: 0,
        steps_skipped: 0,
        remarks: Vec::new(),
        next_step: start_step,
        end: EndReason::EndStep,
    };
    if rule.drive() == Drive::WallClock {
        loop {
            match rule.poll()? {
                Poll::Continue => continue,
                Poll::Ended => {
                    eval.end = EndReason::EndOfRule;
                    return Ok(eval);
                }
                Poll::Fired(step) => {
                    let err = fire(rule, step, true);
                    let RuleError::ConditionMet { firing, .. } = &err else {
                        return Err(err);
                    };
                    on_firing(firing);
                    if raise_eval_cond {
                        return Err(err);
                    }
                    eval.firings.push((**firing).clone());
                    eval.end = EndReason::EndOfRule;
                    return Ok(eval);
                }
            }
        }
    }
    let mut step = start_step;
    while end_step.is_none_or(|e| step < e) {
        eval.next_step = step;
        let result = invoke(rule, step);
        eval.remarks.extend(rule.base_mut().take_remarks());
        match result {
            Ok(()) => eval.steps_evaluated += 1,
            Err(e) => match e.analysis() {
                Some(
                    AnalysisError::TensorUnavailableForStep { .. }
                    | AnalysisError::StepUnavailable { .. }
                    | AnalysisError::TensorUnavailable { .. },
                ) => {
                    tracing::debug!("rule {}: {e}", rule.base().name());
                    eval.steps_skipped += 1;
                }
                Some(AnalysisError::RuleEvaluationConditionMet { end_of_rule, .. }) => {
                    let end_of_rule = *end_of_rule;
                    eval.steps_evaluated += 1;
                    if let Some(f) = e.firing() {
                        on_firing(f);
                    }
                    if raise_eval_cond {
                        return Err(e);
                    }
                    if let Some(f) = e.firing() {
                        eval.firings.push(f.clone());
                    }
                    if end_of_rule {
                        eval.end = EndReason::EndOfRule;
                        eval.next_step = step + 1;
                        return Ok(eval);
                    }
                }
                Some(AnalysisError::NoMoreData { .. }) => {
                    let Some(a) = e.analysis().cloned() else {
                        return Err(e);
                    };
                    eval.end = EndReason::EndOfTraining(a);
                    return Ok(eval);
                }
                _ => return Err(e),
            },
        }
        step += 1;
    }
    eval.next_step = step;
    Ok(eval)
}

/// A source of time for wall-clock rules, injectable in tests.
pub trait Clock: Send + std::fmt::Debug {
    /// Time since an arbitrary origin.
    fn now(&self) -> Duration;
    /// Waits `d`.
    fn sleep(&self, d: Duration);
}

/// The real clock.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin: std::time::Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}
