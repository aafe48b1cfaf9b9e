//! What a rule reports when it fires: handed to actions, carried by the error that
//! `raise_eval_cond` turns a firing into, and collected in an evaluation.

/// Where and why a rule fired.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    /// The rule's name (its class name in the original: `VanishingGradient`).
    pub rule: String,
    /// The global step it fired at.
    pub step: i64,
    /// The tensor that met the condition, when one did.
    pub tensor: Option<String>,
    /// Why, in words, with the numbers that decided it.
    pub message: String,
    /// The base trial's name.
    pub trial: String,
}

impl Firing {
    /// One JSON object: `rule`, `step`, `tensor` (or null), `message`, `trial`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rule": self.rule,
            "step": self.step,
            "tensor": self.tensor,
            "message": self.message,
            "trial": self.trial,
        })
    }
}
