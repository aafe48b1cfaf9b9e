//! The rules for how transformers fail (docs/src/rules.md §21–§27): for each, a trial on
//! which it fires at the named step, a healthy one on which it is silent, and bad input.

use crate::support::*;
use proptest::prelude::*;
use smdebug_record::TensorValue;
use smdebug_rules::builtin::{global_norm, LossSpike, LossSpikeConfig, SpikeCriterion};
use smdebug_rules::{build_rule, invoke_rule, Evaluation};

/// A small deterministic wobble in [-1, 1] (no RNG crate: the same trial every run).
fn wobble(i: i64) -> f64 {
    ((i as f64) * 0.7).sin()
}

fn evaluate(
    name: &str,
    p: &[(&str, &str)],
    trial: std::sync::Arc<smdebug_trial::Trial>,
) -> Evaluation {
    let mut rule = build_rule(name, &params(p), trial).unwrap();
    invoke_rule(rule.as_mut(), 0, None, false).unwrap()
}

fn steps(e: &Evaluation) -> Vec<i64> {
    e.firings.iter().map(|f| f.step).collect()
}

// 21. LossSpike

/// `loss` = 2 + 0.01·wobble at steps 0..n, with `bad` values at the given steps.
fn loss_trial(n: i64, bad: &[(i64, f64)]) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    w.collection("losses", &["loss"]);
    for s in 0..n {
        let x = bad
            .iter()
            .find(|(b, _)| *b == s)
            .map(|(_, x)| *x)
            .unwrap_or(2.0 + 0.01 * wobble(s));
        w.step(s, &[("loss", v(&[x]))]);
    }
    w.finish()
}

#[test]
fn loss_spike_olmo_defaults_fire_at_the_spike_and_report_its_recovery() {
    // A bad batch at step 140: one spike, peak at 141, back to normal at 142.
    let trial = loss_trial(160, &[(140, 3.0), (141, 3.5)]);
    let e = evaluate("LossSpike", &[], trial);
    assert_eq!(steps(&e), [140]);
    let m = &e.firings[0].message;
    assert!(m.starts_with("loss 3 > mean "), "{m}");
    assert!(
        m.contains("+ 6σ") && m.contains("over the last 128 saved steps"),
        "{m}"
    );
    let rec: Vec<_> = e
        .remarks
        .iter()
        .filter(|r| r.message.contains("recovered"))
        .collect();
    assert_eq!(rec.len(), 1, "{:?}", e.remarks);
    assert_eq!(rec[0].step, 142);
    assert!(
        rec[0]
            .message
            .contains("from step 140 (peak 3.5 at step 141)"),
        "{}",
        rec[0].message
    );
}

#[test]
fn loss_spike_needs_a_full_window_and_is_silent_on_a_healthy_run() {
    assert!(evaluate("LossSpike", &[], loss_trial(200, &[]))
        .firings
        .is_empty());
    // The same bad batch before 128 values are in: OLMo-core does not judge yet, and one
    // bad value is not a persistent run for llm-foundry's test.
    assert!(evaluate("LossSpike", &[], loss_trial(160, &[(100, 3.0)]))
        .firings
        .is_empty());
    // A rise within 6σ is no spike.
    assert!(evaluate("LossSpike", &[], loss_trial(160, &[(140, 2.03)]))
        .firings
        .is_empty());
}

#[test]
fn loss_spike_llm_foundry_variant_fires_after_more_than_patience_outliers() {
    // Loss doubles from step 120 on and stays high: outliers at 120..; the 5th in a row
    // (more than patience 4) is step 124. OLMo-core's test is off to see this one alone.
    let bad: Vec<(i64, f64)> = (120..130).map(|s| (s, 4.5)).collect();
    let p = [("threshold_std", "None")];
    let e = evaluate("LossSpike", &p, loss_trial(130, &bad));
    assert_eq!(steps(&e), [124]);
    let m = &e.firings[0].message;
    assert!(
        m.contains(">= 2 × mean") && m.contains("more than patience 4"),
        "{m}"
    );
    assert!(m.contains("since step 120"), "{m}");
    // Four outliers in a row are within the patience.
    let bad: Vec<(i64, f64)> = (120..124).map(|s| (s, 4.5)).collect();
    assert!(evaluate("LossSpike", &p, loss_trial(130, &bad))
        .firings
        .is_empty());
    // Just under 2 × the mean never counts.
    let bad: Vec<(i64, f64)> = (120..130).map(|s| (s, 3.9)).collect();
    assert!(evaluate("LossSpike", &p, loss_trial(130, &bad))
        .firings
        .is_empty());
}

