//! The 20 built-in debugging rules of SageMaker Debugger (RULES.md), with the original's
//! parameter names, string forms and defaults. Where RULES.md leaves a choice open, each
//! rule's docs say which reading is implemented.

macro_rules! rule_base {
    () => {
        fn base(&self) -> &$crate::rule::RuleBase {
            &self.base
        }
        fn base_mut(&mut self) -> &mut $crate::rule::RuleBase {
            &mut self.base
        }
    };
}

mod activations;
mod classification;
mod gradients;
mod loss;
mod stalled;
mod tensors;
mod xgboost;

pub use activations::*;
pub use classification::*;
pub use gradients::*;
pub use loss::*;
pub use stalled::*;
pub use tensors::*;
pub use xgboost::*;

use crate::error::Result;
use crate::params::{ParamReader, ParamSpec};
use std::collections::BTreeMap;

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
