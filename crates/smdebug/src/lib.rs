//! smdebug-rs: a Rust implementation of Amazon SageMaker Debugger.
//!
//! This crate only re-exports the layered `smdebug-*` library crates under short names, as
//! ripgrep's `grep` does for the `grep-*` crates: a user who wants everything depends on
//! one crate, and a user who wants one piece depends on that piece alone.
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`exceptions`] | smdebug-exceptions | the analysis conditions (`StepUnavailable`, …) |
//! | [`record`] | smdebug-record | tensor values and the TFRecord event files |
//! | [`config`] | smdebug-config | collections, save and reduction configs, modes |
//! | [`reduce`] | smdebug-reduce | reductions and norms, as numpy computes them |
//! | [`index`] | smdebug-index | the names and paths writer and reader agree on |
//! | [`storage`] | smdebug-storage | local, S3 and in-memory stores |
//! | [`hook`] | smdebug-hook | the writer: `Hook`, what a training job calls |
//! | [`trial`] | smdebug-trial | the reader: `Trial` and `Tensor` over a (live) run |
//! | [`rules`] | smdebug-rules | the rule engine and the 27 built-in rules |
//! | [`dump`] | smdebug-dump | the `smdebug-trial-dump/v1` JSON document of a trial |
//! | [`diagnose`] | smdebug-diagnose | health, doctor, verify and seal: typed reports of what is wrong with a trial |
//! | [`fleet`] | smdebug-fleet | many trials: discovery under a prefix, a bounded runner, the `watch` rule service |
//! | `export` (feature `export`) | smdebug-export | a trial as Parquet / Arrow IPC / CSV tables |
//! | `report` (feature `report`) | smdebug-report | one self-contained HTML report of a trial; plots |
//! | `serve` (feature `serve`) | smdebug-serve | the live, read-only web view of trials and fleets |
//! | `candle` (feature `candle`) | smdebug-candle | saving a candle model's tensors |
//! | `burn` (feature `burn`) | smdebug-burn | saving a burn model's tensors |
//!
//! The framework adapters are behind features because they pull in their framework.
//!
//! A job writes with the hook, a reader opens the trial, a rule judges it:
//!
//! ```
//! use smdebug::hook::{HookBuilder, SaveConfig, SaveConfigMode};
//! use smdebug::record::TensorValue;
//! use smdebug::rules::{build_rule, invoke_rule};
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//!
//! let run = "memory://smdebug-umbrella-doc/run";
//! let mut hook = HookBuilder::new(run)
//!     .include_collections(["gradients"])
//!     .save_config(SaveConfig::new(SaveConfigMode::every(1)))
//!     .build()?;
//! for step in 0..3 {
//!     hook.step()?;
//!     // The gradient vanishes at step 2.
//!     let m = if step == 2 { 1e-9f32 } else { 1e-2 };
//!     hook.save("gradient/fc.weight", TensorValue::from(ndarray::arr1(&[m, -m]).into_dyn()))?;
//! }
//! hook.close()?;
//!
//! let trial = Arc::new(smdebug::trial::create_trial(run)?);
//! let mut rule = build_rule("VanishingGradient", &BTreeMap::new(), trial)?;
//! let evaluation = invoke_rule(rule.as_mut(), 0, None, false)?;
//! assert_eq!(evaluation.firings.len(), 1);
//! assert_eq!(evaluation.firings[0].step, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

pub use smdebug_config as config;
pub use smdebug_diagnose as diagnose;
pub use smdebug_dump as dump;
pub use smdebug_exceptions as exceptions;
pub use smdebug_fleet as fleet;
pub use smdebug_hook as hook;
pub use smdebug_index as index;
pub use smdebug_record as record;
pub use smdebug_reduce as reduce;
pub use smdebug_rules as rules;
pub use smdebug_storage as storage;
pub use smdebug_trial as trial;

#[cfg(feature = "burn")]
pub use smdebug_burn as burn;
#[cfg(feature = "candle")]
pub use smdebug_candle as candle;
#[cfg(feature = "export")]
pub use smdebug_export as export;
#[cfg(feature = "report")]
pub use smdebug_report as report;
#[cfg(feature = "serve")]
pub use smdebug_serve as serve;
