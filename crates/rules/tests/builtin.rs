//! Every built-in rule on the scenarios of docs/src/rules.md: a trial on which it fires at the
//! expected step, and near-misses on which it does not.

use crate::support::*;
use smdebug_config::Mode;
use smdebug_rules::build_rule;

fn pm(x: f64) -> smdebug_record::TensorValue {
    v(&[x, -x, x, -x])
}

// 1. VanishingGradient
fn vanishing(last: f64) -> Vec<i64> {
    let mut w = TrialWriter::new();
    w.collection("gradients", &["g_a", "g_b"]);
    for (s, b) in [(0, 1e-3), (1, 1e-3), (2, last)] {
        w.step(s, &[("g_a", pm(0.01)), ("g_b", pm(b))]);
    }
    fires("VanishingGradient", &[], w.finish(), 0, Some(3))
}

#[test]
fn vanishing_gradient() {
    assert_eq!(vanishing(5e-8), [2]);
    assert!(vanishing(2e-7).is_empty());
}

#[test]
fn vanishing_gradient_threshold_parameter_and_no_collection() {
    let mut w = TrialWriter::new();
    w.collection("gradients", &["g"]);
    w.step(0, &[("g", pm(1e-3))]);
    let t = w.finish();
    assert_eq!(
        fires(
            "VanishingGradient",
            &[("threshold", "0.01")],
            t.clone(),
            0,
            None
        ),
        [0]
    );
    assert!(fires("VanishingGradient", &[], t, 0, None).is_empty());
    // Without a gradients collection there is nothing to check.
    let w = TrialWriter::new();
    w.step(0, &[("g", pm(0.0))]);
    assert!(fires("VanishingGradient", &[], w.finish(), 0, None).is_empty());
}

// 2. ExplodingTensor
#[test]
fn exploding_tensor_invoker_test_trial() {
    let mut w = TrialWriter::new();
    let names = ["foo_0", "foo_1", "foo_2"];
    w.collection("default", &names)
        .collection("gradients", &names);
    for (s, x) in [(0, f64::NAN), (1, 1.0), (2, f64::NAN)] {
        let t: Vec<_> = names.iter().map(|n| (*n, v(&[x]))).collect();
        w.step(s, &t);
    }
    let trial = w.finish();
    let p = smdebug_rules::registry::RESERVED_KEYS; // reserved keys are accepted and consumed
    assert_eq!(p[0], "rule_to_invoke");
    let params = params(&[
        ("collection_names", "gradients,weights"),
        ("rule_to_invoke", "ExplodingTensor"),
    ]);
    let mut r = build_rule("ExplodingTensor", &params, trial.clone()).unwrap();
    assert_eq!(first_fire(r.as_mut(), 0, Some(3)), Some(0));
    let mut r = build_rule("ExplodingTensor", &params, trial).unwrap();
    assert_eq!(first_fire(r.as_mut(), 1, Some(3)), Some(2));
}

#[test]
fn exploding_tensor_inf_only_nan_and_finite() {
    let run = |step1: &[f64], p: &[(&str, &str)]| {
        let w = TrialWriter::new();
        w.step(0, &[("t", v(&[1.0, 1.0])), ("tt", v(&[f64::NAN]))]);
        w.step(1, &[("t", v(step1)), ("tt", v(&[f64::NAN]))]);
        let mut all = vec![("tensor_regex", "^t$")];
        all.extend_from_slice(p);
        fires("ExplodingTensor", &all, w.finish(), 0, None)
    };
    assert_eq!(run(&[1.0, f64::INFINITY], &[]), [1]);
    assert!(run(&[1.0, f64::INFINITY], &[("only_nan", "True")]).is_empty());
    assert!(run(&[1e38, -1e38], &[]).is_empty());
    // Integers cannot be non-finite.
    let w = TrialWriter::new();
    w.step(0, &[("i", ints(&[1, 2]))]);
    assert!(fires("ExplodingTensor", &[], w.finish(), 0, None).is_empty());
}

// 3. SimilarAcrossRuns
fn similar(b2: f64) -> Vec<i64> {
    let mut a = TrialWriter::new();
    let mut b = TrialWriter::new();
    a.collection("weights", &["w"]);
    b.collection("weights", &["w"]);
    for s in 0..3 {
        a.step(s, &[("w", v(&[1.0, 2.0, 3.0])), ("extra", v(&[s as f64]))]);
        let last = if s == 2 { b2 } else { 3.0 };
        b.step(s, &[("w", v(&[1.0, 2.0, last]))]);
    }
    let bt = b.finish();
    let p = [("other_trials", b.path.as_str())];
    let _ = bt;
    fires("SimilarAcrossRuns", &p, a.finish(), 0, None)
}