#[test]
fn loss_spike_lists_its_spikes_through_the_typed_api() {
    let trial = loss_trial(160, &[(140, 3.0), (141, 3.5)]);
    let mut rule = LossSpike::new(trial, LossSpikeConfig::default());
    invoke_rule(&mut rule, 0, None, false).unwrap();
    let spikes = rule.spikes();
    assert_eq!(spikes.len(), 1);
    let s = &spikes[0];
    assert_eq!(s.criterion, SpikeCriterion::Std);
    assert_eq!(
        (s.start, s.peak_step, s.peak, s.recovered_at),
        (140, 141, 3.5, Some(142))
    );
}

#[test]
fn loss_spike_leaves_out_nan_and_rejects_a_zero_window() {
    let trial = loss_trial(160, &[(135, f64::NAN)]);
    let e = evaluate("LossSpike", &[], trial);
    assert!(e.firings.is_empty());
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 135 && r.message.contains("not finite")));
    let err = build_rule(
        "LossSpike",
        &params(&[("window_size", "0")]),
        loss_trial(1, &[]),
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("window_size must be positive"));
}

// 22. GradientNormSpike

/// Gradients `g_a` (4 elements) and `g_b` (a 3 × 3 matrix) (collection `gradients`) at
/// steps 0..n with elementwise magnitude 0.1·(1 + 0.05·wobble), `jump` × that at the given
/// step. With `l2_only`, only their `l2` reductions (of every element) are written.
fn grad_trial(
    n: i64,
    jump: Option<(i64, f64)>,
    l2_only: bool,
) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    w.collection("gradients", &["g_a", "g_b"]);
    for s in 0..n {
        let f = match jump {
            Some((j, x)) if j == s => x,
            _ => 1.0,
        };
        let m = 0.1 * (1.0 + 0.05 * wobble(s)) * f;
        let a = vec![m; 4];
        let b = vec![-m; 9];
        if l2_only {
            let l2 = |x: &[f64]| x.iter().map(|y| y * y).sum::<f64>().sqrt();
            w.step(
                s,
                &[
                    ("smdebug/reductions/l2/g_a", v(&[l2(&a)])),
                    ("smdebug/reductions/l2/g_b", v(&[l2(&b)])),
                ],
            );
        } else {
            w.step(s, &[("g_a", v(&a)), ("g_b", shaped(&[3, 3], b))]);
        }
    }
    w.finish()
}

