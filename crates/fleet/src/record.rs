//! One rule firing as the watcher records it.

use serde::{Deserialize, Serialize};

/// A firing of one rule on one trial of a fleet: a line of the watcher's firing log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FiringRecord {
    /// The trial's fleet name ([`crate::TrialRef::name`]).
    pub trial: String,
    /// The rule's label (its configuration name, or its name).
    pub rule: String,
    /// The global step it fired at.
    pub step: i64,
    /// The mode of that step (`TRAIN`, `EVAL`, …), when the trial knows it.
    pub mode: Option<String>,
    /// The step within that mode.
    pub mode_step: Option<i64>,
    /// The tensor that met the condition, when one did.
    pub tensor: Option<String>,
    /// Why, in words.
    pub message: String,
    /// The actions the rule took (`stoptraining`, …), by name.
    pub actions: Vec<String>,
}

/// What makes a firing the same firing: a rule fires at most once per step of a trial.
pub type FiringKey = (String, String, i64);

impl FiringRecord {
    /// Its identity in the log.
    pub fn key(&self) -> FiringKey {
        (self.trial.clone(), self.rule.clone(), self.step)
    }

    /// One log line (JSON, no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Only strings and integers: serialisation cannot fail; keep the line valid anyway.
            serde_json::json!({"trial": self.trial, "error": e.to_string()}).to_string()
        })
    }

    /// `trial: rule fired at step S (MODE step M) on TENSOR: message`, the watcher's line.
    pub fn describe(&self) -> String {
        let mut s = format!("{}: {} fired at step {}", self.trial, self.rule, self.step);
        if let (Some(mode), Some(m)) = (&self.mode, self.mode_step) {
            s.push_str(&format!(" ({mode} step {m})"));
        }
        if let Some(t) = &self.tensor {
            s.push_str(&format!(" on {t}"));
        }
        s.push_str(": ");
        s.push_str(&self.message);
        if !self.actions.is_empty() {
            s.push_str(&format!(" [actions: {}]", self.actions.join(", ")));
        }
        s
    }
}