#[test]
fn similar_across_runs() {
    assert_eq!(similar(3.01), [2]);
    assert!(similar(3.00001).is_empty());
}

#[test]
fn similar_across_runs_requires_other_trials() {
    let w = TrialWriter::new();
    w.step(0, &[("w", v(&[1.0]))]);
    let e = build_rule("SimilarAcrossRuns", &params(&[]), w.finish()).unwrap_err();
    assert!(e.to_string().contains("other_trials"), "{e}");
}

// 4. WeightUpdateRatio
fn weight_update(values: &[(i64, f64)], p: &[(&str, &str)]) -> Vec<i64> {
    let mut w = TrialWriter::new();
    w.collection("weights", &["w"]);
    for &(s, x) in values {
        w.step(s, &[("w", v(&[x; 4]))]);
    }
    fires("WeightUpdateRatio", p, w.finish(), 0, None)
}

#[test]
fn weight_update_ratio() {
    assert_eq!(
        weight_update(&[(0, 1.0), (1, 1.01), (2, 1.02), (3, 30.0)], &[]),
        [3]
    );
    assert_eq!(
        weight_update(&[(0, 1.0), (1, 1.0 + 1e-10), (2, 1.02), (3, 1.03)], &[]),
        [1]
    );
    assert!(weight_update(&[(0, 1.0), (1, 1.01), (2, 1.02), (3, 1.03)], &[]).is_empty());
    assert_eq!(
        weight_update(&[(0, 1.0), (2, 1.01), (4, 30.0)], &[("num_steps", "2")]),
        [4]
    );
}

#[test]
fn weight_update_ratio_uses_train_steps_only() {
    let mut w = TrialWriter::new();
    w.collection("weights", &["w"]);
    w.step_mode(0, Mode::Train, 0, &[("w", v(&[1.0; 4]))]);
    w.step_mode(1, Mode::Eval, 0, &[("w", v(&[1.0; 4]))]); // frozen in eval: no decision
    w.step_mode(2, Mode::Train, 1, &[("w", v(&[1.01; 4]))]);
    w.step_mode(3, Mode::Train, 2, &[("w", v(&[50.0; 4]))]);
    assert_eq!(fires("WeightUpdateRatio", &[], w.finish(), 0, None), [3]);
}

// 5. AllZero
fn run_all_zero(step1_last: f64, p: &[(&str, &str)]) -> Vec<i64> {
    let w = TrialWriter::new();
    w.step(
        0,
        &[
            ("relu_0", shaped(&[2, 3], vec![0., 0., 0., 0., 0., 1.])),
            ("other_0", filled(&[2], 0.0)),
        ],
    );
    w.step(
        1,
        &[
            (
                "relu_0",
                shaped(&[2, 3], vec![0., 0., 0., 0., 0., step1_last]),
            ),
            ("other_0", filled(&[2], 0.0)),
        ],
    );
    let mut all = vec![("tensor_regex", "relu.*")];
    all.extend_from_slice(p);
    fires("AllZero", &all, w.finish(), 0, Some(2))
}

#[test]
fn all_zero() {
    assert_eq!(run_all_zero(0.0, &[]), [1]);
    assert_eq!(run_all_zero(0.0, &[("threshold", "80")]), [0, 1]);
    assert!(run_all_zero(2.0, &[]).is_empty());
    let w = TrialWriter::new();
    w.step(0, &[("x", v(&[0.0]))]);
    let e = build_rule("AllZero", &params(&[]), w.finish()).unwrap_err();
    assert!(
        matches!(e, smdebug_rules::RuleError::InvalidConfiguration { .. }),
        "{e}"
    );
}

// 6. UnchangedTensor
fn unchanged_trial(foo2: f64) -> std::sync::Arc<smdebug_trial::Trial> {
    let w = TrialWriter::new();
    for s in 0..3 {
        let x = if s == 2 { foo2 } else { 1.0 };
        let t: Vec<_> = ["foo_0", "foo_1", "foo_2"]
            .iter()
            .map(|n| (*n, filled(&[10, 3, 2], x)))
            .collect();
        w.step(s, &t);
    }
    let t: Vec<_> = ["boo_0", "boo_1", "boo_2"]
        .iter()
        .map(|n| (*n, filled(&[10, 3, 2], 1.0)))
        .collect();
    w.step(5, &t);
    w.finish()
}