#[test]
fn gradient_norm_spike_fires_on_raw_tensors_and_on_l2_reductions_alike() {
    for l2_only in [false, true] {
        let e = evaluate(
            "GradientNormSpike",
            &[],
            grad_trial(150, Some((135, 3.0)), l2_only),
        );
        assert_eq!(steps(&e), [135], "l2_only {l2_only}");
        let m = &e.firings[0].message;
        // Global norm at 135: 3 · 0.1·(1 + 0.05·sin(94.5)) · √13.
        let expected = 3.0 * 0.1 * (1.0 + 0.05 * wobble(135)) * 13f64.sqrt();
        let shown: f64 = m
            .strip_prefix("global gradient norm (over 2 tensors) ")
            .and_then(|r| r.split(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{m}"));
        assert!((shown - expected).abs() < 1e-6, "{shown} vs {expected}");
        assert!(m.contains("over the last 128 saved steps"), "{m}");
    }
}

#[test]
fn gradient_norm_spike_takes_every_element_of_matrices_and_3d_tensors() {
    // The norm clip_grad_norm_ clips: √Σx² over every element, whatever the rank (numpy's
    // `l2` of a matrix is its spectral norm, and of a 3-d tensor an error).
    let mut w = TrialWriter::new();
    w.collection("gradients", &["conv", "fc"]);
    let conv: Vec<f64> = (0..24).map(|i| 0.01 * (i as f64 - 11.5)).collect();
    let fc: Vec<f64> = (0..6).map(|i| 0.02 * (i as f64 + 1.0)).collect();
    let expected = conv.iter().chain(&fc).map(|x| x * x).sum::<f64>().sqrt();
    for s in 0..4 {
        let f = if s == 3 { 10.0 } else { 1.0 + 0.01 * s as f64 };
        let scale = |x: &Vec<f64>| x.iter().map(|y| y * f).collect::<Vec<_>>();
        w.step(
            s,
            &[
                ("conv", shaped(&[2, 3, 4], scale(&conv))),
                ("fc", shaped(&[2, 3], scale(&fc))),
            ],
        );
    }
    let e = evaluate("GradientNormSpike", &[("window_size", "3")], w.finish());
    assert!(e.remarks.iter().all(|r| r.step != 3), "{:?}", e.remarks);
    assert_eq!(steps(&e), [3]);
    let m = &e.firings[0].message;
    let shown: f64 = m
        .strip_prefix("global gradient norm (over 2 tensors) ")
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{m}"));
    assert!(
        (shown - 10.0 * expected).abs() < 1e-9,
        "{shown} vs {}",
        10.0 * expected
    );
}

#[test]
fn gradient_norm_spike_is_silent_on_a_healthy_run_and_skips_partial_steps() {
    assert!(
        evaluate("GradientNormSpike", &[], grad_trial(200, None, false))
            .firings
            .is_empty()
    );
    assert!(evaluate(
        "GradientNormSpike",
        &[],
        grad_trial(200, Some((135, 1.1)), true)
    )
    .firings
    .is_empty());
    // A step where one of the two gradients is missing is no global norm.
    let mut w = TrialWriter::new();
    w.collection("gradients", &["g_a", "g_b"]);
    w.step(0, &[("g_a", v(&[1.0])), ("g_b", v(&[1.0]))]);
    w.step(1, &[("g_a", v(&[100.0]))]);
    let p = [("window_size", "1")];
    let e = evaluate("GradientNormSpike", &p, w.finish());
    assert!(e.firings.is_empty());
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 1 && r.message.contains("only 1 of 2")));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The global norm from per-tensor norms equals the L2 norm of all the tensors'
    /// elements concatenated.
    #[test]
    fn global_norm_equals_the_norm_of_the_concatenation(
        tensors in prop::collection::vec(prop::collection::vec(-1e3f64..1e3, 0..20), 1..8),
        scale in prop::sample::select(vec![1e-150, 1e-3, 1.0, 1e150]),
    ) {
        let tensors: Vec<Vec<f64>> =
            tensors.iter().map(|t| t.iter().map(|x| x * scale).collect()).collect();
        let l2 = |x: &[f64]| {
            let m = x.iter().fold(0.0f64, |m, y| m.max(y.abs()));
            if m == 0.0 { 0.0 } else { m * x.iter().map(|y| (y / m) * (y / m)).sum::<f64>().sqrt() }
        };
        let per_tensor: Vec<f64> = tensors.iter().map(|t| l2(t)).collect();
        let all: Vec<f64> = tensors.concat();
        let (g, want) = (global_norm(per_tensor), l2(&all));
        prop_assert!((g - want).abs() <= 1e-12 * want, "{} vs {}", g, want);
        prop_assert!(g.is_finite());
    }

    /// The rule reads the same global norm from a trial of raw gradients and from a trial
    /// of their l2 reductions.
    #[test]
    fn gradient_norm_spike_reads_the_same_norm_from_raw_and_reductions(
        jump in 2.0f64..50.0,
    ) {
        let raw = evaluate("GradientNormSpike", &[("window_size", "8")], grad_trial(12, Some((10, jump)), false));
        let red = evaluate("GradientNormSpike", &[("window_size", "8")], grad_trial(12, Some((10, jump)), true));
        prop_assert_eq!(steps(&raw), vec![10]);
        prop_assert_eq!(steps(&red), vec![10]);
        let norm = |e: &Evaluation| -> f64 {
            let m = &e.firings[0].message;
            m.strip_prefix("global gradient norm (over 2 tensors) ")
                .and_then(|r| r.split(' ').next())
                .and_then(|x| x.parse().ok())
                .unwrap_or(f64::NAN)
        };
        prop_assert!((norm(&raw) - norm(&red)).abs() <= 1e-12 * norm(&raw));
    }
}

