//! StalledTrainingRule: a wall-clock rule.

use crate::actions::StopTraining;
use crate::error::Result;
use crate::rule::{Clock, Drive, Poll, Rule, RuleBase, SystemClock};
use smdebug_config::Mode;
use smdebug_trial::Trial;
use std::sync::Arc;
use std::time::Duration;

rule_params! {
    /// Parameters of [`StalledTrainingRule`].
    StalledTrainingRuleConfig for "StalledTrainingRule" {
        threshold: i64 = "1800" => "seconds without a new saved step before the rule fires",
        stop_training_on_fire: bool = "False"
            => "stop the training job when firing (here: write the stop signal)",
        training_job_name_prefix: Option<String>
            => "the training job's name prefix (SageMaker; not needed by the stop signal)",
    }
    check |p, c| {
        if c.threshold <= 0 {
            return Err(p.config_error("threshold must be a positive number of seconds"));
        }
    }
}

/// StalledTrainingRule (docs/src/rules.md §12): driven by the clock, not by steps. It polls the
/// trial every `min(60 s, threshold / 10)`; whenever the set of saved steps grows, progress
/// is noted. If the end-of-training marker appears it ends without firing; if no new step
/// was seen for more than `threshold` seconds it fires once (reporting the last step seen,
/// or 0), runs its actions (with `stop_training_on_fire`, the stop signal) and ends.
/// The clock is injectable ([`StalledTrainingRule::with_clock`]) for tests.
#[derive(Debug)]
pub struct StalledTrainingRule {
    base: RuleBase,
    config: StalledTrainingRuleConfig,
    clock: Box<dyn Clock>,
    started: bool,
    last_progress: Duration,
    steps_seen: usize,
    last_step: Option<i64>,
}

impl StalledTrainingRule {
    /// The rule over `trial` with the system clock.
    pub fn new(trial: Arc<Trial>, config: StalledTrainingRuleConfig) -> Result<Self> {
        Self::with_clock(trial, config, Box::new(SystemClock::default()))
    }

    /// The rule with an injected clock.
    pub fn with_clock(
        trial: Arc<Trial>,
        config: StalledTrainingRuleConfig,
        clock: Box<dyn Clock>,
    ) -> Result<Self> {
        let mut base = RuleBase::new("StalledTrainingRule", trial, Vec::new());
        if config.stop_training_on_fire {
            base.add_action(Box::new(StopTraining::with_default_key()?));
        }
        Ok(StalledTrainingRule {
            base,
            config,
            clock,
            started: false,
            last_progress: Duration::ZERO,
            steps_seen: 0,
            last_step: None,
        })
    }

    /// The pause between two polls.
    pub fn poll_period(&self) -> Duration {
        let tenth = Duration::from_secs(self.config.threshold.max(1) as u64) / 10;
        tenth.clamp(Duration::from_millis(1), Duration::from_secs(60))
    }

    fn observe(&mut self) -> Result<()> {
        let steps = self.base.base_trial().steps(Mode::Global, true)?;
        if steps.len() > self.steps_seen {
            self.steps_seen = steps.len();
            self.last_step = steps.last().copied();
            self.last_progress = self.clock.now();
        }
        Ok(())
    }
}

impl Rule for StalledTrainingRule {
    fn base(&self) -> &RuleBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut RuleBase {
        &mut self.base
    }

    fn invoke_at_step(&mut self, _step: i64) -> Result<bool> {
        // Driven by `poll`; a step-wise call cannot tell anything about wall-clock stalls.
        Ok(false)
    }

    fn drive(&self) -> Drive {
        Drive::WallClock
    }

    fn poll(&mut self) -> Result<Poll> {
        if !self.started {
            self.started = true;
            self.last_progress = self.clock.now();
            self.observe()?;
            return Ok(Poll::Continue);
        }
        self.clock.sleep(self.poll_period());
        let trial = self.base.base_trial().clone();
        trial.set_dynamic_refresh(true);
        self.observe()?;
        if trial.has_training_ended()? {
            return Ok(Poll::Ended);
        }
        let idle = self.clock.now().saturating_sub(self.last_progress);
        if idle > Duration::from_secs(self.config.threshold as u64) {
            let step = self.last_step.unwrap_or(0);
            self.base.note(
                None,
                format!(
                    "no new step for {:.0} s (threshold {} s); last step {}",
                    idle.as_secs_f64(),
                    self.config.threshold,
                    self.last_step.map_or("none".to_owned(), |s| s.to_string())
                ),
            );
            return Ok(Poll::Fired(step));
        }
        Ok(Poll::Continue)
    }
}