#[test]
fn unchanged_tensor() {
    let t = unchanged_trial(1.0);
    let p = [("tensor_regex", ".*")];
    assert!(fires("UnchangedTensor", &p, t.clone(), 0, Some(2)).is_empty());
    assert_eq!(fires("UnchangedTensor", &p, t.clone(), 0, Some(3)), [2]);
    assert_eq!(fires("UnchangedTensor", &p, t.clone(), 2, Some(3)), [2]);
    assert!(fires("UnchangedTensor", &p, t, 3, Some(6)).is_empty());
    assert!(fires("UnchangedTensor", &p, unchanged_trial(1.001), 0, Some(3)).is_empty());
}

// 7. LossNotDecreasing
fn loss_test_trial(values: &[f64]) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    w.collection("default", &["loss_0", "loss_1"])
        .collection("gradients", &["loss_0", "loss_1"]);
    for (i, &x) in values.iter().enumerate() {
        w.step(4 * i as i64, &[("loss_0", v(&[x])), ("loss_1", v(&[x]))]);
    }
    w.finish()
}

#[test]
fn loss_not_decreasing_2019_tests() {
    let base = [0.3, 0.33, 0.31, 0.30, 0.28];
    for p in [
        vec![],
        vec![("tensor_regex", "loss, losses")],
        vec![("collection_names", "default")],
    ] {
        let mut r = build_rule("LossNotDecreasing", &params(&p), loss_test_trial(&base)).unwrap();
        assert_eq!(first_fire(r.as_mut(), 0, Some(17)), Some(12), "{p:?}");
        // The same object remembers its last evaluation: nothing before step 22.
        assert_eq!(first_fire(r.as_mut(), 13, Some(17)), None, "{p:?}");
    }
    let more = [0.3, 0.33, 0.31, 0.30, 0.28, 0.2, 0.42];
    let legacy = [("diff_percent", "20"), ("legacy_diff_semantics", "True")];
    let mut r = build_rule(
        "LossNotDecreasing",
        &params(&legacy),
        loss_test_trial(&more),
    )
    .unwrap();
    assert_eq!(first_fire(r.as_mut(), 0, None), Some(24));
    // The documented contract (reading b): no decrease at 12 is below the required 20 %.
    let mut r = build_rule(
        "LossNotDecreasing",
        &params(&[("diff_percent", "20")]),
        loss_test_trial(&more),
    )
    .unwrap();
    assert_eq!(first_fire(r.as_mut(), 0, None), Some(12));
}

fn loss_scenario(values: &[f64]) -> Vec<i64> {
    let mut w = TrialWriter::new();
    w.collection("losses", &["loss"]);
    for (i, &x) in values.iter().enumerate() {
        w.step(
            5 * i as i64,
            &[("loss", v(&[x])), ("weights_sum", v(&[1.0]))],
        );
    }
    fires("LossNotDecreasing", &[], w.finish(), 0, None)
}

#[test]
fn loss_not_decreasing_scenarios() {
    assert_eq!(loss_scenario(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.6, 0.6]), [30]);
    assert!(loss_scenario(&[1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7]).is_empty());
    assert!(loss_scenario(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.6, 0.62]).is_empty());
    assert_eq!(loss_scenario(&[1.0, 0.9, 0.8, 0.7, 0.6, 0.6, 0.70]), [30]);
}

#[test]
fn loss_not_decreasing_train_mode() {
    let mut w = TrialWriter::new();
    w.collection("losses", &["loss"]);
    // TRAIN mode steps 0..=10 at global 0..=10, EVAL steps in between at 100+.
    for i in 0..=10 {
        w.step_mode(i, Mode::Train, i, &[("loss", v(&[1.0]))]);
    }
    w.step_mode(11, Mode::Eval, 0, &[("loss", v(&[5.0]))]);
    let t = w.finish();
    assert_eq!(
        fires(
            "LossNotDecreasing",
            &[("mode", "TRAIN")],
            t.clone(),
            0,
            None
        ),
        [10]
    );
    assert!(fires("LossNotDecreasing", &[("mode", "EVAL")], t.clone(), 0, None).is_empty());
    let e = build_rule("LossNotDecreasing", &params(&[("mode", "SOMETIMES")]), t).unwrap_err();
    assert!(e.to_string().contains("SOMETIMES"), "{e}");
}

