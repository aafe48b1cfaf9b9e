//! The registry: names, parameters, defaults, SageMaker configurations.

use crate::support::*;
use smdebug_rules::params::{ParamKind, ParamReader, ParamSpec};
use smdebug_rules::{build_rule, builtin_rules, find_rule, RuleConfiguration, RuleError};
use std::collections::BTreeMap;

fn trial() -> std::sync::Arc<smdebug_trial::Trial> {
    let w = TrialWriter::new();
    w.step(0, &[("x", v(&[1.0]))]);
    w.finish()
}

#[test]
fn twenty_seven_rules_with_unique_names_and_documented_parameters() {
    let rules = builtin_rules();
    assert_eq!(rules.len(), 27);
    let mut names: Vec<_> = rules.iter().map(|r| r.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 27);
    for r in rules {
        assert!(!r.doc.is_empty());
        for p in r.params {
            assert!(!p.doc.is_empty(), "{}.{}", r.name, p.name);
            assert!(
                !(p.required && p.default.is_some()),
                "{}.{}",
                r.name,
                p.name
            );
        }
    }
}

/// Parses the default of every parameter of `specs` that has one into the value of its
/// kind; the names of those that do not parse, with why.
fn unparsable_defaults(rule: &str, specs: &[ParamSpec]) -> Vec<String> {
    let reader = ParamReader::new(rule, specs, &BTreeMap::new()).unwrap();
    let mut bad = Vec::new();
    for p in specs.iter().filter(|p| p.default.is_some()) {
        let parsed = match p.kind {
            ParamKind::Float => reader.opt_f64(p.name).map(|v| v.is_some()),
            ParamKind::Int => reader.opt_i64(p.name).map(|v| v.is_some()),
            ParamKind::Bool => reader.bool(p.name).map(|_| true),
            ParamKind::Str => reader.opt_string(p.name).map(|v| v.is_some()),
            ParamKind::List => reader.list(p.name).map(|v| !v.is_empty()),
            ParamKind::FloatList => reader.f64_list(p.name).map(|v| !v.is_empty()),
        };
        match parsed {
            Ok(true) => {}
            Ok(false) => bad.push(format!(
                "{}: default {:?} reads as unset",
                p.name, p.default
            )),
            Err(e) => bad.push(format!("{}: {e}", p.name)),
        }
    }
    bad
}

#[test]
fn every_default_parses_into_its_typed_value() {
    for r in builtin_rules() {
        assert_eq!(
            unparsable_defaults(r.name, r.params),
            Vec::<String>::new(),
            "{}",
            r.name
        );
    }
    // The check sees a default that does not parse, or that means "unset".
    let broken = [
        ParamSpec::new("a", ParamKind::Float, Some("0.1.2"), "x"),
        ParamSpec::new("b", ParamKind::Int, Some("1.5"), "x"),
        ParamSpec::new("c", ParamKind::Bool, Some("yes"), "x"),
        ParamSpec::new("d", ParamKind::FloatList, Some("1,x"), "x"),
        ParamSpec::new("e", ParamKind::List, Some(" , "), "x"),
        ParamSpec::new("f", ParamKind::Str, Some("None"), "x"),
        ParamSpec::new("g", ParamKind::Float, Some("1e-7"), "x"),
    ];
    let bad = unparsable_defaults("R", &broken);
    let names: Vec<&str> = bad.iter().map(|b| &b[..1]).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f"], "{bad:?}");
}

#[test]
fn every_rule_builds_from_its_defaults_or_names_what_is_missing() {
    let t = trial();
    for r in builtin_rules() {
        match build_rule(r.name, &BTreeMap::new(), t.clone()) {
            Ok(rule) => assert_eq!(rule.base().name(), r.name),
            Err(RuleError::MissingParameter { parameter, .. }) => {
                assert_eq!(
                    (r.name, parameter.as_str()),
                    ("SimilarAcrossRuns", "other_trials")
                )
            }
            Err(RuleError::InvalidConfiguration { message, .. }) => {
                assert!(
                    message.contains("collection_names"),
                    "{}: {message}",
                    r.name
                );
                assert!(["AllZero", "UnchangedTensor", "TensorVariance"].contains(&r.name));
            }
            Err(e) => panic!("{}: {e}", r.name),
        }
    }
}

