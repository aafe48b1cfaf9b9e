//! What the rules make of real framework outputs: probabilities and scores where classes are
//! expected (ClassImbalance, Confusion), and NaN or infinite activations (DeadRelu,
//! SaturatedActivation).

use crate::support::*;
use smdebug_rules::{build_rule, invoke_rule, Evaluation, RuleError};
use std::sync::Arc;

/// `n` labels alternating 0, 1 and, per label, a probability of class 1 on the right side of
/// 0.5 (`good`) or, for class 1, on the wrong side (a model that never predicts class 1).
fn binary_trial(n: usize, good: bool) -> Arc<smdebug_trial::Trial> {
    let labels: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
    let probs: Vec<f64> = labels
        .iter()
        .enumerate()
        .map(|(i, &y)| {
            let wiggle = (i % 7) as f64 * 0.04;
            match (y == 1.0, good) {
                (true, true) => 0.95 - wiggle,
                _ => 0.05 + wiggle,
            }
        })
        .collect();
    let w = TrialWriter::new();
    w.step(0, &[("labels", v(&labels)), ("predictions", v(&probs))]);
    w.finish()
}

fn messages(name: &str, p: &[(&str, &str)], trial: Arc<smdebug_trial::Trial>) -> Vec<String> {
    let mut rule = build_rule(name, &params(p), trial).unwrap();
    let eval = invoke_rule(rule.as_mut(), 0, None, false).unwrap();
    eval.firings.into_iter().map(|f| f.message).collect()
}

fn run(name: &str, p: &[(&str, &str)], trial: Arc<smdebug_trial::Trial>) -> Evaluation {
    let mut rule = build_rule(name, &params(p), trial).unwrap();
    invoke_rule(rule.as_mut(), 0, None, false).unwrap()
}

#[test]
fn binary_probabilities_are_thresholded_not_truncated() {
    // binary:logistic predictions are probabilities: truncating 0.95 to class 0 would make
    // both rules fire on a good model.
    let samples = [("samples", "100")];
    assert_eq!(
        messages("ClassImbalance", &samples, binary_trial(200, true)),
        Vec::<String>::new()
    );
    assert_eq!(
        messages("Confusion", &[], binary_trial(200, true)),
        Vec::<String>::new()
    );

    // A model that puts every sample in class 0 is still caught.
    let bad = messages("ClassImbalance", &samples, binary_trial(200, false));
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0].starts_with("class 1: 1.000 of its 100 samples"),
        "{}",
        bad[0]
    );
    let bad = messages("Confusion", &[], binary_trial(200, false));
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0].starts_with("predicted class 0: 0.5000"),
        "{}",
        bad[0]
    );

    // threshold_probability moves the boundary: above the largest probability, every
    // prediction is class 0.
    let high = [("samples", "100"), ("threshold_probability", "0.96")];
    let fired = messages("ClassImbalance", &high, binary_trial(200, true));
    assert_eq!(fired.len(), 1, "{fired:?}");
    let fired = messages(
        "Confusion",
        &[("threshold_probability", "0.96")],
        binary_trial(200, true),
    );
    assert_eq!(fired.len(), 1, "{fired:?}");
}

#[test]
fn probabilities_of_several_columns_take_the_argmax() {
    // multi:softprob: 3 columns; the argmax equals the label in every row of `good`.
    let trial = |good: bool| {
        let labels: Vec<f64> = (0..300).map(|i| (i % 3) as f64).collect();
        let mut probs = Vec::new();
        for &y in &labels {
            let mut row = [0.2, 0.2, 0.2];
            row[if good { y as usize } else { 0 }] = 0.6;
            probs.extend(row);
        }
        let w = TrialWriter::new();
        w.step(
            0,
            &[
                ("labels", v(&labels)),
                ("predictions", shaped(&[300, 3], probs)),
            ],
        );
        w.finish()
    };
    let samples = [("samples", "300")];
    assert!(messages("ClassImbalance", &samples, trial(true)).is_empty());
    assert!(messages("Confusion", &[], trial(true)).is_empty());
    assert_eq!(messages("ClassImbalance", &samples, trial(false)).len(), 1);
    let bad = messages("Confusion", &[], trial(false));
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0].starts_with("predicted class 0: 0.3333"),
        "{}",
        bad[0]
    );
}

