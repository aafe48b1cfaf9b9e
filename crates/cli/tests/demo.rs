//! `smdebug demo --scenario S`: the built-in rule matching each scenario fires while the
//! demo trains, and the healthy run fires none. Steps-to-detection are printed
//! (`cargo test -p smdebug-cli --test demo -- --nocapture`).
#![cfg(feature = "demo")]

use std::process::Command;

/// Runs the demo with `--json` and returns its firings (rule, step).
fn firings(scenario: &str) -> Vec<(String, i64)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(["demo", "--json", "--scenario", scenario, "--out"])
        .arg(&out)
        .output()
        .expect("run smdebug demo");
    assert!(
        o.status.success(),
        "smdebug demo --scenario {scenario}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.join("training_job_end.ts").exists());
    assert!(
        dir.path().join("trial.html").exists(),
        "the report beside the trial"
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object per line");
            for key in ["rule", "step", "tensor", "message"] {
                assert!(v.get(key).is_some(), "{key} missing in {l}");
            }
            (
                v["rule"].as_str().unwrap().to_owned(),
                v["step"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn detects(scenario: &str, rule: &str) -> Vec<(String, i64)> {
    let f = firings(scenario);
    let first = f.iter().filter(|(r, _)| r == rule).map(|(_, s)| *s).min();
    let mut others: Vec<&str> = f.iter().map(|(r, _)| r.as_str()).collect();
    others.sort_unstable();
    others.dedup();
    println!(
        "{scenario}: {rule} first fired at global step {first:?} (rules that fired: {others:?})"
    );
    assert!(first.is_some(), "{rule} did not fire on {scenario}: {f:?}");
    f
}

#[test]
fn healthy_fires_no_rule() {
    let f = firings("healthy");
    assert!(f.is_empty(), "rules fired on the healthy run: {f:?}");
}

#[test]
fn vanishing_gradient_is_detected() {
    detects("vanishing-gradient", "VanishingGradient");
}

/// Diverged activations are ExplodingTensor's finding: the activation rules set the
/// non-finite values aside instead of calling the units dead or saturated (DeadRelu used to
/// fire beside ExplodingTensor once the ReLU inputs were NaN).
#[test]
fn exploding_is_detected_and_not_blamed_on_dead_or_saturated_units() {
    let f = detects("exploding", "ExplodingTensor");
    let wrong: Vec<_> = f
        .iter()
        .filter(|(r, _)| r == "DeadRelu" || r == "SaturatedActivation")
        .collect();
    assert!(
        wrong.is_empty(),
        "non-finite activations blamed on units: {wrong:?}"
    );
}

#[test]
fn dead_relu_is_detected() {
    detects("dead-relu", "DeadRelu");
}

#[test]
fn stalled_loss_is_detected() {
    detects("stalled-loss", "LossNotDecreasing");
}

#[test]
fn overfit_is_detected() {
    detects("overfit", "Overfit");
}

#[test]
fn poor_initialization_is_detected() {
    detects("poor-initialization", "PoorWeightInitialization");
}

#[test]
fn saturated_activation_is_detected() {
    detects("saturated-activation", "SaturatedActivation");
}

#[test]
fn unknown_scenario_is_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(["demo", "--scenario", "nope"])
        .output()
        .expect("run smdebug demo");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("vanishing-gradient"));
}

/// The human output names each rule's first firing once and ends with one line per rule
/// (times fired, first and last step) and the report's path; `--all-firings` prints every
/// firing.
#[test]
fn exploding_prints_first_firings_a_tally_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
            .args(["demo", "--scenario", "exploding", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .expect("run smdebug demo");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = run(&[]);
    // The flight recorder writes the steps before the first NaN, so other rules (e.g.
    // PoorWeightInitialization on the exploding activations of step 1) may fire too: each
    // rule that fired gets exactly one first-firing line and one tally line.
    let fired: Vec<&str> = text.lines().filter(|l| l.starts_with("rule ")).collect();
    let tally: Vec<&str> = text.lines().filter(|l| l.contains(": fired ")).collect();
    assert_eq!(
        fired.len(),
        tally.len(),
        "one first firing per rule:\n{text}"
    );
    assert_eq!(
        fired
            .iter()
            .filter(|l| l.starts_with("rule ExplodingTensor fired at step "))
            .count(),
        1,
        "one first firing of ExplodingTensor:\n{text}"
    );
    for line in &tally {
        assert!(
            line.contains(" times, first at step ") && line.contains(", last at step "),
            "{text}"
        );
    }
    assert!(
        tally
            .iter()
            .any(|l| l.starts_with("ExplodingTensor: fired ")),
        "{text}"
    );
    assert!(text.lines().count() < 20, "condensed output:\n{text}");
    let report = dir.path().join("trial.html");
    assert!(
        text.contains(&format!("report: {}", report.display())),
        "{text}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains(r#"data-rule="ExplodingTensor" data-step="#));

    std::fs::remove_dir_all(&out).unwrap();
    let all = run(&["--all-firings", "--no-report"]);
    let n = all.lines().filter(|l| l.starts_with("rule ")).count();
    let times: usize = tally
        .iter()
        .map(|line| {
            line.split(" fired ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap()
        })
        .sum();
    assert_eq!(n, times, "--all-firings prints every firing:\n{all}");
}
