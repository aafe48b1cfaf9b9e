//! The 20 built-in debugging rules of SageMaker Debugger (docs/src/rules.md §1–§20), with the
//! original's parameter names, string forms and defaults, and 7 rules for how transformers
//! fail (§21–§27: loss and gradient-norm spikes, attention-logit growth, output-logit
//! divergence, update ratios, Adam's ε, activation outliers), with the criteria and defaults
//! of the training codebases and papers that published them. Where the contract leaves a
//! choice open, each rule's docs say which reading is implemented.
//!
//! Each rule is written as two declarations and one function: `rule_params!` declares its
//! parameters (name, type, default, meaning: the config struct, the `PARAMS` table of
//! `smdebug rules --list`, parsing and defaults all come from it), `builtin_rule!` declares
//! the rule and the state it keeps between steps, and `condition` says when it fires at a
//! step, returning a finding (the tensor and the message of the firing). The step skeleton
//! (reading the base trial, recording the finding for the firing) is written once, here.
//!
//! # Labels and predictions as classes
//!
//! [`ClassImbalance`] and [`Confusion`] read a step's labels and predictions as class ids,
//! the same way:
//!
//! * labels must be integers (class ids; a float tensor holding whole numbers is fine);
//! * predictions with several columns (a last axis longer than 1: `multi:softprob`, softmax
//!   outputs) are probabilities or scores per class, and the class is the argmax over the last
//!   axis (the first maximum, as `numpy.argmax`); with ClassImbalance's `argmax=True` the
//!   argmax is taken over the last axis whatever its length, as in the original;
//! * predictions with one column whose values all lie in `[0, 1]` (`binary:logistic`, a
//!   sigmoid output) are probabilities of class 1: class 1 where `p > threshold_probability`
//!   (default 0.5), else class 0 (0/1 class ids come through unchanged);
//! * other one-column predictions must be integers (`multi:softmax`, `binary:hinge`).
//!
//! Anything else (raw margins of `binary:logitraw`, regression outputs, NaN) cannot be
//! classes: the rule ends with [`RuleError::NotClasses`](crate::RuleError::NotClasses) naming the tensor and a value,
//! instead of firing on numbers that mean something else. The original cast every value to
//! an integer, which turns probabilities into class 0.

