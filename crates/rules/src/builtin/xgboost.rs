//! XGBoost rules: FeatureImportanceOverweight, TreeDepth.

use super::defaults;
use crate::error::Result;
use crate::params::{ParamKind::*, ParamReader, ParamSpec};
use crate::rule::{Rule, RuleBase};
use crate::util::{f64_at, regex_tensors, scalar};
use smdebug_trial::Trial;
use std::sync::Arc;

/// Parameters of [`FeatureImportanceOverweight`].
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureImportanceOverweightConfig {
    /// Largest allowed sum of the `nfeatures` largest importances.
    pub threshold: f64,
    /// How many of the largest importances are summed.
    pub nfeatures: usize,
    /// Regex of the importance tensors.
    pub tensor_regex: String,
}

impl FeatureImportanceOverweightConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "threshold",
            Float,
            Some("0.8"),
            "largest allowed sum of the nfeatures largest normalised importances",
        ),
        ParamSpec::new(
            "nfeatures",
            Int,
            Some("3"),
            "number of largest importances summed",
        ),
        ParamSpec::new(
            "tensor_regex",
            Str,
            Some(".*feature_importance/weight"),
            "regex of the feature-importance tensors",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(FeatureImportanceOverweightConfig {
            threshold: p.f64("threshold")?,
            nfeatures: p.usize("nfeatures")?,
            tensor_regex: p.string("tensor_regex")?,
        })
    }
}

impl Default for FeatureImportanceOverweightConfig {
    fn default() -> Self {
        defaults(
            "FeatureImportanceOverweight",
            Self::PARAMS,
            Self::from_params,
        )
    }
}

/// FeatureImportanceOverweight (RULES.md §19): at a step, the scalar values of the tensors
/// matching `tensor_regex` (the XGBoost hook's `feature_importance/<type>/<feature>`,
/// normalised to sum 1) are sorted and the `nfeatures` largest summed; fires if the sum
/// exceeds `threshold`. Kept quirk: with at most `nfeatures` features the sum is 1 and the
/// rule fires.
#[derive(Debug)]
pub struct FeatureImportanceOverweight {
    base: RuleBase,
    config: FeatureImportanceOverweightConfig,
}

impl FeatureImportanceOverweight {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: FeatureImportanceOverweightConfig) -> Self {
        FeatureImportanceOverweight {
            base: RuleBase::new("FeatureImportanceOverweight", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for FeatureImportanceOverweight {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        let mut values = Vec::new();
        for name in regex_tensors(&trial, std::slice::from_ref(&c.tensor_regex))? {
            if let Some(v) = f64_at(&trial, &name, step)?.as_ref().and_then(scalar) {
                values.push((v, name));
            }
        }
        if values.is_empty() {
            return Ok(false);
        }
        values.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top: f64 = values.iter().take(c.nfeatures).map(|x| x.0).sum();
        if top > c.threshold {
            let names: Vec<&str> = values
                .iter()
                .take(c.nfeatures)
                .map(|x| x.1.as_str())
                .collect();
            self.base.note(
                None,
                format!(
                    "the {} largest feature importances ({}) sum to {top:.4} > {}",
                    names.len(),
                    names.join(", "),
                    c.threshold
                ),
            );
            return Ok(true);
        }
        Ok(false)
    }
}

/// Parameters of [`TreeDepth`].
#[derive(Debug, Clone, PartialEq)]
pub struct TreeDepthConfig {
    /// Largest allowed tree depth.
    pub depth: f64,
}

impl TreeDepthConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[ParamSpec::new(
        "depth",
        Float,
        Some("4"),
        "fires when the estimated depth of the step's tree is greater than this",
    )];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(TreeDepthConfig {
            depth: p.f64("depth")?,
        })
    }
}

impl Default for TreeDepthConfig {
    fn default() -> Self {
        defaults("TreeDepth", Self::PARAMS, Self::from_params)
    }
}

/// TreeDepth (RULES.md §20): the depth of the tree in `trees/Node` at the step is estimated
/// as `floor(log2(max node id))` (a full tree of depth k has largest id 2^(k+1) − 2; for
/// unbalanced trees this is a lower bound); fires if it is greater than `depth`. A single
/// leaf (max id 0) never fires.
#[derive(Debug)]
pub struct TreeDepth {
    base: RuleBase,
    config: TreeDepthConfig,
}

impl TreeDepth {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: TreeDepthConfig) -> Self {
        TreeDepth {
            base: RuleBase::new("TreeDepth", trial, Vec::new()),
            config,
        }
    }
}

impl Rule for TreeDepth {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        if !trial.has_tensor("trees/Node")? {
            return Ok(false);
        }
        let Some(a) = f64_at(&trial, "trees/Node", step)? else {
            return Ok(false);
        };
        let max = a
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        if max < 1.0 {
            return Ok(false);
        }
        let d = max.log2().floor();
        if d > self.config.depth {
            self.base.note(
                Some("trees/Node"),
                format!(
                    "tree depth {d} (largest node id {max}) is greater than {}",
                    self.config.depth
                ),
            );
            return Ok(true);
        }
        Ok(false)
    }
}
