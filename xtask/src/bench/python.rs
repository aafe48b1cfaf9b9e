//! Rows of the Python package: smdebug_rs against smdebug 1.0.34 from the peer venv's
//! Python, reading trials and writing through the hook.
use crate::python::install_wheel;
use crate::util::{output, root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether [`many_small_trial`] is written already.
pub(crate) fn many_small_written() -> bool {
    root()
        .join("target/bench-python-many-small/training_job_end.ts")
        .exists()
}

/// The many-small-tensors trial of the Python benchmarks (8 workers × 60 steps × 250
/// tensors of 10 floats), written by `smdebug synth` from crates/python/bench/many_small.json.
pub(crate) fn many_small_trial(smdebug: &Path) -> Result<PathBuf> {
    let dir = root().join("target/bench-python-many-small");
    if dir.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    step("smdebug synth many_small.json (Python benchmarks: 8 x 60 x 250 tensors)");
    let tmp = dir.with_extension("partial");
    for d in [&dir, &tmp] {
        if d.exists() {
            std::fs::remove_dir_all(d)?;
        }
    }
    crate::util::run(
        Command::new(smdebug)
            .arg("synth")
            .arg(root().join("crates/python/bench/many_small.json"))
            .arg(&tmp),
    )?;
    std::fs::rename(&tmp, &dir)?;
    Ok(dir)
}

/// Runs of each smdebug_rs phase in [`bench_rows`]; the best counts.
const OURS_REPEAT: u32 = 5;

/// Runs crates/python/bench/bench_python.py for one package on one trial.
fn time_package(python: &Path, trial: &Path, package: &str, repeat: u32) -> Result<Value> {
    step(&format!(
        "Python benchmark: {package} on {}",
        trial.display()
    ));
    let out = output(
        Command::new(python)
            .arg(root().join("crates/python/bench/bench_python.py"))
            .arg(trial)
            .args(["--package", package, "--repeat", &repeat.to_string()])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    serde_json::from_str(out.trim()).with_context(|| format!("bench_python.py printed {out}"))
}

/// `cargo xtask bench` rows of the Python package: smdebug_rs against smdebug, both from the
/// peer venv's Python on the same trials — open, every value and `to_pandas` (against the
/// same DataFrame built with smdebug + numpy + pandas) on the `large` preset and on many
/// small tensors. The wheel is built in release mode first. `python_repeat` runs of the
/// original count (its best), [`OURS_REPEAT`] of ours (a few milliseconds each for the
/// open, where the best of two still held a first open's noise).
pub fn bench_rows(python: &Path, large: &Path, smdebug: &Path, python_repeat: u32) -> Vec<Value> {
    // (trial label, every-value goal)
    const TRIALS: [(&str, f64); 2] = [("large", 10.0), ("8x60x250 small tensors", 30.0)];
    let names = |label: &str| {
        [
            (
                format!("python: open {label} trial, smdebug_rs vs smdebug"),
                "open",
                50.0,
            ),
            (
                format!("python: every value of {label} trial, smdebug_rs vs smdebug"),
                "every_value",
                f64::NAN,
            ),
            (
                format!("python: to_pandas of {label} trial vs smdebug+numpy+pandas"),
                "to_pandas",
                20.0,
            ),
        ]
    };
    let mut rows = Vec::new();
    let prepared = install_wheel(python, true).and_then(|()| {
        if !large.join("training_job_end.ts").exists() {
            bail!("{} is missing or incomplete", large.display());
        }
        Ok(vec![large.to_path_buf(), many_small_trial(smdebug)?])
    });
    let trials = match prepared {
        Ok(t) => t,
        Err(e) => {
            let e = format!("{e:#}");
            for (label, _) in TRIALS {
                for (name, _, _) in names(label) {
                    rows.push(json!({"name": name, "error": e}));
                }
            }
            for (name, _, _, _) in HOOK_ROWS {
                rows.push(json!({"name": name, "error": e}));
            }
            return rows;
        }
    };
    rows.extend(hook_rows(python));
    for ((label, value_goal), trial) in TRIALS.iter().zip(&trials) {
        let timed = time_package(python, trial, "smdebug_rs", OURS_REPEAT)
            .and_then(|ours| Ok((ours, time_package(python, trial, "smdebug", python_repeat)?)));
        for (name, key, goal) in names(label) {
            let goal = if key == "every_value" {
                *value_goal
            } else {
                goal
            };
            let row = match &timed {
                Ok((ours, py)) => match (ours[key].as_f64(), py[key].as_f64()) {
                    (Some(o), Some(p)) => json!({
                        "name": name, "value": o * 1e3, "unit": "ms",
                        "baseline": format!("smdebug 1.0.34, same Python (best of {python_repeat})"),
                        "ratio": p / o, "goal": goal, "seconds": o, "baseline_seconds": p,
                    }),
                    _ => json!({"name": name, "error": format!("no {key} timing: {ours} / {py}")}),
                },
                Err(e) => json!({"name": name, "error": format!("{e:#}")}),
            };
            rows.push(row);
        }
    }
    rows
}

/// The writer-hook rows: (name, key of bench_hook.py's output, unit, bound). The
/// goals are absolute (≤ 5 µs per small save, ≥ 2000 MB/s for 1 MiB tensors), so a row's
/// ratio is ours against the bound (≥ 1 meets it, as the export memory row does); the
/// original's figure from the same run is the row's `baseline_value`.
const HOOK_ROWS: [(&str, &str, &str, f64); 2] = [
    (
        "python: hook save of a small tensor, training-thread time, smdebug_rs vs smdebug",
        "small_save_us",
        "us",
        5.0,
    ),
    (
        "python: hook 1 MiB tensors, first step to close, smdebug_rs vs smdebug",
        "big_mb_per_s",
        "MB/s",
        2000.0,
    ),
];

/// Runs crates/python/bench/bench_hook.py for one package.
fn time_hook(python: &Path, package: &str) -> Result<Value> {
    step(&format!("Python benchmark: writer hook, {package}"));
    let out = output(
        Command::new(python)
            .arg(root().join("crates/python/bench/bench_hook.py"))
            .args(["--package", package])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    serde_json::from_str(out.trim()).with_context(|| format!("bench_hook.py printed {out}"))
}

/// `cargo xtask bench` rows of the writer hook from Python: smdebug_rs.Hook against the
/// original's hook (crates/python/tests/same_calls.py), both from the peer venv's Python
/// (the release wheel is installed by `bench_rows`).
fn hook_rows(python: &Path) -> Vec<Value> {
    let timed =
        time_hook(python, "smdebug_rs").and_then(|ours| Ok((ours, time_hook(python, "smdebug")?)));
    HOOK_ROWS
        .iter()
        .map(|&(name, key, unit, bound)| match &timed {
            Ok((ours, py)) => match (ours[key].as_f64(), py[key].as_f64()) {
                (Some(o), Some(p)) => {
                    // Time: lower is better; throughput: higher is better.
                    let (ratio, vs_original) = if unit == "us" {
                        (bound / o, p / o)
                    } else {
                        (o / bound, o / p)
                    };
                    json!({
                        "name": name, "value": o, "unit": unit,
                        "baseline": format!("bound {bound} {unit}; smdebug 1.0.34's hook, same Python: {p:.1} {unit} ({vs_original:.0}x)"),
                        "baseline_value": p, "vs_original": vs_original,
                        "ratio": ratio, "goal": 1.0,
                    })
                }
                _ => json!({"name": name, "error": format!("no {key}: {ours} / {py}")}),
            },
            Err(e) => json!({"name": name, "error": format!("{e:#}")}),
        })
        .collect()
}