// 8. Confusion
#[test]
fn confusion_2019_tests() {
    // (1) identity over 100 pseudo-random labels, collections labels/preds.
    let mut w = TrialWriter::new();
    let y: Vec<i64> = (0..100).map(|i| (i * 7 + 3) % 10).collect();
    w.collection("labels", &["y"])
        .collection("preds", &["y_hat"]);
    w.step(1, &[("y", ints(&y)), ("y_hat", ints(&y))]);
    let p = [
        ("labels_collection", "labels"),
        ("predictions_collection", "preds"),
    ];
    assert!(fires("Confusion", &p, w.finish(), 0, None).is_empty());

    // (2), (3) one misprediction among 10, tensors foo/bar.
    let y: Vec<i64> = (0..10).collect();
    let mut yh = y.clone();
    yh[4] = 7;
    let w = TrialWriter::new();
    w.step(1, &[("foo", ints(&y)), ("bar", ints(&yh))]);
    let t = w.finish();
    let p = [
        ("category_no", "10"),
        ("labels", "foo"),
        ("predictions", "bar"),
    ];
    assert_eq!(fires("Confusion", &p, t.clone(), 0, None), [1]);
    let p3 = [
        ("category_no", "10"),
        ("labels", "foo"),
        ("predictions", "bar"),
        ("min_diag", "0.0"),
        ("max_off_diag", "0.01"),
    ];
    assert_eq!(fires("Confusion", &p3, t, 0, None), [1]);

    // (4) identity named labels/predictions, defaults.
    let w = TrialWriter::new();
    w.step(1, &[("labels", ints(&y)), ("predictions", ints(&y))]);
    assert!(fires("Confusion", &[], w.finish(), 0, None).is_empty());
}

#[test]
fn confusion_column_normalised() {
    let run = |ones_as_zero: usize| {
        let labels: Vec<i64> = [vec![0; 10], vec![1; 10]].concat();
        let preds: Vec<i64> = [
            vec![0; 10],
            vec![1; 10 - ones_as_zero],
            vec![0; ones_as_zero],
        ]
        .concat();
        let w = TrialWriter::new();
        w.step(
            0,
            &[("labels", ints(&labels)), ("predictions", ints(&preds))],
        );
        fires("Confusion", &[], w.finish(), 0, None)
    };
    assert_eq!(run(2), [0]);
    assert!(run(1).is_empty());
}

// 9. ClassImbalance
#[test]
fn class_imbalance_2019_test() {
    let w = TrialWriter::new();
    let y: Vec<i64> = [vec![0; 990], vec![1; 10]].concat();
    w.step(3, &[("labels_0", ints(&y))]);
    let p = [
        ("labels_regex", "labels_0"),
        ("predictions_regex", "labels_0"),
    ];
    assert_eq!(fires("ClassImbalance", &p, w.finish(), 0, None), [3]);
}

fn imbalance(labels: &[i64], preds: &[i64]) -> Vec<i64> {
    let w = TrialWriter::new();
    for s in 0..6 {
        w.step(s, &[("labels", ints(labels)), ("predictions", ints(preds))]);
    }
    let mut r = build_rule("ClassImbalance", &params(&[]), w.finish()).unwrap();
    first_fire(r.as_mut(), 0, None).into_iter().collect()
}

#[test]
fn class_imbalance_scenarios() {
    let y: Vec<i64> = [vec![0; 114], vec![1; 6]].concat();
    assert_eq!(imbalance(&y, &y), [4]);
    let y: Vec<i64> = [vec![0; 108], vec![1; 12]].concat();
    assert!(imbalance(&y, &y).is_empty());
    let y: Vec<i64> = [vec![0; 60], vec![1; 60]].concat();
    let p: Vec<i64> = [vec![0; 60], vec![1; 12], vec![0; 48]].concat();
    assert_eq!(imbalance(&y, &p), [4]);
}

