//! The smdebug rule engine: the [`Rule`] trait, the invoker ([`invoke_rule`]) with
//! smdebug's semantics, the 20 built-in debugging rules of SageMaker Debugger and 7 rules for
//! how transformers fail (loss and gradient-norm spikes, attention-logit growth, output-logit
//! divergence, update ratios, Adam's ε, activation outliers), a registry
//! that builds them from SageMaker-style string parameters, and actions (a message, or
//! stopping the training job through the hook's stop signal).
//!
//! ```
//! use smdebug_rules::{build_rule, invoke_rule};
//! use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
//! use smdebug_config::{Collection, CollectionManager, Mode};
//! use smdebug_storage::{BlockingStore, Location};
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! // A finished trial: gradient `g` has mean |g| = 0.01, then 5e-8 at step 2.
//! let store = BlockingStore::open(&Location::parse("memory://rules-doc/run")?)?;
//! let mut cm = CollectionManager::new();
//! let mut grads = Collection::new("gradients");
//! grads.include("^g$")?;
//! cm.add(grads);
//! cm.set_num_workers(1);
//! store.put(&smdebug_index::collections_file_key("worker_0")?, cm.to_json().into())?;
//! for (step, m) in [(0, 0.01), (1, 0.01), (2, 5e-8)] {
//!     let g = ndarray::arr1(&[m, -m, m, -m]).into_dyn();
//!     let tensors = [("g", smdebug_record::TensorValue::from(g))];
//!     write_step(&store, &StepWrite { step, worker: "worker_0", mode: Mode::Global,
//!         mode_step: step, tensors: &tensors, shapes: &[] })?;
//! }
//! write_end_marker(&store)?;
//!
//! let trial = Arc::new(smdebug_trial::create_trial("memory://rules-doc/run")?);
//! let mut rule = build_rule("VanishingGradient", &BTreeMap::new(), trial)?;
//! let eval = invoke_rule(rule.as_mut(), 0, None, false)?;
//! assert_eq!(eval.firings.len(), 1);
//! assert_eq!(eval.firings[0].step, 2);
//! assert_eq!(eval.firings[0].tensor.as_deref(), Some("g"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Main pieces: [`Rule`] / [`RuleBase`] (state, required tensors, actions), [`invoke`] and
//! [`invoke_rule`] (waiting for live steps, skipping unavailable ones, ending at `end_step`
//! or the end of training), [`builtin`] (the rules, each documenting the reading of
//! docs/src/rules.md it implements), [`registry`] ([`build_rule`], [`RuleConfiguration`],
//! [`builtin_rules`] for `--list`), [`actions`] ([`StopTraining`], [`Message`],
//! [`parse_actions`]) and [`RuleError`].
#![deny(missing_docs, unsafe_code)]

pub mod actions;
pub mod builtin;
mod error;
mod firing;
pub mod params;
pub mod registry;
mod rule;
mod rule_arg;
mod util;

pub use actions::{
    parse_actions, stop_signal_key, Action, ActionConfig, Message, MessageFormat, StopTraining,
};
pub use error::{Result, RuleError};
pub use firing::Firing;
pub use registry::{
    build_rule, build_rule_with, builtin_rules, find_rule, RuleConfiguration, RuleSpec,
};
pub use rule::{
    invoke, invoke_rule, invoke_rule_with, Clock, Drive, EndReason, Evaluation, Poll, Remark,
    RequiredTensors, Rule, RuleBase, SystemClock,
};
pub use rule_arg::RuleArg;
pub use smdebug_exceptions::AnalysisError;