#[test]
fn defaults_match_rules_md_summary_table() {
    use smdebug_rules::builtin::*;
    assert_eq!(VanishingGradientConfig::default().threshold, 1e-7);
    let w = WeightUpdateRatioConfig::default();
    assert_eq!(
        (w.num_steps, w.large_threshold, w.small_threshold, w.epsilon),
        (None, 10.0, 1e-8, 1e-9)
    );
    let l = LossNotDecreasingConfig::default();
    assert_eq!(
        (l.num_steps, l.diff_percent, l.increase_threshold_percent),
        (10, 0.1, 5.0)
    );
    assert_eq!(l.mode, Some(smdebug_config::Mode::Global));
    assert!(l.use_losses_collection && !l.legacy_diff_semantics);
    let c = ConfusionConfig::default();
    assert_eq!(
        (c.category_no, c.min_diag, c.max_off_diag),
        (None, 0.9, 0.1)
    );
    assert_eq!(c.labels_collection, "labels");
    let ci = ClassImbalanceConfig::default();
    assert_eq!(
        (
            ci.threshold_imbalance,
            ci.threshold_misprediction,
            ci.samples
        ),
        (10.0, 0.7, 500)
    );
    assert_eq!(
        (ci.labels_regex.as_str(), ci.predictions_regex.as_str()),
        (".*labels", ".*predictions")
    );
    let o = OverfitConfig::default();
    assert_eq!((o.start_step, o.patience, o.ratio_threshold), (0, 1, 0.1));
    let ot = OvertrainingConfig::default();
    assert_eq!(
        (ot.patience_train, ot.patience_validation, ot.delta),
        (5, 10, 0.01)
    );
    let s = StalledTrainingRuleConfig::default();
    assert_eq!((s.threshold, s.stop_training_on_fire), (1800, false));
    let d = DeadReluConfig::default();
    assert_eq!(d.tensor_regex, [".*relu_output"]);
    assert_eq!((d.threshold_inactivity, d.threshold_layer), (1.0, 50.0));
    let sa = SaturatedActivationConfig::default();
    assert_eq!(sa.tensor_regex, [".*tanh_input|.*sigmoid_input"]);
    assert_eq!(
        (sa.threshold_tanh_min, sa.threshold_tanh_max),
        (-9.4999, 9.4999)
    );
    assert_eq!(
        (sa.threshold_sigmoid_min, sa.threshold_sigmoid_max),
        (-23.0, 16.99999)
    );
    let p = PoorWeightInitializationConfig::default();
    assert_eq!(
        (p.threshold, p.distribution_range, p.patience, p.steps),
        (10.0, 0.001, 5, 10)
    );
    let ci = CheckInputImagesConfig::default();
    assert_eq!(
        (ci.threshold_mean, ci.threshold_samples, ci.channel),
        (0.2, 500, 1)
    );
    let n = NLPSequenceRatioConfig::default();
    assert_eq!(
        (n.token_values.clone(), n.token_thresholds_percent.clone()),
        (vec![0.0], vec![50.0])
    );
    let f = FeatureImportanceOverweightConfig::default();
    assert_eq!(
        (f.threshold, f.nfeatures, f.tensor_regex.as_str()),
        (0.8, 3, ".*feature_importance/weight")
    );
    assert_eq!(TreeDepthConfig::default().depth, 4.0);
    assert!(!ExplodingTensorConfig::default().only_nan);
}

