//! Building rules by name from string parameters (SageMaker's `DebugRuleConfigurations`
//! form), and the metadata behind `smdebug rules --list`.

use crate::actions::parse_actions;
use crate::builtin::*;
use crate::error::{Result, RuleError};
use crate::params::{ParamReader, ParamSpec};
use crate::rule::Rule;
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Keys of `RuleParameters` that configure SageMaker rather than the rule: the registry
/// consumes them.
pub const RESERVED_KEYS: [&str; 2] = ["rule_to_invoke", "action_json"];

/// Opens the other trials some rules compare with (SimilarAcrossRuns' `other_trials`).
pub type TrialOpener<'a> = &'a dyn Fn(&str) -> Result<Arc<Trial>>;

type Builder = fn(Arc<Trial>, TrialOpener<'_>, &ParamReader<'_>) -> Result<Box<dyn Rule>>;

/// A built-in rule: its name, what it checks, its parameters, and how to build it.
pub struct RuleSpec {
    /// The rule's name (`rule_to_invoke`).
    pub name: &'static str,
    /// One line on what it detects.
    pub doc: &'static str,
    /// Its parameters with defaults.
    pub params: &'static [ParamSpec],
    build: Builder,
}

impl std::fmt::Debug for RuleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleSpec")
            .field("name", &self.name)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// A rule's entry: its name, what it detects, its parameter table, and how it is built from
/// its parsed config (by default `Rule::new(trial, config)`).
macro_rules! spec {
    ($rule:ident($config:ident), $doc:literal) => {
        spec!($rule($config), $doc, |trial, _open, config| Ok(Box::new(
            $rule::new(trial, config)
        )))
    };
    ($rule:ident($config:ident), $doc:literal, |$trial:ident, $open:ident, $c:ident| $build:expr) => {
        RuleSpec {
            name: stringify!($rule),
            doc: $doc,
            params: $config::PARAMS,
            build: |$trial, $open, p| {
                let $c = $config::from_params(p)?;
                $build
            },
        }
    };
}

static RULES: &[RuleSpec] = &[
    spec!(
        VanishingGradient(VanishingGradientConfig),
        "gradients whose mean absolute value is tiny"
    ),
    spec!(
        ExplodingTensor(ExplodingTensorConfig),
        "tensors with NaN or infinite values"
    ),
    spec!(
        SimilarAcrossRuns(SimilarAcrossRunsConfig),
        "tensors that differ from another run at the same step",
        |trial, open, config| {
            let others = config.other_trials.iter().map(|path| open(path));
            let others = others.collect::<Result<_>>()?;
            Ok(Box::new(SimilarAcrossRuns::new(trial, others, config)))
        }
    ),
    spec!(
        WeightUpdateRatio(WeightUpdateRatioConfig),
        "weight updates too large or too small relative to the weights"
    ),
    spec!(
        AllZero(AllZeroConfig),
        "tensors whose values are (almost) all zero"
    ),
    spec!(
        UnchangedTensor(UnchangedTensorConfig),
        "tensors that stop changing across steps"
    ),
    spec!(
        LossNotDecreasing(LossNotDecreasingConfig),
        "a loss that does not decrease at the expected rate"
    ),
    spec!(
        Confusion(ConfusionConfig),
        "a confusion matrix far from diagonal"
    ),
    spec!(
        ClassImbalance(ClassImbalanceConfig),
        "imbalanced classes or badly predicted classes"
    ),
    spec!(
        Overfit(OverfitConfig),
        "validation loss pulling away from training loss"
    ),
    spec!(
        Overtraining(OvertrainingConfig),
        "training or validation loss no longer improving"
    ),
    spec!(
        StalledTrainingRule(StalledTrainingRuleConfig),
        "no new step saved for too long (wall clock)",
        |trial, _open, config| Ok(Box::new(StalledTrainingRule::new(trial, config)?))
    ),
    spec!(
        TensorVariance(TensorVarianceConfig),
        "tensor variance above or below a bound"
    ),
    spec!(
        DeadRelu(DeadReluConfig),
        "layers whose ReLU units are mostly inactive"
    ),
    spec!(
        SaturatedActivation(SaturatedActivationConfig),
        "tanh/sigmoid layers mostly saturated"
    ),
    spec!(
        PoorWeightInitialization(PoorWeightInitializationConfig),
        "signs of poor initialisation in the first steps"
    ),
    spec!(
        CheckInputImages(CheckInputImagesConfig),
        "input images that are not normalised"
    ),
    spec!(
        NLPSequenceRatio(NLPSequenceRatioConfig),
        "too many padding/unknown tokens in input sequences"
    ),
    spec!(
        FeatureImportanceOverweight(FeatureImportanceOverweightConfig),
        "a few features carrying most of the importance (XGBoost)"
    ),
    spec!(
        TreeDepth(TreeDepthConfig),
        "trees deeper than a bound (XGBoost)"
    ),
    spec!(
        LossSpike(LossSpikeConfig),
        "a loss above its rolling mean + k·σ, or r × its rolling mean for too long"
    ),
    spec!(
        GradientNormSpike(GradientNormSpikeConfig),
        "a global gradient norm above its rolling mean + k·σ"
    ),
    spec!(
        AttentionLogitGrowth(AttentionLogitGrowthConfig),
        "attention logits growing past a bound, or attention entropy collapsing"
    ),
    spec!(
        OutputLogitDivergence(OutputLogitDivergenceConfig),
        "the output logits' log-partition drifting from 0"
    ),
    spec!(
        UpdateRatio(UpdateRatioConfig),
        "per-layer update ratios ‖ΔW‖/‖W‖ outside a band"
    ),
    spec!(
        AdamEpsilon(AdamEpsilonConfig),
        "layers whose Adam second moment is mostly below ε"
    ),
    spec!(
        ActivationOutlier(ActivationOutlierConfig),
        "a layer's largest activation jumping over its own rolling baseline"
    ),
];

