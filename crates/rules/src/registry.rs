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

macro_rules! simple {
    ($rule:ident, $config:ident) => {
        |trial, _open, p| Ok(Box::new($rule::new(trial, $config::from_params(p)?)) as Box<dyn Rule>)
    };
}

static RULES: &[RuleSpec] = &[
    RuleSpec {
        name: "VanishingGradient",
        doc: "gradients whose mean absolute value is tiny",
        params: VanishingGradientConfig::PARAMS,
        build: simple!(VanishingGradient, VanishingGradientConfig),
    },
    RuleSpec {
        name: "ExplodingTensor",
        doc: "tensors with NaN or infinite values",
        params: ExplodingTensorConfig::PARAMS,
        build: simple!(ExplodingTensor, ExplodingTensorConfig),
    },
    RuleSpec {
        name: "SimilarAcrossRuns",
        doc: "tensors that differ from another run at the same step",
        params: SimilarAcrossRunsConfig::PARAMS,
        build: |trial, open, p| {
            let mut others = Vec::new();
            for path in p.list("other_trials")? {
                others.push(open(&path)?);
            }
            Ok(Box::new(SimilarAcrossRuns::new(
                trial,
                others,
                SimilarAcrossRunsConfig::from_params(p)?,
            )))
        },
    },
    RuleSpec {
        name: "WeightUpdateRatio",
        doc: "weight updates too large or too small relative to the weights",
        params: WeightUpdateRatioConfig::PARAMS,
        build: simple!(WeightUpdateRatio, WeightUpdateRatioConfig),
    },
    RuleSpec {
        name: "AllZero",
        doc: "tensors whose values are (almost) all zero",
        params: AllZeroConfig::PARAMS,
        build: simple!(AllZero, AllZeroConfig),
    },
    RuleSpec {
        name: "UnchangedTensor",
        doc: "tensors that stop changing across steps",
        params: UnchangedTensorConfig::PARAMS,
        build: simple!(UnchangedTensor, UnchangedTensorConfig),
    },
    RuleSpec {
        name: "LossNotDecreasing",
        doc: "a loss that does not decrease at the expected rate",
        params: LossNotDecreasingConfig::PARAMS,
        build: simple!(LossNotDecreasing, LossNotDecreasingConfig),
    },
    RuleSpec {
        name: "Confusion",
        doc: "a confusion matrix far from diagonal",
        params: ConfusionConfig::PARAMS,
        build: simple!(Confusion, ConfusionConfig),
    },
    RuleSpec {
        name: "ClassImbalance",
        doc: "imbalanced classes or badly predicted classes",
        params: ClassImbalanceConfig::PARAMS,
        build: simple!(ClassImbalance, ClassImbalanceConfig),
    },
    RuleSpec {
        name: "Overfit",
        doc: "validation loss pulling away from training loss",
        params: OverfitConfig::PARAMS,
        build: simple!(Overfit, OverfitConfig),
    },
    RuleSpec {
        name: "Overtraining",
        doc: "training or validation loss no longer improving",
        params: OvertrainingConfig::PARAMS,
        build: simple!(Overtraining, OvertrainingConfig),
    },
    RuleSpec {
        name: "StalledTrainingRule",
        doc: "no new step saved for too long (wall clock)",
        params: StalledTrainingRuleConfig::PARAMS,
        build: |trial, _open, p| {
            Ok(Box::new(StalledTrainingRule::new(
                trial,
                StalledTrainingRuleConfig::from_params(p)?,
            )?))
        },
    },
    RuleSpec {
        name: "TensorVariance",
        doc: "tensor variance above or below a bound",
        params: TensorVarianceConfig::PARAMS,
        build: simple!(TensorVariance, TensorVarianceConfig),
    },
    RuleSpec {
        name: "DeadRelu",
        doc: "layers whose ReLU units are mostly inactive",
        params: DeadReluConfig::PARAMS,
        build: simple!(DeadRelu, DeadReluConfig),
    },
    RuleSpec {
        name: "SaturatedActivation",
        doc: "tanh/sigmoid layers mostly saturated",
        params: SaturatedActivationConfig::PARAMS,
        build: simple!(SaturatedActivation, SaturatedActivationConfig),
    },
    RuleSpec {
        name: "PoorWeightInitialization",
        doc: "signs of poor initialisation in the first steps",
        params: PoorWeightInitializationConfig::PARAMS,
        build: simple!(PoorWeightInitialization, PoorWeightInitializationConfig),
    },
    RuleSpec {
        name: "CheckInputImages",
        doc: "input images that are not normalised",
        params: CheckInputImagesConfig::PARAMS,
        build: simple!(CheckInputImages, CheckInputImagesConfig),
    },
    RuleSpec {
        name: "NLPSequenceRatio",
        doc: "too many padding/unknown tokens in input sequences",
        params: NLPSequenceRatioConfig::PARAMS,
        build: simple!(NLPSequenceRatio, NLPSequenceRatioConfig),
    },
    RuleSpec {
        name: "FeatureImportanceOverweight",
        doc: "a few features carrying most of the importance (XGBoost)",
        params: FeatureImportanceOverweightConfig::PARAMS,
        build: simple!(
            FeatureImportanceOverweight,
            FeatureImportanceOverweightConfig
        ),
    },
    RuleSpec {
        name: "TreeDepth",
        doc: "trees deeper than a bound (XGBoost)",
        params: TreeDepthConfig::PARAMS,
        build: simple!(TreeDepth, TreeDepthConfig),
    },
];

/// Every built-in rule, in RULES.md order.
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
/// string, SEMANTICS.md §11.4) and `rule_to_invoke` may be in the map.
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