#[test]
fn typed_errors_name_rule_parameter_and_value() {
    let t = trial();
    match find_rule("NoSuchRule") {
        Err(RuleError::UnknownRule { name, known }) => {
            assert_eq!(name, "NoSuchRule");
            assert!(known.contains("VanishingGradient"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        find_rule("vanishinggradient").unwrap().name,
        "VanishingGradient"
    );
    match build_rule(
        "VanishingGradient",
        &params(&[("treshold", "1")]),
        t.clone(),
    ) {
        Err(RuleError::UnknownParameter {
            rule,
            parameter,
            known,
        }) => {
            assert_eq!(
                (rule.as_str(), parameter.as_str()),
                ("VanishingGradient", "treshold")
            );
            assert!(known.contains("threshold"));
        }
        other => panic!("{other:?}"),
    }
    match build_rule(
        "VanishingGradient",
        &params(&[("threshold", "tiny")]),
        t.clone(),
    ) {
        Err(RuleError::InvalidValue {
            rule,
            parameter,
            value,
            ..
        }) => {
            assert_eq!(
                (rule.as_str(), parameter.as_str(), value.as_str()),
                ("VanishingGradient", "threshold", "tiny")
            );
        }
        other => panic!("{other:?}"),
    }
    match build_rule("ExplodingTensor", &params(&[("only_nan", "yes")]), t) {
        Err(e @ RuleError::InvalidValue { .. }) => assert!(e.to_string().contains("True or False")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sagemaker_rule_configurations() {
    let json = r#"[{"RuleConfigurationName": "VG", "RuleEvaluatorImage": "x",
        "RuleParameters": {"rule_to_invoke": "VanishingGradient", "threshold": "0.0001"}},
        {"RuleParameters": {"rule_to_invoke": "ExplodingTensor", "only_nan": true}}]"#;
    let confs = RuleConfiguration::parse(json).unwrap();
    assert_eq!(confs.len(), 2);
    assert_eq!(confs[0].configuration_name, "VG");
    assert_eq!(confs[1].configuration_name, "ExplodingTensor");
    assert_eq!(confs[1].parameters["only_nan"], "True");
    let t = trial();
    let rule = confs[0].build(t.clone()).unwrap();
    assert_eq!(rule.base().name(), "VanishingGradient");
    let wrapped = format!(r#"{{"DebugRuleConfigurations": {json}}}"#);
    assert_eq!(RuleConfiguration::parse(&wrapped).unwrap(), confs);
    for bad in [
        "[1]",
        r#"{"RuleParameters": {}}"#,
        "{",
        r#"{"RuleParameters": {"rule_to_invoke": "X", "a": [1]}}"#,
    ] {
        assert!(
            matches!(
                RuleConfiguration::parse(bad),
                Err(RuleError::InvalidRuleConfiguration { .. })
            ),
            "{bad}"
        );
    }
    let conf =
        &RuleConfiguration::parse(r#"{"RuleParameters": {"rule_to_invoke": "Nope"}}"#).unwrap()[0];
    assert!(matches!(conf.build(t), Err(RuleError::UnknownRule { .. })));
}

mod properties {
    use proptest::prelude::*;
    use smdebug_rules::params::{ParamKind, ParamReader, ParamSpec};
    use smdebug_rules::{builtin_rules, parse_actions, RuleConfiguration};
    use std::collections::BTreeMap;

    proptest! {
        /// Any string value of any parameter of any rule parses or gives a typed error.
        #[test]
        fn parameter_values_never_panic(rule in 0usize..20, param in 0usize..10, value in ".{0,24}") {
            let spec = &builtin_rules()[rule];
            prop_assume!(param < spec.params.len());
            let p: &ParamSpec = &spec.params[param];
            let given = BTreeMap::from([(p.name.to_string(), value.clone())]);
            let r = ParamReader::new(spec.name, spec.params, &given).unwrap();
            let res = match p.kind {
                ParamKind::Float => r.opt_f64(p.name).map(|_| ()),
                ParamKind::Int => r.opt_i64(p.name).map(|_| ()),
                ParamKind::Bool => r.bool(p.name).map(|_| ()),
                ParamKind::Str => r.opt_string(p.name).map(|_| ()),
                ParamKind::List => r.list(p.name).map(|_| ()),
                ParamKind::FloatList => r.f64_list(p.name).map(|_| ()),
            };
            if let Err(e) = res {
                let text = e.to_string();
                prop_assert!(text.contains(spec.name) && text.contains(p.name), "{}", text);
            }
        }

        /// Configuration documents and action strings: JSON or not, never a panic.
        #[test]
        fn configurations_and_actions_never_panic(s in ".{0,64}") {
            let _ = RuleConfiguration::parse(&s);
            let _ = parse_actions(&s, "R");
            let wrapped = format!(r#"{{"RuleParameters": {{"rule_to_invoke": "X", "k": {s}}}}}"#);
            let _ = RuleConfiguration::parse(&wrapped);
        }
    }
}
