//! What happens when a rule fires: messages and the stop-training signal
//! (docs/src/semantics.md §11.4).
//!
//! The stop signal is an object under the base trial (by default `stop_training.smd`, or
//! the name in `SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE`; both resolved by
//! `smdebug_index::stop_signal_key`), written through `smdebug-storage`, so it works across
//! processes and on object storage; `smdebug-hook`'s `Hook::should_stop()` looks for the same
//! key.

use crate::error::{Result, RuleError};
use crate::firing::Firing;
use smdebug_index::RULE_STOP_SIGNAL_ENV;
use smdebug_storage::{BlockingStore, Bytes};
use smdebug_trial::Trial;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Something done when a rule fires.
pub trait Action: Send + Sync + std::fmt::Debug {
    /// A short name (`stoptraining`, `message`, …).
    fn name(&self) -> &str;
    /// Acts on a firing; `trials` are the rule's trials, base first.
    fn invoke(&self, firing: &Firing, trials: &[Arc<Trial>]) -> Result<()>;
}

/// The key of the stop signal: `name`, else `SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE`, else
/// [`smdebug_index::DEFAULT_STOP_SIGNAL_FILE`] (checked to stay inside the trial), resolved by
/// [`smdebug_index::stop_signal_key`] as the hook resolves the key it watches.
pub fn stop_signal_key(name: Option<&str>) -> Result<String> {
    let env = std::env::var(RULE_STOP_SIGNAL_ENV).ok();
    smdebug_index::stop_signal_key(name, env.as_deref()).map_err(|e| RuleError::Action {
        rule: String::new(),
        action: "stoptraining".into(),
        message: e.to_string(),
    })
}

/// Stops training by writing the stop-signal object into the base trial; the hook of the
/// training job sees it at its next `should_stop()` check. The object holds the firing as
/// JSON (the hook only checks that it exists).
#[derive(Debug)]
pub struct StopTraining {
    key: String,
    store: Mutex<Option<BlockingStore>>,
}

impl StopTraining {
    /// A stop action writing `key` (see [`stop_signal_key`]).
    pub fn new(key: String) -> Self {
        StopTraining {
            key,
            store: Mutex::new(None),
        }
    }

    /// With the default key.
    pub fn with_default_key() -> Result<Self> {
        Ok(Self::new(stop_signal_key(None)?))
    }

    /// The key written, relative to the trial.
    pub fn key(&self) -> &str {
        &self.key
    }
}

impl Action for StopTraining {
    fn name(&self) -> &str {
        "stoptraining"
    }

    fn invoke(&self, firing: &Firing, trials: &[Arc<Trial>]) -> Result<()> {
        let err = |message: String| RuleError::Action {
            rule: firing.rule.clone(),
            action: "stoptraining".into(),
            message,
        };
        let trial = trials
            .first()
            .ok_or_else(|| err("the rule has no trial".into()))?;
        let mut slot = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(
                BlockingStore::new(trial.storage().clone())
                    .map_err(|e| err(format!("{}: {e}", trial.path())))?,
            );
        }
        let Some(store) = slot.as_ref() else {
            return Err(err("no store".into()));
        };
        let body = firing.to_json().to_string();
        store
            .put(&self.key, Bytes::from(body.into_bytes()))
            .map_err(|e| err(format!("writing {} in {}: {e}", self.key, trial.path())))?;
        tracing::info!(
            "rule {} fired at step {}: wrote the stop signal {} in {}",
            firing.rule,
            firing.step,
            self.key,
            trial.path()
        );
        Ok(())
    }
}

/// How [`Message`] reports a firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFormat {
    /// `SMDebugRule:{rule} fired at step {step}: {message}` (the original's message text,
    /// with the step and the reason).
    Text,
    /// One JSON object per line ([`Firing::to_json`]).
    Json,
}

/// Writes a line per firing to a writer (stdout, a file, a buffer).
pub struct Message {
    format: MessageFormat,
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Message {
    /// Lines in `format` to `out`.
    pub fn new(format: MessageFormat, out: Box<dyn Write + Send>) -> Self {
        Message {
            format,
            out: Mutex::new(out),
        }
    }

    /// The line written for a firing.
    pub fn line(format: MessageFormat, firing: &Firing) -> String {
        match format {
            MessageFormat::Json => firing.to_json().to_string(),
            MessageFormat::Text => format!(
                "SMDebugRule:{} fired at step {}{}: {}",
                firing.rule,
                firing.step,
                firing
                    .tensor
                    .as_deref()
                    .map(|t| format!(" (tensor {t})"))
                    .unwrap_or_default(),
                firing.message
            ),
        }
    }
}

impl Action for Message {
    fn name(&self) -> &str {
        "message"
    }

    fn invoke(&self, firing: &Firing, _trials: &[Arc<Trial>]) -> Result<()> {
        let line = Message::line(self.format, firing);
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .map_err(|e| RuleError::Action {
                rule: firing.rule.clone(),
                action: "message".into(),
                message: e.to_string(),
            })
    }
}

/// An `sms`/`email` action of the original (Amazon SNS). Parsed and kept, but this port
/// does not talk to SNS: on firing it logs the message it would have published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    /// `sms` or `email`.
    pub protocol: String,
    /// The phone number or address (lower-cased, as the original lower-cases the string).
    pub endpoint: String,
    /// The SNS topic the original uses.
    pub topic: String,
}

impl Action for Notify {
    fn name(&self) -> &str {
        &self.protocol
    }