#[test]
fn class_ids_saved_as_floats_are_classes() {
    // multi:softmax saves class ids as floats; ids above 1 are not probabilities.
    let trial = |preds: Vec<f64>| {
        let labels: Vec<f64> = (0..300).map(|i| (i % 3) as f64).collect();
        let w = TrialWriter::new();
        w.step(0, &[("labels", v(&labels)), ("predictions", v(&preds))]);
        w.finish()
    };
    let right: Vec<f64> = (0..300).map(|i| (i % 3) as f64).collect();
    let wrong: Vec<f64> = (0..300).map(|i| ((i + 1) % 3) as f64).collect();
    assert!(messages("Confusion", &[], trial(right)).is_empty());
    assert_eq!(messages("Confusion", &[], trial(wrong)).len(), 1);
}

fn not_classes(name: &str, labels: Vec<f64>, preds: Vec<f64>) -> (String, String) {
    let w = TrialWriter::new();
    w.step(0, &[("labels", v(&labels)), ("predictions", v(&preds))]);
    let p: &[(&str, &str)] = if name == "ClassImbalance" {
        &[("samples", "1")]
    } else {
        &[]
    };
    let mut rule = build_rule(name, &params(p), w.finish()).unwrap();
    match invoke_rule(rule.as_mut(), 0, None, false) {
        Err(e @ RuleError::NotClasses { .. }) => {
            let RuleError::NotClasses {
                ref tensor, step, ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(step, 0);
            (tensor.clone(), e.to_string())
        }
        other => panic!("{name}: expected NotClasses, got {other:?}"),
    }
}

#[test]
fn input_that_cannot_be_classes_is_said_plainly_instead_of_firing() {
    for rule in ["ClassImbalance", "Confusion"] {
        // binary:logitraw margins: one column, outside [0, 1], not integers.
        let (tensor, text) = not_classes(rule, vec![0.0, 1.0, 1.0], vec![-2.25, 1.5, 3.0]);
        assert_eq!(tensor, "predictions");
        assert!(
            text.contains(rule)
                && text.contains("cannot be read as classes")
                && text.contains("-2.25")
                && text.contains("probability"),
            "{text}"
        );
        // A regression job: the labels are not class ids.
        let (tensor, text) = not_classes(rule, vec![0.37, 1.5, 2.0], vec![0.4, 1.4, 2.1]);
        assert_eq!(tensor, "labels");
        assert!(
            text.contains("0.37") && text.contains("not a class id"),
            "{text}"
        );
        // NaN predictions are no class either.
        let (tensor, _) = not_classes(rule, vec![0.0, 1.0, 2.0], vec![0.0, f64::NAN, 2.0]);
        assert_eq!(tensor, "predictions");
    }
}

#[test]
fn threshold_probability_is_a_probability() {
    let w = TrialWriter::new();
    w.step(0, &[("x", v(&[1.0]))]);
    let t = w.finish();
    for rule in ["ClassImbalance", "Confusion"] {
        match build_rule(
            rule,
            &params(&[("threshold_probability", "1.5")]),
            t.clone(),
        ) {
            Err(RuleError::InvalidConfiguration { message, .. }) => {
                assert!(message.contains("threshold_probability"), "{message}")
            }
            other => panic!("{rule}: {other:?}"),
        }
    }
}

/// A ReLU layer of 4 units over 8 samples where `nan_units` units are NaN in every sample,
/// the next `dead_units` are 0 and the rest are positive.
fn relu_layer(nan_units: usize, dead_units: usize) -> Arc<smdebug_trial::Trial> {
    let mut vals = Vec::new();
    for _ in 0..8 {
        for u in 0..4 {
            vals.push(if u < nan_units {
                f64::NAN
            } else if u < nan_units + dead_units {
                0.0
            } else {
                1.0
            });
        }
    }
    let w = TrialWriter::new();
    w.step(0, &[("dense0_relu_output_0", shaped(&[8, 4], vals))]);
    w.finish()
}

#[test]
fn nan_activations_are_not_dead_units() {
    // The exploding demo: every activation is NaN. ExplodingTensor fires; DeadRelu does not,
    // and says what it left out.
    let trial = relu_layer(4, 0);
    assert_eq!(fires("ExplodingTensor", &[], trial.clone(), 0, None), [0]);
    let eval = run("DeadRelu", &[], trial);
    assert!(eval.firings.is_empty(), "{:?}", eval.firings);
    assert_eq!(eval.remarks.len(), 1);
    let r = &eval.remarks[0];
    assert_eq!(
        (r.rule.as_str(), r.step, r.tensor.as_deref()),
        ("DeadRelu", 0, Some("dense0_relu_output_0"))
    );
    assert!(
        r.message.contains("32 of 32 values are NaN or infinite")
            && r.message.contains("4 of 4 units have no finite value"),
        "{}",
        r.message
    );

    // Units with finite values are still judged, over those units only: 1 dead of 2 judged
    // is 50 %, not more.
    let eval = run("DeadRelu", &[], relu_layer(2, 1));
    assert!(eval.firings.is_empty());
    assert_eq!(eval.remarks.len(), 1);
    // 2 dead of 2 judged fires, and the firing says what was left out.
    let eval = run("DeadRelu", &[], relu_layer(2, 2));
    assert_eq!(eval.firings.len(), 1);
    let m = &eval.firings[0].message;
    assert!(
        m.starts_with("2 of 2 units (100.0%)") && m.contains("16 non-finite values of 32 left out"),
        "{m}"
    );
    // Finite layers make no remark.
    let eval = run("DeadRelu", &[], relu_layer(0, 3));
    assert_eq!((eval.firings.len(), eval.remarks.len()), (1, 0));
}

#[test]
fn infinite_activation_inputs_are_not_saturation() {
    let w = TrialWriter::new();
    w.step(
        0,
        &[("dense0_tanh_input_0", filled(&[4, 4], f64::INFINITY))],
    );
    w.step(1, &[("dense0_tanh_input_0", filled(&[4, 4], 20.0))]);
    let eval = run("SaturatedActivation", &[], w.finish());
    // Step 0 is diverged, not saturated; step 1 is saturated.
    assert_eq!(eval.firings.iter().map(|f| f.step).collect::<Vec<_>>(), [1]);
    assert_eq!(eval.remarks.len(), 1);
    assert_eq!(eval.remarks[0].step, 0);
    assert!(eval.remarks[0]
        .message
        .contains("16 of 16 values are NaN or infinite"));
}

#[test]
fn zero_outputs_of_nan_inputs_are_not_dead_units() {
    // The demo's exploding run: candle's ReLU turns the NaN input into 0, so the output
    // alone looks dead. The input saved beside it says why.
    let trial = |input: f64| {
        let w = TrialWriter::new();
        w.step(
            0,
            &[
                ("layer1.relu_input_0", filled(&[8, 4], input)),
                ("layer1.relu_output_0", filled(&[8, 4], 0.0)),
            ],
        );
        w.finish()
    };
    let eval = run("DeadRelu", &[], trial(f64::NAN));
    assert!(eval.firings.is_empty(), "{:?}", eval.firings);
    assert_eq!(eval.remarks.len(), 1);
    assert!(
        eval.remarks[0].message.contains(
            "32 of 32 values are NaN or infinite (here or in the input layer1.relu_input_0)"
        ),
        "{}",
        eval.remarks[0].message
    );
    // A finite negative input: the units really are dead.
    let eval = run("DeadRelu", &[], trial(-3.0));
    assert_eq!((eval.firings.len(), eval.remarks.len()), (1, 0));
}