// 23. AttentionLogitGrowth

fn attention_trial(
    logit_max: &[[f64; 2]],
    entropy: &[[f64; 2]],
) -> std::sync::Arc<smdebug_trial::Trial> {
    let w = TrialWriter::new();
    for (s, (l, e)) in logit_max.iter().zip(entropy).enumerate() {
        w.step(
            s as i64,
            &[
                ("attention_logit_max/0", v(&[3.0, 4.0])),
                ("attention_logit_max/1", v(l)),
                ("attention_entropy/0", v(&[2.0, 2.1])),
                ("attention_entropy/1", v(e)),
            ],
        );
    }
    w.finish()
}

#[test]
fn attention_logit_growth_fires_when_a_head_passes_the_bound() {
    let logits = [
        [5.0, 8.0],
        [20.0, 12.0],
        [60.0, 15.0],
        [130.0, 20.0],
        [250.0, 30.0],
    ];
    let entropy = [[2.0, 2.0]; 5];
    let e = evaluate(
        "AttentionLogitGrowth",
        &[],
        attention_trial(&logits, &entropy),
    );
    assert_eq!(steps(&e), [3, 4]);
    assert_eq!(
        e.firings[0].tensor.as_deref(),
        Some("attention_logit_max/1")
    );
    assert!(e.firings[0]
        .message
        .contains("head 0: largest pre-softmax attention logit 130 > 100"));
    // Healthy: logits that stay small.
    let healthy = [[5.0, 8.0], [6.0, 9.0], [5.5, 8.5], [6.0, 9.0], [6.0, 9.0]];
    assert!(evaluate(
        "AttentionLogitGrowth",
        &[],
        attention_trial(&healthy, &entropy)
    )
    .firings
    .is_empty());
}

#[test]
fn attention_entropy_collapse_fires_below_a_tenth_of_the_heads_highest() {
    let logits = [[5.0, 8.0]; 5];
    let collapse = [[2.0, 2.0], [1.8, 1.9], [1.0, 1.9], [0.15, 1.9], [0.05, 1.9]];
    let e = evaluate(
        "AttentionLogitGrowth",
        &[],
        attention_trial(&logits, &collapse),
    );
    assert_eq!(steps(&e), [3, 4]);
    assert!(
        e.firings[0].message.contains(
            "head 0: attention entropy 0.15 nats < 0.1 × its highest saved entropy 2 nats"
        ),
        "{}",
        e.firings[0].message
    );
    // Entropy falling by half is learning, not collapse.
    let healthy = [[2.0, 2.0], [1.8, 1.9], [1.4, 1.7], [1.1, 1.5], [1.0, 1.4]];
    assert!(evaluate(
        "AttentionLogitGrowth",
        &[],
        attention_trial(&logits, &healthy)
    )
    .firings
    .is_empty());
    // With the test off, the collapse is not reported.
    let p = [("entropy_collapse_ratio", "None")];
    assert!(evaluate(
        "AttentionLogitGrowth",
        &p,
        attention_trial(&logits, &collapse)
    )
    .firings
    .is_empty());
}

