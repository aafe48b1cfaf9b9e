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
//! ours adds; without the original, no-hook time / our time, reported without a goal).
//!
//! Measured in pairs: each process trains an identical model without a hook beside the
//! hooked one, alternately (blocks of steps for PyTorch and MXNet, calls of `fit` for
//! Keras), and its no-hook time is that model's. Two processes of the same script differ by
//! more than 3 %, one process's two models by far less; a hook's figure is the median over
//! rounds of what each process measured. The hooks' processes are interleaved over the
//! rounds so that a slow moment of a shared machine hits all hooks alike.
use crate::peer::{Venv, MXNET, TF, TORCH};
use crate::util::{output, root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The hooks measured: ours and the original (where it runs).
const HOOKS: [&str; 2] = ["smdebug_rs", "smdebug"];

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
/// [`CASES`] are multiplied, so that each run lasts about as long as the others (a step of the small
/// Keras model takes about a third of a CNN step's time) and a moment of a busy machine
/// weighs as little there.
struct Framework {
    name: &'static str,
    venv: &'static Venv,
    no_original: Option<&'static str>,
    step_scale: u32,
}

impl Framework {
    /// The hooks measured in this framework's venv.
    fn hooks(&self) -> &'static [&'static str] {
        match self.no_original {
            Some(_) => &HOOKS[..1],
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

/// One process's mean step times (seconds): without the hook and with it.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    /// Without the hook.
    pub plain: f64,
    /// With it.
    pub hooked: f64,
}

/// A hook's figures: medians over the rounds' [`Pair`]s.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    /// No-hook time.
    pub plain: f64,
    /// Hooked time.
    pub hooked: f64,
    /// No-hook time / hooked time.
    pub ratio: f64,
    /// Hooked time − no-hook time.
    pub added: f64,
}

impl Figures {
    /// The medians of `pairs`, each ratio and difference taken within its round.
    pub fn of(pairs: &[Pair]) -> Figures {
        let m = |f: fn(&Pair) -> f64| median(pairs.iter().map(f).collect());
        Figures {
            plain: m(|p| p.plain),
            hooked: m(|p| p.hooked),
            ratio: m(|p| p.plain / p.hooked),
            added: m(|p| p.hooked - p.plain),
        }
    }
}

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
    rows.extend(super::pytorch_practice::rows(quick));
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
            "{name} step time, {label}: {rounds} rounds of {hooks:?}, each beside no hook"
        ));
        let steps = steps * framework.step_scale;
        let mut pairs = vec![Vec::new(); hooks.len()];
        for _ in 0..rounds {
            for (i, hook) in hooks.iter().enumerate() {
                let t = step_times(&python, name, hook, case, steps)?;
                pairs[i].push(Pair {
                    plain: time(&t, "plain_s")?,
                    hooked: time(&t, "hooked_s")?,
                });
            }
        }
        let mut figures = pairs.iter().map(|p| Figures::of(p));
        let ours = figures.next().context("no hook measured")?;
        let original = match framework.no_original {
            Some(why) => Err(why),
            None => Ok(figures.next().context("the original not measured")?),
        };
        rows.extend(case_rows(name, case, label, ours, original));
    }
    Ok(rows)
}

/// The rows of one case from the hooks' figures; `original` is the original's, or why it
/// was not measured.
fn case_rows(
    framework: &str,
    case: &str,
    label: &str,
    ours: Figures,
    original: Result<Figures, &str>,
) -> Vec<Value> {
    let ms = |s: f64| s * 1e3;
    let seconds = |f: &Figures| json!({"no_hook": f.plain, "hook": f.hooked});
    let step_seconds = json!({
        "smdebug_rs": seconds(&ours),
        "smdebug": original.as_ref().ok().map(seconds),
    });
    let ours_vs_none = |goal: Option<f64>, note: &str| {
        json!({
            "name": format!("{framework}: step, {label}, smdebug_rs vs no hook{note}"),
            "value": ms(ours.hooked), "unit": "ms", "baseline": "no hook",
            "ratio": ours.ratio, "goal": goal, "seconds": ours.hooked,
            "baseline_seconds": ours.plain, "step_seconds": step_seconds,
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
                "value": ms(original.hooked), "unit": "ms", "baseline": "no hook",
                "ratio": original.ratio, "goal": null, "seconds": original.hooked,
                "baseline_seconds": original.plain, "step_seconds": step_seconds,
            }),
        ]
    } else {
        // A hook measured faster than no hook (noise) adds nothing.
        let added = |f: &Figures| f.added.max(1e-9);
        vec![json!({
            "name": format!("{framework}: time added to a step, {label}, original/ours"),
            "value": ms(ours.added), "unit": "ms", "baseline": "the original's added time",
            "ratio": added(&original) / added(&ours), "goal": EVERY_GOAL,
            "seconds": ours.added, "baseline_seconds": original.added,
            "step_seconds": step_seconds,
        })]
    }
}