#[test]
fn class_imbalance_argmax() {
    let w = TrialWriter::new();
    // scores of 2 classes for 4 samples; argmax = labels.
    let scores = shaped(&[4, 2], vec![0.9, 0.1, 0.2, 0.8, 0.7, 0.3, 0.4, 0.6]);
    w.step(
        0,
        &[("labels", ints(&[0, 1, 0, 1])), ("predictions", scores)],
    );
    let p = [("argmax", "True"), ("samples", "4")];
    assert!(fires("ClassImbalance", &p, w.finish(), 0, None).is_empty());
}

// 10. Overfit
fn run_overfit(eval2: f64) -> Vec<i64> {
    let mut w = TrialWriter::new();
    w.collection("losses", &["loss"]);
    let mut g = 0;
    let (mut tr, mut ev) = (0, 0);
    for (mode, n, x) in [
        (Mode::Train, 10, 1.0),
        (Mode::Eval, 3, 1.05),
        (Mode::Train, 10, 0.5),
        (Mode::Eval, 3, eval2),
    ] {
        for _ in 0..n {
            let ms = if mode == Mode::Train {
                &mut tr
            } else {
                &mut ev
            };
            w.step_mode(g, mode, *ms, &[("loss", v(&[x]))]);
            *ms += 1;
            g += 1;
        }
    }
    let mut r = build_rule("Overfit", &params(&[]), w.finish()).unwrap();
    first_fire(r.as_mut(), 0, None).into_iter().collect()
}

#[test]
fn overfit() {
    assert_eq!(run_overfit(0.6), [23]);
    assert!(run_overfit(0.54).is_empty());
}

#[test]
fn overfit_xgboost_pairs() {
    let w = TrialWriter::new();
    w.step(
        0,
        &[("train-rmse", v(&[1.0])), ("validation-rmse", v(&[1.05]))],
    );
    w.step(
        1,
        &[("train-rmse", v(&[0.5])), ("validation-rmse", v(&[0.7]))],
    );
    assert_eq!(fires("Overfit", &[], w.finish(), 0, None), [1]);
}

// 11. Overtraining
fn run_overtraining(values: &[f64]) -> Option<i64> {
    let mut w = TrialWriter::new();
    w.collection("losses", &["loss"]);
    for (i, &x) in values.iter().enumerate() {
        w.step_mode(i as i64, Mode::Train, i as i64, &[("loss", v(&[x]))]);
    }
    let mut r = build_rule("Overtraining", &params(&[]), w.finish()).unwrap();
    first_fire(r.as_mut(), 0, None)
}

#[test]
fn overtraining() {
    assert_eq!(
        run_overtraining(&[1.0, 0.9, 0.8, 0.795, 0.792, 0.791, 0.791, 0.791, 0.791, 0.791]),
        Some(7)
    );
    let steady: Vec<f64> = (0..10).map(|k| 1.0 - 0.02 * k as f64).collect();
    assert_eq!(run_overtraining(&steady), None);
}

// 13. TensorVariance
#[test]
fn tensor_variance() {
    let mut w = TrialWriter::new();
    w.collection("weights", &["w"]);
    w.step(0, &[("w", v(&[1.0, -1.0, 1.0, -1.0]))]);
    w.step(1, &[("w", v(&[3.0, -3.0, 3.0, -3.0]))]);
    let t = w.finish();
    assert_eq!(
        fires(
            "TensorVariance",
            &[("collection_names", "weights"), ("max_threshold", "5")],
            t.clone(),
            0,
            None
        ),
        [1]
    );
    assert!(fires(
        "TensorVariance",
        &[("collection_names", "weights"), ("max_threshold", "10")],
        t.clone(),
        0,
        None
    )
    .is_empty());
    assert!(fires(
        "TensorVariance",
        &[("collection_names", "weights")],
        t,
        0,
        None
    )
    .is_empty());
    let mut w = TrialWriter::new();
    w.collection("weights", &["w"]);
    w.step(0, &[("w", v(&[0.1, -0.1, 0.1, -0.1]))]);
    w.step(1, &[("w", v(&[1.0, -1.0, 1.0, -1.0]))]);
    assert_eq!(
        fires(
            "TensorVariance",
            &[("collection_names", "weights"), ("min_threshold", "0.5")],
            w.finish(),
            0,
            None
        ),
        [0]
    );
}