#[test]
fn attention_logit_growth_skips_wrong_shapes_and_nan_heads() {
    let w = TrialWriter::new();
    w.step(
        0,
        &[("attention_logit_max/0", shaped(&[2, 2], vec![500.0; 4]))],
    );
    w.step(1, &[("attention_logit_max/0", v(&[f64::NAN, 5.0]))]);
    w.step(2, &[("attention_logit_max/0", v(&[f64::NAN, 500.0]))]);
    let e = evaluate("AttentionLogitGrowth", &[], w.finish());
    assert_eq!(steps(&e), [2]);
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 0 && r.message.contains("not [heads]")));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 1 && r.message.contains("1 of 2 heads are NaN")));
}

// 24. OutputLogitDivergence

fn log_partition_trial(values: &[TensorValue]) -> std::sync::Arc<smdebug_trial::Trial> {
    let w = TrialWriter::new();
    for (s, x) in values.iter().enumerate() {
        w.step(s as i64, &[("output_log_partition", x.clone())]);
    }
    w.finish()
}

#[test]
fn output_logit_divergence_fires_when_log_z_drifts_past_the_bound() {
    let drift: Vec<_> = [10.4, 8.0, 3.0, -5.0, -21.0, -40.0]
        .iter()
        .map(|x| v(&[*x]))
        .collect();
    let e = evaluate("OutputLogitDivergence", &[], log_partition_trial(&drift));
    assert_eq!(steps(&e), [4, 5]);
    assert!(e.firings[0]
        .message
        .contains("log Z = -21 is 21 nats from 0 (more than 20)"));
    let healthy: Vec<_> = [10.4, 8.0, 3.0, 0.5, 0.1, -0.2]
        .iter()
        .map(|x| v(&[*x]))
        .collect();
    assert!(
        evaluate("OutputLogitDivergence", &[], log_partition_trial(&healthy))
            .firings
            .is_empty()
    );
    let p = [("threshold", "2")];
    assert_eq!(
        steps(&evaluate(
            "OutputLogitDivergence",
            &p,
            log_partition_trial(&drift)
        )),
        [0, 1, 2, 3, 4, 5]
    );
}

#[test]
fn output_logit_divergence_skips_non_scalars_and_nan() {
    let values = [v(&[50.0, 50.0]), v(&[f64::NAN]), v(&[1.0])];
    let e = evaluate("OutputLogitDivergence", &[], log_partition_trial(&values));
    assert!(e.firings.is_empty());
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 0 && r.message.contains("not a scalar")));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 1 && r.message.contains("NaN")));
}

// 25. UpdateRatio

/// These trials' weights are vectors: judged only with `min_ndim` 1.
const ONE_D: [(&str, &str); 1] = [("min_ndim", "1")];

/// `w` (collection `weights`) of 100 elements ≈ 1 moved by `delta[s]` per element at step s.
fn update_trial(deltas: &[f64]) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    w.collection("weights", &["w"]);
    let mut x: Vec<f64> = (0..100).map(|i| 1.0 + 0.1 * wobble(i)).collect();
    w.step(0, &[("w", v(&x))]);
    for (s, d) in deltas.iter().enumerate() {
        for (i, e) in x.iter_mut().enumerate() {
            *e += d * if i % 2 == 0 { 1.0 } else { -1.0 };
        }
        w.step(s as i64 + 1, &[("w", v(&x))]);
    }
    w.finish()
}

#[test]
fn update_ratio_fires_outside_the_band() {
    // ‖ΔW‖/‖W‖ ≈ |d| (every element moves by d, ‖W‖ ≈ √100): 1e-3 is healthy.
    let e = evaluate(
        "UpdateRatio",
        &ONE_D,
        update_trial(&[1e-3, 1e-3, 0.05, 1e-3]),
    );
    assert_eq!(steps(&e), [3]);
    assert!(
        e.firings[0].message.contains("between steps 2 and 3"),
        "{}",
        e.firings[0].message
    );
    assert!(
        e.firings[0].message.contains("outside [1e-4, 1e-2]"),
        "{}",
        e.firings[0].message
    );
    assert_eq!(
        steps(&evaluate(
            "UpdateRatio",
            &ONE_D,
            update_trial(&[1e-3, 1e-6, 1e-3])
        )),
        [2]
    );
    assert!(evaluate(
        "UpdateRatio",
        &ONE_D,
        update_trial(&[1e-3, 2e-3, 5e-4, 1e-3])
    )
    .firings
    .is_empty());
    // Warm-up is not judged.
    let p = [("start_step", "3"), ("min_ndim", "1")];
    assert!(
        evaluate("UpdateRatio", &p, update_trial(&[1e-6, 1e-6, 1e-3]))
            .firings
            .is_empty()
    );
}