    fn invoke(&self, firing: &Firing, _trials: &[Arc<Trial>]) -> Result<()> {
        tracing::warn!(
            "SMDebugRule:{} fired. {} (not sent: {} to {} via SNS topic {} is not supported by smdebug-rs)",
            firing.rule,
            firing.message,
            self.protocol,
            self.endpoint,
            self.topic
        );
        Ok(())
    }
}

/// One action parsed from an action string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionConfig {
    /// `{"name": "stoptraining", "training_job_prefix": P}`: here, writes the stop signal.
    StopTraining {
        /// The training-job prefix (kept for reference; the stop signal needs none).
        training_job_prefix: String,
    },
    /// `{"name": "sms"|"email", "endpoint": E}`.
    Notify(Notify),
}

impl ActionConfig {
    /// The action object.
    pub fn build(&self) -> Result<Box<dyn Action>> {
        Ok(match self {
            ActionConfig::StopTraining { .. } => Box::new(StopTraining::with_default_key()?),
            ActionConfig::Notify(n) => Box::new(n.clone()),
        })
    }
}

/// Parses an action string as the original's `Actions` does: the whole string is
/// lower-cased, then read as a JSON object or a list of objects; `stoptraining` without
/// `training_job_prefix` and `sms`/`email` without `endpoint` are skipped, unknown names
/// and non-objects are ignored (logged). Empty → no actions. Invalid JSON is an error
/// (the original raises too).
pub fn parse_actions(action_str: &str, rule: &str) -> Result<Vec<ActionConfig>> {
    let s = action_str.trim().to_lowercase();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let json: serde_json::Value = serde_json::from_str(&s).map_err(|e| RuleError::Action {
        rule: rule.to_owned(),
        action: "(action string)".into(),
        message: format!("not JSON: {e}"),
    })?;
    let items = match json {
        serde_json::Value::Object(_) => vec![json],
        serde_json::Value::Array(v) => v,
        _ => {
            tracing::info!("action string {s}: expected a dict or a list of dicts; no actions");
            return Ok(Vec::new());
        }
    };
    let mut out = Vec::new();
    for item in items {
        let Some(obj) = item.as_object() else {
            tracing::info!("expected a dictionary for an action, got {item}; skipped");
            continue;
        };
        let field = |k: &str| match obj.get(k) {
            Some(serde_json::Value::String(v)) => Some(v.clone()),
            Some(serde_json::Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        match field("name").as_deref() {
            Some("stoptraining") => match field("training_job_prefix") {
                Some(p) => out.push(ActionConfig::StopTraining {
                    training_job_prefix: p,
                }),
                None => tracing::info!("action stoptraining requires training_job_prefix; skipped"),
            },
            Some(proto @ ("sms" | "email")) => match field("endpoint") {
                Some(e) => out.push(ActionConfig::Notify(Notify {
                    protocol: proto.to_owned(),
                    endpoint: e,
                    topic: "SMDebugRules".into(),
                })),
                None => tracing::info!("action {proto} requires endpoint; skipped"),
            },
            Some(other) => {
                tracing::info!("action {other} not supported; allowed: stoptraining, sms, email")
            }
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_strings_as_the_original() {
        // docs/src/testing.md P 118-121.
        let a = parse_actions(
            r#"{"name": "stoptraining", "training_job_prefix": "training_prefix"}"#,
            "R",
        )
        .unwrap();
        assert_eq!(
            a,
            [ActionConfig::StopTraining {
                training_job_prefix: "training_prefix".into()
            }]
        );
        assert!(parse_actions(r#"{"name": "stoptraining"}"#, "R")
            .unwrap()
            .is_empty());
        assert!(parse_actions(r#"{"name": "sms"}"#, "R").unwrap().is_empty());
        assert!(parse_actions(r#"{"name": "pager", "endpoint": "x"}"#, "R")
            .unwrap()
            .is_empty());
        let a = parse_actions(
            r#"[{"name": "StopTraining", "training_job_prefix": "training_prefix"},
                {"name": "email", "endpoint": "ABC@abc.com"}]"#,
            "R",
        )
        .unwrap();
        assert_eq!(a.len(), 2);
        assert!(
            matches!(&a[0], ActionConfig::StopTraining { training_job_prefix } if training_job_prefix == "training_prefix")
        );
        match &a[1] {
            ActionConfig::Notify(n) => {
                assert_eq!(n.protocol, "email");
                assert_eq!(n.endpoint, "abc@abc.com");
                assert_eq!(n.topic, "SMDebugRules");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_actions("", "R").unwrap().is_empty());
        assert!(parse_actions("{not json", "R").is_err());
        assert!(parse_actions("[1, \"x\"]", "R").unwrap().is_empty());
    }

    #[test]
    fn stop_signal_key_defaults_and_checks() {
        assert_eq!(stop_signal_key(Some("a/b.smd")).unwrap(), "a/b.smd");
        assert!(stop_signal_key(Some("../x")).is_err());
        assert!(stop_signal_key(Some("/abs")).is_err());
    }

    #[test]
    fn message_lines() {
        let f = Firing {
            rule: "R".into(),
            step: 3,
            tensor: Some("t".into()),
            message: "why".into(),
            trial: "tr".into(),
        };
        assert_eq!(
            Message::line(MessageFormat::Text, &f),
            "SMDebugRule:R fired at step 3 (tensor t): why"
        );
        let j: serde_json::Value =
            serde_json::from_str(&Message::line(MessageFormat::Json, &f)).unwrap();
        assert_eq!(j["step"], 3);
        assert_eq!(j["tensor"], "t");
    }
}