// 14. DeadRelu
#[test]
fn dead_relu() {
    // Units below `dead_units` are zero in every sample; the others are positive in
    // sample 0 only (12.5 % of samples: alive).
    let run = |dead_units: usize| {
        let mut vals = vec![0.0; 32];
        for x in vals.iter_mut().take(4).skip(dead_units) {
            *x = 1.0;
        }
        let w = TrialWriter::new();
        w.step(0, &[("dense0_relu_output_0", shaped(&[8, 4], vals))]);
        fires("DeadRelu", &[], w.finish(), 0, None)
    };
    assert_eq!(run(3), [0]);
    assert!(run(1).is_empty());
    assert!(run(2).is_empty(), "exactly 50 % dead does not fire");
}

// 15. SaturatedActivation
#[test]
fn saturated_activation() {
    let run = |name: &str, vals: Vec<f64>| {
        let w = TrialWriter::new();
        w.step(0, &[(name, shaped(&[4, 4], vals))]);
        fires("SaturatedActivation", &[], w.finish(), 0, None)
    };
    let mut mixed = Vec::new();
    for _ in 0..4 {
        mixed.extend([12.0, 12.0, 12.0, 0.5]);
    }
    assert_eq!(run("dense0_tanh_input_0", mixed), [0]);
    assert!(run("dense0_tanh_input_0", vec![9.0; 16]).is_empty());
    assert!(run("dense1_sigmoid_input_0", vec![-20.0; 16]).is_empty());
    assert_eq!(run("dense1_tanh_input_0", vec![-20.0; 16]), [0]);
    assert_eq!(run("dense1_sigmoid_input_0", vec![-30.0; 16]), [0]);
    // The 2020 tuple spelling.
    let w = TrialWriter::new();
    w.step(0, &[("dense0_tanh_input_0", filled(&[4, 4], 9.0))]);
    assert_eq!(
        fires(
            "SaturatedActivation",
            &[("threshold_tanh", "(-5, 5)")],
            w.finish(),
            0,
            None
        ),
        [0]
    );
}

// 16. PoorWeightInitialization
fn lin(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
        .collect()
}

fn poor_init(
    act: (f64, f64),
    grad: f64,
    loss: impl Fn(i64) -> f64,
    steps: std::ops::Range<i64>,
) -> Option<i64> {
    let mut w = TrialWriter::new();
    w.collection("gradients", &["grad_w"])
        .collection("losses", &["loss"]);
    for s in steps {
        w.step(
            s,
            &[
                ("l0_relu_input_0", pm(act.0)),
                ("l1_relu_input_0", pm(act.1)),
                ("grad_w", v(&lin(-grad, grad, 101))),
                ("loss", v(&[loss(s)])),
            ],
        );
    }
    let mut r = build_rule("PoorWeightInitialization", &params(&[]), w.finish()).unwrap();
    first_fire(r.as_mut(), 0, None)
}

#[test]
fn poor_weight_initialization() {
    let dec = |s: i64| 3.0 - 0.1 * s as f64;
    assert_eq!(poor_init((1.0, 0.1), 0.01, dec, 0..10), Some(0));
    assert_eq!(poor_init((1.0, 0.5), 1e-4, dec, 0..10), Some(0));
    assert_eq!(poor_init((1.0, 0.5), 0.01, |_| 2.3, 0..10), Some(5));
    assert_eq!(poor_init((1.0, 0.5), 0.01, dec, 0..10), None);
    assert_eq!(poor_init((1.0, 0.5), 0.01, |_| 2.3, 10..20), None);
}

// 17. CheckInputImages
fn images(steps: i64, channel_values: [f64; 3]) -> Vec<i64> {
    let w = TrialWriter::new();
    let mut a = ndarray::Array4::<f64>::zeros((120, 3, 2, 2));
    for (c, &x) in channel_values.iter().enumerate() {
        a.index_axis_mut(ndarray::Axis(1), c).fill(x);
    }
    let t = smdebug_record::TensorValue::from(a.into_dyn());
    for s in 0..steps {
        w.step(s, &[("hybridsequential0_input_0", t.clone())]);
    }
    let mut r = build_rule("CheckInputImages", &params(&[]), w.finish()).unwrap();
    first_fire(r.as_mut(), 0, None).into_iter().collect()
}

#[test]
fn check_input_images() {
    assert_eq!(images(6, [0.5; 3]), [4]);
    assert!(images(4, [0.5; 3]).is_empty());
    assert!(images(6, [0.15; 3]).is_empty());
    assert_eq!(images(6, [0.0, 0.5, 0.0]), [4]);
}