#[test]
fn update_ratio_judges_only_matrices_by_default() {
    // A vector (a norm gain, a bias) moving by 0.05 of itself: not judged by default.
    assert!(evaluate("UpdateRatio", &[], update_trial(&[1e-3, 0.05]))
        .firings
        .is_empty());
    let mut w = TrialWriter::new();
    w.collection("weights", &["m"]);
    let m = |d: f64| {
        shaped(
            &[10, 10],
            (0..100).map(|i| 1.0 + d * (i % 2) as f64).collect(),
        )
    };
    w.step(0, &[("m", m(0.0))]);
    w.step(1, &[("m", m(0.5))]);
    assert_eq!(steps(&evaluate("UpdateRatio", &[], w.finish())), [1]);
}

#[test]
fn update_ratio_skips_zero_weights_and_shape_changes() {
    let mut w = TrialWriter::new();
    w.collection("weights", &["bias", "w"]);
    w.step(0, &[("bias", v(&[0.0, 0.0])), ("w", v(&[1.0, 1.0]))]);
    w.step(1, &[("bias", v(&[0.1, 0.1])), ("w", v(&[1.0, 1.0, 1.0]))]);
    let e = evaluate("UpdateRatio", &ONE_D, w.finish());
    assert!(e.firings.is_empty());
    assert!(e
        .remarks
        .iter()
        .any(|r| r.tensor.as_deref() == Some("bias")));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.tensor.as_deref() == Some("w") && r.message.contains("shape changed")));
    let bad = build_rule(
        "UpdateRatio",
        &params(&[("min_ratio", "0.1"), ("max_ratio", "0.01")]),
        update_trial(&[]),
    );
    assert!(bad.is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Scaling the weights at both steps leaves the ratio, and so the decision, unchanged.
    #[test]
    fn update_ratio_is_scale_invariant(d in 1e-6f64..1.0, c in 1e-3f64..1e3) {
        let run = |scale: f64| {
            let mut w = TrialWriter::new();
            w.collection("weights", &["w"]);
            w.step(0, &[("w", v(&[scale, 2.0 * scale]))]);
            w.step(1, &[("w", v(&[scale * (1.0 + d), 2.0 * scale]))]);
            let e = evaluate("UpdateRatio", &ONE_D, w.finish());
            (steps(&e), e.firings.first().map(|f| f.message.split(" between").next().unwrap().to_owned()))
        };
        let (a, b) = (run(1.0), run(c));
        prop_assert_eq!(&a.0, &b.0);
        let fires = !(1e-4..=1e-2).contains(&(d / 5f64.sqrt()));
        prop_assert_eq!(a.0.len() == 1, fires);
        if let (Some(x), Some(y)) = (a.1, b.1) {
            // The printed ratios agree to the digits shown but the last.
            let parse = |m: &str| m.rsplit(' ').next().unwrap().parse::<f64>().unwrap();
            prop_assert!((parse(&x) - parse(&y)).abs() <= 1e-9 * parse(&x));
        }
    }
}

// 26. AdamEpsilon

