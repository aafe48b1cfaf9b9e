//! The framework hooks' figures of `cargo xtask bench`: the step time of a small model trained
//! on the CPU (crates/python/bench/framework_steps.py) with no hook, with smdebug_rs's hook
//! and with the original smdebug's, each framework in its venv with the release wheel
//! installed: a CNN with the module hook for PyTorch and MXNet, a dense Keras model in
//! `model.fit` with the `KerasHook` callback for TensorFlow, where the original does not run
//! (smdebug 1.0.34 switches itself off on TensorFlow 2.12 and newer): there, no hook against
//! ours only.
//!
//! Two cases: weights, gradients and losses every 100 steps (goal: our step at most 3 %
//! slower than no hook, i.e. ratio no-hook time / our time ≥ 0.97) and weights and
//! gradients every step (goal: the time the original adds to a step at least 5 × the time
//! ours adds; without the original, no-hook time / our time, reported without a goal). Each
//! measurement is a process of its own; the hooks' processes are interleaved over several
//! rounds and each figure is the median over the rounds, so that a slow moment of a shared
//! machine hits all hooks alike.
use crate::peer::{Venv, MXNET, TF, TORCH};
use crate::util::{output, root, step};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// The hooks of a round, in the order they run: no hook, ours, the original (where it runs).
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

/// A framework measured: its name in framework_steps.py and the rows, its venv, why the
/// original smdebug is not measured there (if it is not), and by how much the steps of
/// [`CASES`] are multiplied, so that each run lasts about as long as the others (a step of
/// the small Keras model takes about a third of a CNN step's time) and a moment of a busy
/// machine weighs as little there.
struct Framework {
    name: &'static str,
    venv: &'static Venv,
    no_original: Option<&'static str>,
    step_scale: u32,
}

impl Framework {
    /// The hooks of a round in this framework's venv.
    fn hooks(&self) -> &'static [&'static str] {
        match self.no_original {
            Some(_) => &HOOKS[..2],
            None => &HOOKS,
        }
    }
}

/// The frameworks measured.
const FRAMEWORKS: [Framework; 3] = [
    Framework {
        name: "pytorch",
        venv: &TORCH,
        no_original: None,
        step_scale: 1,
    },
    Framework {
        name: "mxnet",
        venv: &MXNET,
        no_original: None,
        step_scale: 1,
    },
    Framework {
        name: "tensorflow",
        venv: &TF,
        no_original: Some("the original does not run on TF 2.21"),
        step_scale: 4,
    },
];

/// Ratio goals: no-hook time / our time at interval 100, and original's added time / ours
/// every step.
const INTERVAL_GOAL: f64 = 0.97;
const EVERY_GOAL: f64 = 5.0;

/// The figures of every framework, error rows for a framework whose venv or run failed.
pub fn rows(quick: bool) -> Vec<Value> {
    let mut rows = Vec::new();
    for framework in &FRAMEWORKS {
        match framework_rows(framework, quick) {
            Ok(r) => rows.extend(r),
            Err(e) => rows.push(json!({
                "name": format!("{}: step time with the hooks", framework.name),
                "error": format!("{e:#}"),
            })),
        }
    }
    rows
}

fn framework_rows(framework: &Framework, quick: bool) -> Result<Vec<Value>> {
    let python = framework.venv.ensure()?;
    crate::python::install_wheel(&python, true)?;
    let rounds = if quick { 3 } else { 5 };
    let hooks = framework.hooks();
    let name = framework.name;
    let mut rows = Vec::new();
    for (case, steps, label) in CASES {
        step(&format!(
            "{name} step time, {label}: {rounds} rounds of {hooks:?}"
        ));
        let mut times = vec![Vec::new(); hooks.len()];
        for _ in 0..rounds {
            for (i, hook) in hooks.iter().enumerate() {
                times[i].push(step_seconds(
                    &python,
                    name,
                    hook,
                    case,
                    steps * framework.step_scale,
                )?);
            }
        }
        let mut medians = times.into_iter().map(median);
        let (none, ours) = (
            medians.next().unwrap_or(f64::NAN),
            medians.next().unwrap_or(f64::NAN),
        );
        let original = match framework.no_original {
            Some(why) => Err(why),
            None => Ok(medians.next().unwrap_or(f64::NAN)),
        };
        rows.extend(case_rows(name, case, label, none, ours, original));
    }
    Ok(rows)
}

/// The rows of one case from the median step times (seconds); `original` is the
/// original's, or why it was not measured.
fn case_rows(
    framework: &str,
    case: &str,
    label: &str,
    none: f64,
    ours: f64,
    original: Result<f64, &str>,
) -> Vec<Value> {
    let ms = |s: f64| s * 1e3;
    let seconds = json!({"none": none, "smdebug_rs": ours, "smdebug": original.ok()});
    let ours_vs_none = |goal: Option<f64>, note: &str| {
        json!({
            "name": format!("{framework}: step, {label}, smdebug_rs vs no hook{note}"),
            "value": ms(ours), "unit": "ms", "baseline": "no hook",
            "ratio": none / ours, "goal": goal, "seconds": ours,
            "baseline_seconds": none, "step_seconds": seconds,
        })
    };
    let original = match original {
        Ok(original) => original,
        Err(_) if case == "interval" => return vec![ours_vs_none(Some(INTERVAL_GOAL), "")],
        Err(why) => return vec![ours_vs_none(None, &format!(" (no peer ratio: {why})"))],
    };
    if case == "interval" {
        vec![
            ours_vs_none(Some(INTERVAL_GOAL), ""),
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
        let rows = case_rows("pytorch", "interval", "l", 0.010, 0.0102, Ok(0.012));
        assert_eq!(rows.len(), 2);
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 0.010 / 0.0102).abs() < 1e-12);
        assert!(r >= INTERVAL_GOAL);
        assert!(rows[1]["goal"].is_null());
    }

    #[test]
    fn every_step_row_compares_added_time() {
        let rows = case_rows("mxnet", "every", "l", 0.010, 0.011, Ok(0.020));
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
        // Ours measured faster than no hook: the ratio stays finite.
        let rows = case_rows("mxnet", "every", "l", 0.010, 0.009, Ok(0.020));
        assert!(rows[0]["ratio"].as_f64().unwrap().is_finite());
    }

    #[test]
    fn without_the_original_ours_is_compared_with_no_hook_and_the_row_says_why() {
        let rows = case_rows("tensorflow", "interval", "l", 0.010, 0.0102, Err("gone"));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["goal"].as_f64(), Some(INTERVAL_GOAL));
        assert!(rows[0]["step_seconds"]["smdebug"].is_null());
        let rows = case_rows("tensorflow", "every", "l", 0.010, 0.0125, Err("gone"));
        assert_eq!(rows.len(), 1);
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        assert!(rows[0]["goal"].is_null());
        assert!(rows[0]["name"]
            .as_str()
            .unwrap()
            .ends_with("(no peer ratio: gone)"));
    }

    #[test]
    fn the_original_runs_only_where_it_is_measured() {
        for f in &FRAMEWORKS {
            assert_eq!(
                f.hooks().contains(&"smdebug"),
                f.no_original.is_none(),
                "{}",
                f.name
            );
            assert_eq!(&f.hooks()[..2], &["none", "smdebug_rs"]);
        }
    }

    #[test]
    fn median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