/// Declares a rule's parameters once: the config struct (one documented field per
/// parameter), its `PARAMS` table, `from_params` and, unless `no_default` follows the rule
/// name, `Default` (the documented defaults). A field is
/// `name: Type [= "default"] [, required] => "meaning"`; the type gives the parameter's kind
/// (`params::ParamValue`). An optional `check |p, c| { … }` validates or completes
/// the whole config after every parameter has been read.
macro_rules! rule_params {
    (
        $(#[$meta:meta])*
        $config:ident for $rule:literal $($flag:ident)? {
            $( $field:ident : $ty:ty $(= $default:literal)? $(, $required:ident)? => $doc:literal ),* $(,)?
        }
        $(check |$p:ident, $c:ident| $check:block)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $config {
            $( #[doc = $doc] pub $field: $ty, )*
        }

        impl $config {
            /// The string parameters.
            pub const PARAMS: &'static [$crate::params::ParamSpec] = &[
                $( $crate::params::ParamSpec {
                    name: stringify!($field),
                    kind: <$ty as $crate::params::ParamValue>::KIND,
                    default: rule_params!(@default $($default)?),
                    required: rule_params!(@required $($required)?),
                    doc: $doc,
                }, )*
            ];

            /// Reads the parameters.
            pub fn from_params(p: &$crate::params::ParamReader<'_>) -> $crate::error::Result<Self> {
                #[allow(unused_mut)]
                let mut config = $config {
                    $( $field: <$ty as $crate::params::ParamValue>::read(p, stringify!($field))?, )*
                };
                $({
                    let ($p, $c) = (p, &mut config);
                    $check
                })?
                Ok(config)
            }
        }

        rule_params!(@default_impl $config $rule $($flag)?);
    };
    (@default) => { None };
    (@default $d:literal) => { Some($d) };
    (@required) => { false };
    (@required required) => { true };
    (@default_impl $config:ident $rule:literal) => {
        impl Default for $config {
            fn default() -> Self {
                $crate::builtin::defaults($rule, Self::PARAMS, Self::from_params)
            }
        }
    };
    (@default_impl $config:ident $rule:literal no_default) => {};
}

/// Declares a step-driven rule over its config and the state it keeps between steps (each
/// field starts as its `Default`): the struct, `new`, and the `Rule` impl, which evaluates
/// the rule's `condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>>`
/// and records the finding for the firing. With `others`, `new` also takes the trials the
/// rule compares with.
macro_rules! builtin_rule {
    (
        $(#[$meta:meta])*
        $name:ident($config:ident $(, $others:ident)?) $({ $($state:ident : $sty:ty),* $(,)? })?
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            base: $crate::rule::RuleBase,
            config: $config,
            $($($state: $sty,)*)?
        }

        impl $name {
            builtin_rule!(@new $name $config $($others)?);

            fn with_trials(
                trial: std::sync::Arc<smdebug_trial::Trial>,
                others: Vec<std::sync::Arc<smdebug_trial::Trial>>,
                config: $config,
            ) -> Self {
                $name {
                    base: $crate::rule::RuleBase::new(stringify!($name), trial, others),
                    config,
                    $($($state: Default::default(),)*)?
                }
            }
        }

        impl $crate::rule::Rule for $name {
            fn base(&self) -> &$crate::rule::RuleBase {
                &self.base
            }

            fn base_mut(&mut self) -> &mut $crate::rule::RuleBase {
                &mut self.base
            }

            fn invoke_at_step(&mut self, step: i64) -> $crate::error::Result<bool> {
                let trial = self.base.base_trial().clone();
                let finding = self.condition(&trial, step)?;
                Ok($crate::builtin::record(&mut self.base, finding))
            }
        }
    };
    (@new $name:ident $config:ident) => {
        /// The rule over `trial`.
        pub fn new(trial: std::sync::Arc<smdebug_trial::Trial>, config: $config) -> Self {
            Self::with_trials(trial, Vec::new(), config)
        }
    };
    (@new $name:ident $config:ident others) => {
        /// The rule comparing `trial` with `others`.
        pub fn new(
            trial: std::sync::Arc<smdebug_trial::Trial>,
            others: Vec<std::sync::Arc<smdebug_trial::Trial>>,
            config: $config,
        ) -> Self {
            Self::with_trials(trial, others, config)
        }
    };
}

mod activations;
mod attention;
mod classification;
mod gradients;
mod loss;
mod optimizer;
mod spikes;
mod stalled;
mod tensors;
mod xgboost;

pub use activations::*;
pub use attention::*;
pub use classification::*;
pub use gradients::*;
pub use loss::*;
pub use optimizer::*;
pub use spikes::*;
pub use stalled::*;
pub use tensors::*;
pub use xgboost::*;

use crate::error::Result;
use crate::params::{ParamReader, ParamSpec};
use crate::rule::RuleBase;
use crate::util::f64_at;
use ndarray::ArrayD;
use smdebug_trial::Trial;
use std::collections::BTreeMap;

/// Why a rule fires at a step: the tensor that met the condition (when one did) and the
/// numbers that decided it, in words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    tensor: Option<String>,
    message: String,
}

impl Finding {
    /// A finding about one tensor.
    pub(crate) fn on(tensor: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            tensor: Some(tensor.into()),
            message: message.into(),
        }
    }

    /// A finding about the step as a whole.
    pub(crate) fn general(message: impl Into<String>) -> Self {
        Finding {
            tensor: None,
            message: message.into(),
        }
    }
}

/// Notes the finding for the firing; whether the rule fires.
pub(crate) fn record(base: &mut RuleBase, finding: Option<Finding>) -> bool {
    match finding {
        Some(f) => {
            base.note(f.tensor.as_deref(), f.message);
            true
        }
        None => false,
    }
}

/// The per-tensor skeleton most rules share: the first of `names` whose value at `step`
/// (as float64; tensors without a numeric value there are skipped, as docs/src/rules.md
/// says for every rule) meets `check`, which says why or `None`.
pub(crate) fn first_tensor<'n>(
    trial: &Trial,
    names: impl IntoIterator<Item = &'n String>,
    step: i64,
    mut check: impl FnMut(&str, &ArrayD<f64>) -> Result<Option<String>>,
) -> Result<Option<Finding>> {
    for name in names {
        let Some(a) = f64_at(trial, name, step)? else {
            continue;
        };
        if let Some(why) = check(name, &a)? {
            return Ok(Some(Finding::on(name.as_str(), why)));
        }
    }
    Ok(None)
}

/// The configuration a rule gets from an empty parameter map: its documented defaults.
/// The tables are constants checked by the unit tests, so this cannot fail at run time.
pub(crate) fn defaults<T>(
    rule: &str,
    specs: &[ParamSpec],
    parse: impl FnOnce(&ParamReader<'_>) -> Result<T>,
) -> T {
    let reader = ParamReader::new(rule, specs, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("parameter table of {rule}: {e}"));
    parse(&reader).unwrap_or_else(|e| panic!("defaults of {rule}: {e}"))
}