/// Adam state of one parameter `optimizer/Net_fc.weight/…` at steps 1..: `exp_avg_sq` of
/// 10 elements, `v_small` of which are `small` and the rest 1e-4.
fn adam_trial(
    per_step: &[(usize, f64)],
    beta2: f64,
    eps: f64,
) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    let p = "optimizer/Net_fc.weight/";
    let names: Vec<String> = ["exp_avg_sq", "step", "eps", "beta1", "beta2"]
        .iter()
        .map(|k| format!("{p}{k}"))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    w.collection("optimizer_variables", &refs);
    for (i, &(n_small, small)) in per_step.iter().enumerate() {
        let step = i as i64 + 1;
        let mut v2 = vec![1e-4; 10];
        for x in v2.iter_mut().take(n_small) {
            *x = small;
        }
        w.step(
            step,
            &[
                (refs[0], v(&v2)),
                (refs[1], v(&[step as f64])),
                (refs[2], v(&[eps])),
                (refs[3], v(&[0.9])),
                (refs[4], v(&[beta2])),
            ],
        );
    }
    w.finish()
}

#[test]
fn adam_epsilon_fires_when_most_bias_corrected_second_moments_are_below_eps() {
    // exp_avg_sq 1e-20 at step 3 with beta2 0.95: v̂ = 1e-20 / (1 − 0.95³) ≈ 7e-20,
    // √v̂ ≈ 2.6e-10 < 1e-8. Six of ten (60 %) is more than half.
    let trial = adam_trial(&[(0, 0.0), (2, 1e-20), (6, 1e-20), (9, 1e-20)], 0.95, 1e-8);
    let e = evaluate("AdamEpsilon", &[], trial);
    assert_eq!(steps(&e), [3, 4]);
    let m = &e.firings[0].message;
    assert!(
        m.starts_with("6 of 10 parameters (60.0%) have √v̂ < ε = 1e-8"),
        "{m}"
    );
    assert!(m.contains("beta2 0.95 at step 3"), "{m}");
    // Healthy: gradients well above ε.
    assert!(
        evaluate("AdamEpsilon", &[], adam_trial(&[(0, 0.0); 4], 0.95, 1e-8))
            .firings
            .is_empty()
    );
    // Exactly half is not more than half.
    assert!(
        evaluate("AdamEpsilon", &[], adam_trial(&[(5, 1e-20)], 0.95, 1e-8))
            .firings
            .is_empty()
    );
}

#[test]
fn adam_epsilon_applies_the_bias_correction() {
    // Step 1 with beta2 0.999: v̂ = exp_avg_sq / 0.001. exp_avg_sq 4e-20 gives √v̂ ≈ 6.3e-9
    // < 1e-8; exp_avg_sq 2e-19 gives √v̂ ≈ 1.4e-8 ≥ 1e-8, though uncorrected it would be
    // √2e-19 ≈ 4.5e-10 and fire.
    assert_eq!(
        steps(&evaluate(
            "AdamEpsilon",
            &[],
            adam_trial(&[(10, 4e-20)], 0.999, 1e-8)
        )),
        [1]
    );
    assert!(
        evaluate("AdamEpsilon", &[], adam_trial(&[(10, 2e-19)], 0.999, 1e-8))
            .firings
            .is_empty()
    );
    // An ε given as a parameter wins over the saved one.
    let p = [("eps", "1e-7")];
    assert_eq!(
        steps(&evaluate(
            "AdamEpsilon",
            &p,
            adam_trial(&[(10, 2e-19)], 0.999, 1e-8)
        )),
        [1]
    );
}

#[test]
fn adam_epsilon_skips_missing_or_bad_state() {
    let w = TrialWriter::new();
    w.step(1, &[("optimizer/Net_a/exp_avg_sq", v(&[1e-30; 4]))]);
    w.step(
        2,
        &[
            (
                "optimizer/Net_a/exp_avg_sq",
                v(&[1e-30, f64::NAN, -1.0, 1e-30]),
            ),
            ("optimizer/Net_a/step", v(&[0.0])),
            ("optimizer/Net_a/beta2", v(&[0.95])),
            ("optimizer/Net_a/eps", v(&[1e-8])),
        ],
    );
    w.step(
        3,
        &[
            (
                "optimizer/Net_a/exp_avg_sq",
                v(&[1e-30, f64::NAN, -1.0, 1e-30]),
            ),
            ("optimizer/Net_a/step", v(&[3.0])),
            ("optimizer/Net_a/beta2", v(&[0.95])),
            ("optimizer/Net_a/eps", v(&[1e-8])),
        ],
    );
    let e = evaluate("AdamEpsilon", &[], w.finish());
    // Step 1 lacks step/beta2/eps, step 2 has step 0: both skipped. Step 3: two of the two
    // usable moments are below ε.
    assert_eq!(steps(&e), [3]);
    assert!(e.firings[0].message.starts_with("2 of 2 parameters"));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 1 && r.message.contains("missing or out of range")));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 2 && r.message.contains("step Some(0.0)")));
    assert!(e
        .remarks
        .iter()
        .any(|r| r.step == 3 && r.message.contains("2 of 4 second moments")));
}