/// The step times framework_steps.py printed (`plain_s`, `hooked_s`).
fn step_times(
    python: &Path,
    framework: &str,
    hook: &str,
    case: &str,
    steps: u32,
) -> Result<HashMap<String, f64>> {
    let script = root().join("crates/python/bench/framework_steps.py");
    let out = output(
        Command::new(python)
            .arg(&script)
            .args([framework, hook, case, &steps.to_string()])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let last = out
        .lines()
        .last()
        .with_context(|| format!("{} printed nothing", script.display()))?;
    let times: HashMap<String, f64> = serde_json::from_str(last)
        .with_context(|| format!("{} printed {out}", script.display()))?;
    if times.is_empty() || times.values().any(|t| !t.is_finite() || *t <= 0.0) {
        bail!("{} printed no step times: {last}", script.display());
    }
    Ok(times)
}

fn time(times: &HashMap<String, f64>, key: &str) -> Result<f64> {
    times
        .get(key)
        .copied()
        .with_context(|| format!("framework_steps.py printed no {key}: {times:?}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(plain: f64, hooked: f64) -> Figures {
        Figures::of(&[Pair { plain, hooked }])
    }

    #[test]
    fn interval_rows_compare_with_no_hook() {
        let (ours, original) = (figures(0.010, 0.0102), figures(0.0101, 0.012));
        let rows = case_rows("pytorch", "interval", "l", ours, Ok(original));
        assert_eq!(rows.len(), 2);
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 0.010 / 0.0102).abs() < 1e-12);
        assert!(r >= INTERVAL_GOAL);
        assert!((rows[1]["ratio"].as_f64().unwrap() - 0.0101 / 0.012).abs() < 1e-12);
        assert!(rows[1]["goal"].is_null());
    }

    #[test]
    fn every_step_row_compares_added_time() {
        let original = figures(0.010, 0.020);
        let rows = case_rows("mxnet", "every", "l", figures(0.010, 0.011), Ok(original));
        let r = rows[0]["ratio"].as_f64().unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
        // Ours measured faster than no hook: the ratio stays finite.
        let rows = case_rows("mxnet", "every", "l", figures(0.010, 0.009), Ok(original));
        assert!(rows[0]["ratio"].as_f64().unwrap().is_finite());
    }

    #[test]
    fn each_figure_is_the_median_of_the_rounds() {
        // Each process's ratio, not the ratio of the medians: a slow process's pair counts
        // as one round.
        let pairs =
            [(1.0, 1.01), (2.0, 2.2), (1.1, 1.1)].map(|(plain, hooked)| Pair { plain, hooked });
        let f = Figures::of(&pairs);
        assert!((f.ratio - 1.0 / 1.01).abs() < 1e-12, "{f:?}");
        assert!((f.added - 0.01).abs() < 1e-12, "{f:?}");
        assert_eq!((f.plain, f.hooked), (1.1, 1.1));
    }

    #[test]
    fn without_the_original_ours_is_compared_with_no_hook_and_the_row_says_why() {
        let why = "gone";
        let rows = case_rows(
            "tensorflow",
            "interval",
            "l",
            figures(0.010, 0.0102),
            Err(why),
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["goal"].as_f64(), Some(INTERVAL_GOAL));
        assert!(rows[0]["step_seconds"]["smdebug"].is_null());
        let rows = case_rows("tensorflow", "every", "l", figures(0.010, 0.0125), Err(why));
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
            assert_eq!(f.hooks()[0], "smdebug_rs");
        }
    }

    #[test]
    fn median_is_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