/// Every built-in rule, in docs/src/rules.md order.
pub fn builtin_rules() -> &'static [RuleSpec] {
    RULES
}

/// The built-in rule of that name (matched case-insensitively, as the 2019 invoker did).
pub fn find_rule(name: &str) -> Result<&'static RuleSpec> {
    RULES
        .iter()
        .find(|r| r.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| RuleError::UnknownRule {
            name: name.to_owned(),
            known: RULES.iter().map(|r| r.name).collect::<Vec<_>>().join(", "),
        })
}

fn open_default(path: &str) -> Result<Arc<Trial>> {
    Ok(Arc::new(smdebug_trial::create_trial(path)?))
}

/// Builds rule `name` over `base` from string parameters; other trials named by
/// parameters are opened with `smdebug_trial::create_trial`. `action_json` (an action
/// string, docs/src/semantics.md §11.4) and `rule_to_invoke` may be in the map.
pub fn build_rule(
    name: &str,
    params: &BTreeMap<String, String>,
    base: Arc<Trial>,
) -> Result<Box<dyn Rule>> {
    build_rule_with(name, params, base, &open_default)
}

/// [`build_rule`] with a custom way of opening other trials.
pub fn build_rule_with(
    name: &str,
    params: &BTreeMap<String, String>,
    base: Arc<Trial>,
    open_trial: TrialOpener<'_>,
) -> Result<Box<dyn Rule>> {
    let spec = find_rule(name)?;
    let mut own = params.clone();
    for k in RESERVED_KEYS {
        own.remove(k);
    }
    let reader = ParamReader::new(spec.name, spec.params, &own)?;
    let mut rule = (spec.build)(base, open_trial, &reader)?;
    if let Some(actions) = params.get("action_json") {
        for a in parse_actions(actions, spec.name)? {
            rule.base_mut().add_action(a.build()?);
        }
    }
    Ok(rule)
}

/// One entry of SageMaker's `DebugRuleConfigurations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleConfiguration {
    /// `RuleConfigurationName` (defaults to the rule's name).
    pub configuration_name: String,
    /// `RuleParameters.rule_to_invoke`.
    pub rule: String,
    /// All of `RuleParameters` (including `rule_to_invoke` / `action_json`).
    pub parameters: BTreeMap<String, String>,
}

impl RuleConfiguration {
    /// Parses one configuration object or a list of them:
    /// `{"RuleConfigurationName": …, "RuleParameters": {"rule_to_invoke": …, …}}`. Parameter
    /// values must be strings (numbers and booleans are accepted and converted, as a
    /// convenience).
    pub fn parse(json: &str) -> Result<Vec<RuleConfiguration>> {
        let bad = |message: String| RuleError::InvalidRuleConfiguration { message };
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| bad(format!("not JSON: {e}")))?;
        let items = match v {
            serde_json::Value::Array(a) => a,
            serde_json::Value::Object(ref o) if o.contains_key("DebugRuleConfigurations") => {
                match &o["DebugRuleConfigurations"] {
                    serde_json::Value::Array(a) => a.clone(),
                    _ => return Err(bad("DebugRuleConfigurations must be a list".into())),
                }
            }
            other => vec![other],
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let obj = item
                    .as_object()
                    .ok_or_else(|| bad(format!("entry {i} is not an object")))?;
                let params = obj
                    .get("RuleParameters")
                    .and_then(|p| p.as_object())
                    .ok_or_else(|| bad(format!("entry {i} has no RuleParameters object")))?;
                let mut parameters = BTreeMap::new();
                for (k, v) in params {
                    let s = match v {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Number(n) => n.to_string(),
                        serde_json::Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
                        serde_json::Value::Null => "None".to_owned(),
                        _ => {
                            return Err(bad(format!(
                                "entry {i}: RuleParameters.{k} must be a string, got {v}"
                            )))
                        }
                    };
                    parameters.insert(k.clone(), s);
                }
                let rule = parameters.get("rule_to_invoke").cloned().ok_or_else(|| {
                    bad(format!("entry {i}: RuleParameters has no rule_to_invoke"))
                })?;
                let configuration_name = obj
                    .get("RuleConfigurationName")
                    .and_then(|n| n.as_str())
                    .unwrap_or(&rule)
                    .to_owned();
                Ok(RuleConfiguration {
                    configuration_name,
                    rule,
                    parameters,
                })
            })
            .collect()
    }

    /// Builds the rule over `base`.
    pub fn build(&self, base: Arc<Trial>) -> Result<Box<dyn Rule>> {
        build_rule(&self.rule, &self.parameters, base)
    }
}