// 27. ActivationOutlier

/// Layer outputs `l0`, `l1` (collection `outputs`) at steps 0..n with max magnitude ≈ 20
/// (large, and normal), `l1` jumping × `jump` at step `at`. With `reductions`, only
/// `max`/`min` reductions are written.
fn activation_trial(
    n: i64,
    at: Option<(i64, f64)>,
    reductions: bool,
) -> std::sync::Arc<smdebug_trial::Trial> {
    let mut w = TrialWriter::new();
    w.collection("outputs", &["l0", "l1"]);
    for s in 0..n {
        let base = 20.0 * (1.0 + 0.02 * wobble(s));
        let j = match at {
            Some((a, x)) if a == s => x,
            _ => 1.0,
        };
        let l0 = [1.0, -base, 3.0];
        let l1 = [0.5, 2.0, -base * j];
        if reductions {
            w.step(
                s,
                &[
                    ("smdebug/reductions/max/l0", v(&[3.0])),
                    ("smdebug/reductions/min/l0", v(&[-base])),
                    ("smdebug/reductions/max/l1", v(&[2.0])),
                    ("smdebug/reductions/min/l1", v(&[-base * j])),
                ],
            );
        } else {
            w.step(s, &[("l0", v(&l0)), ("l1", v(&l1))]);
        }
    }
    w.finish()
}

#[test]
fn activation_outlier_fires_on_a_jump_over_the_layers_own_baseline() {
    for reductions in [false, true] {
        let e = evaluate(
            "ActivationOutlier",
            &[],
            activation_trial(140, Some((130, 3.0)), reductions),
        );
        assert_eq!(steps(&e), [130], "reductions {reductions}");
        assert_eq!(e.firings[0].tensor.as_deref(), Some("l1"));
        assert!(
            e.firings[0].message.starts_with("max |activation| "),
            "{}",
            e.firings[0].message
        );
        assert!(e
            .remarks
            .iter()
            .any(|r| r.step == 131 && r.message.contains("recovered")));
    }
}

#[test]
fn activation_outlier_is_silent_on_large_but_steady_activations() {
    assert!(
        evaluate("ActivationOutlier", &[], activation_trial(200, None, false))
            .firings
            .is_empty()
    );
    // A magnitude of 1000 from the start is this layer's normal.
    let mut w = TrialWriter::new();
    w.collection("outputs", &["big"]);
    for s in 0..20 {
        w.step(s, &[("big", v(&[1000.0 + wobble(s), -3.0]))]);
    }
    assert!(
        evaluate("ActivationOutlier", &[("window_size", "8")], w.finish())
            .firings
            .is_empty()
    );
}

#[test]
fn new_rules_run_on_a_trial_without_their_tensors() {
    let w = TrialWriter::new();
    w.step(0, &[("x", v(&[1.0]))]);
    w.step(1, &[("x", v(&[2.0]))]);
    let trial = w.finish();
    for name in [
        "GradientNormSpike",
        "AttentionLogitGrowth",
        "OutputLogitDivergence",
        "UpdateRatio",
        "AdamEpsilon",
        "ActivationOutlier",
    ] {
        let e = evaluate(name, &[], trial.clone());
        assert!(e.firings.is_empty(), "{name}");
        assert_eq!(e.steps_evaluated, 2, "{name}");
    }
}