// 18. NLPSequenceRatio
#[test]
fn nlp_sequence_ratio() {
    let run = |row: &[i64], p: &[(&str, &str)]| {
        let vals: Vec<i64> = (0..4).flat_map(|_| row.iter().copied()).collect();
        let w = TrialWriter::new();
        let t = smdebug_record::TensorValue::from(
            ndarray::Array2::from_shape_vec((4, 10), vals)
                .unwrap()
                .into_dyn(),
        );
        w.step(0, &[("embedding0_input_0", t)]);
        fires("NLPSequenceRatio", p, w.finish(), 0, None)
    };
    assert_eq!(run(&[5, 6, 7, 8, 0, 0, 0, 0, 0, 0], &[]), [0]);
    assert!(run(&[5, 6, 7, 8, 9, 9, 0, 0, 0, 0], &[]).is_empty());
    let two = [
        ("token_values", "3,0"),
        ("token_thresholds_percent", "10,50"),
    ];
    assert_eq!(run(&[3, 3, 0, 0, 0, 0, 5, 6, 7, 8], &two), [0]);
    // DG20 default pair "0" / "50,50": extra threshold ignored.
    assert!(run(
        &[5, 6, 7, 8, 9, 9, 0, 0, 0, 0],
        &[("token_thresholds_percent", "50,50")]
    )
    .is_empty());
}

// 19. FeatureImportanceOverweight
#[test]
fn feature_importance_overweight() {
    let run = |weights: [f64; 6]| {
        let w = TrialWriter::new();
        let names: Vec<String> = (0..6)
            .map(|i| format!("feature_importance/weight/f{i}"))
            .collect();
        let gains: Vec<String> = (0..6)
            .map(|i| format!("feature_importance/gain/f{i}"))
            .collect();
        let gain_vals = [0.9, 0.1, 0.0, 0.0, 0.0, 0.0];
        let mut t: Vec<(&str, smdebug_record::TensorValue)> = names
            .iter()
            .zip(weights)
            .map(|(n, x)| (n.as_str(), v(&[x])))
            .collect();
        t.extend(
            gains
                .iter()
                .zip(gain_vals)
                .map(|(n, x)| (n.as_str(), v(&[x]))),
        );
        w.step(5, &t);
        fires("FeatureImportanceOverweight", &[], w.finish(), 0, None)
    };
    assert_eq!(run([0.5, 0.2, 0.15, 0.05, 0.05, 0.05]), [5]);
    assert!(run([0.3, 0.25, 0.2, 0.1, 0.1, 0.05]).is_empty());
}

// 20. TreeDepth
#[test]
fn tree_depth() {
    let run = |max: i64| {
        let w = TrialWriter::new();
        w.step(2, &[("trees/Node", ints(&(0..=max).collect::<Vec<_>>()))]);
        fires("TreeDepth", &[], w.finish(), 0, None)
    };
    assert_eq!(run(62), [2]);
    assert!(run(30).is_empty());
    assert!(run(0).is_empty());
}

/// Trials written by the real writer that saves only reductions: VanishingGradient reads
/// the saved `(mean, abs)` reduction, TensorVariance the saved `variance`.
#[test]
fn rules_use_saved_reductions_of_hook_trials() {
    use smdebug_hook::{HookBuilder, ReductionConfig, SaveConfig, SaveConfigMode};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reductions");
    let out_s = out.to_str().unwrap();
    let mut hook = HookBuilder::new(out_s)
        .include_collections(["gradients", "weights"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .reduction_config(ReductionConfig::from_sagemaker_str("abs_mean,variance").unwrap())
        .build()
        .unwrap();
    for step in 0..4 {
        hook.step().unwrap();
        let m = if step == 2 { 5e-8 } else { 1e-3 };
        hook.save("gradient/fc.weight", pm(m)).unwrap();
        let w = if step == 3 { 3.0 } else { 1.0 };
        hook.save("fc.weight", pm(w)).unwrap();
    }
    hook.close().unwrap();
    let trial = std::sync::Arc::new(smdebug_trial::create_trial(out_s).unwrap());
    let g = trial.tensor("gradient/fc.weight").unwrap();
    assert!(
        g.value(2, Mode::Global, None).is_err(),
        "only reductions were saved"
    );
    assert_eq!(fires("VanishingGradient", &[], trial.clone(), 0, None), [2]);
    let p = [("collection_names", "weights"), ("max_threshold", "5")];
    assert_eq!(fires("TensorVariance", &p, trial, 0, None), [3]);
}
