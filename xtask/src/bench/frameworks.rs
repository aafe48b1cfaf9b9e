//! The framework hooks' figures of `cargo xtask bench`: the step time of a small CNN trained
//! on the CPU (crates/python/bench/framework_steps.py) with no hook, with smdebug_rs's module
//! hook and with the original smdebug's, for PyTorch and MXNet, each in its venv with the
//! release wheel installed.
//!
//! Two cases: weights, gradients and losses every 100 steps (goal: our step at most 3 %
//! slower than no hook, i.e. ratio no-hook time / our time ≥ 0.97) and weights and
//! gradients every step (goal: the time the original adds to a step at least 5 × the time
//! ours adds). Each measurement is a process of its own; the three hooks' processes are
//! interleaved over several rounds and each figure is the median over the rounds, so that
//! a slow moment of a shared machine hits all three alike.
use crate::peer::{Venv, MXNET, TORCH};
use crate::util::{output, root, step};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// The hooks of a round, in the order they run: no hook, ours, the original.
const HOOKS: [&str; 3] = ["none", "smdebug_rs", "smdebug"];

/// `(case, steps measured, label)` of framework_steps.py.
const CASES: [(&str, u32, &str); 2] = [
    (
        "interval",
        300,
        "save_interval 100 (weights, gradients, losses)",
    ),
    ("every", 100, "every step (weights, gradients)"),
];

/// The frameworks measured, with their venvs.
const FRAMEWORKS: [(&str, &Venv); 2] = [("pytorch", &TORCH), ("mxnet", &MXNET)];

/// Ratio goals: no-hook time / our time at interval 100, and original's added time / ours
/// every step.
const INTERVAL_GOAL: f64 = 0.97;
const EVERY_GOAL: f64 = 5.0;

/// The figures of every framework, error rows for a framework whose venv or run failed.
pub fn rows(quick: bool) -> Vec<Value> {
    let mut rows = Vec::new();
    for (framework, venv) in FRAMEWORKS {
        match framework_rows(framework, venv, quick) {
            Ok(r) => rows.extend(r),
            Err(e) => rows.push(json!({
                "name": format!("{framework}: step time with the hooks"),
                "error": format!("{e:#}"),
            })),
        }
    }
    rows
}

fn framework_rows(framework: &str, venv: &Venv, quick: bool) -> Result<Vec<Value>> {
    let python = venv.ensure()?;
    crate::python::install_wheel(&python, true)?;
    let rounds = if quick { 3 } else { 5 };
    let mut rows = Vec::new();
    for (case, steps, label) in CASES {
        step(&format!(
            "{framework} step time, {label}: {rounds} rounds of {HOOKS:?}"
        ));
        let mut times: [Vec<f64>; 3] = Default::default();
        for _ in 0..rounds {
            for (i, hook) in HOOKS.iter().enumerate() {
                times[i].push(step_seconds(&python, framework, hook, case, steps)?);
            }
        }
        let [none, ours, original] = times.map(median);
        rows.extend(case_rows(framework, case, label, none, ours, original));
    }
    Ok(rows)
}

/// The rows of one case from the median step times (seconds).
fn case_rows(
    framework: &str,
    case: &str,
    label: &str,
    none: f64,
    ours: f64,
    original: f64,
) -> Vec<Value> {
    let ms = |s: f64| s * 1e3;
    let seconds = json!({"none": none, "smdebug_rs": ours, "smdebug": original});
    if case == "interval" {
        vec![
            json!({
                "name": format!("{framework}: step, {label}, smdebug_rs vs no hook"),
                "value": ms(ours), "unit": "ms", "baseline": "no hook",
                "ratio": none / ours, "goal": INTERVAL_GOAL, "seconds": ours,
                "baseline_seconds": none, "step_seconds": seconds,
            }),
            json!({
                "name": format!("{framework}: step, {label}, original vs no hook"),
                "value": ms(original), "unit": "ms", "baseline": "no hook",
                "ratio": none / original, "goal": null, "seconds": original,
                "baseline_seconds": none, "step_seconds": seconds,
            }),
        ]
    } else {
        // What each hook adds to a step; a hook faster than no hook (noise) adds nothing.
        let added = |t: f64| (t - none).max(1e-9);
        vec![json!({
            "name": format!("{framework}: time added to a step, {label}, original/ours"),
            "value": ms(ours - none), "unit": "ms", "baseline": "the original's added time",
            "ratio": added(original) / added(ours), "goal": EVERY_GOAL, "seconds": ours,
            "baseline_seconds": original, "step_seconds": seconds,
        })]
    }
}

fn step_seconds(python: &Path, framework: &str, hook: &str, case: &str, steps: u32) -> Result<f64> {
    let script = root().join("crates/python/bench/framework_steps.py");
    let out = output(
        Command::new(python)
            .arg(&script)
            .args([framework, hook, case, &steps.to_string()])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let v: Value = serde_json::from_str(
        out.lines()
            .last()
            .with_context(|| format!("{} printed nothing", script.display()))?,
    )
    .with_context(|| format!("{} printed {out}", script.display()))?;
    v["step_s"]
        .as_f64()
        .with_context(|| format!("no step_s in {out}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_rows_compare_with_no_hook() {
        let rows = case_rows("pytorch", "interval", "l", 0.010, 0.0102, 0.012);
        assert_eq!(rows.len(), 2);
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 0.010 / 0.0102).abs() < 1e-12);
        assert!(r >= INTERVAL_GOAL);
        assert!(rows[1]["goal"].is_null());
    }

    #[test]
    fn every_step_row_compares_added_time() {
        let rows = case_rows("mxnet", "every", "l", 0.010, 0.011, 0.020);
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
        // Ours measured faster than no hook: the ratio stays finite.
        let rows = case_rows("mxnet", "every", "l", 0.010, 0.009, 0.020);
        assert!(rows[0]["ratio"].as_f64().unwrap().is_finite());
    }

    #[test]
    fn median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
