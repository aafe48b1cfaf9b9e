//! `cargo xtask bench` rows of the many-small-tensors trial, where a reader pays per
//! file, not per record: open, listing and every value of the 8 workers × 60 steps × 250 tensors of
//! 10 float32 trial the Python package's benchmarks use (written once by `smdebug synth`,
//! see [`super::python::many_small_trial`]), read by our reader
//! (crates/trial/benches/small.rs, criterion, the fastest sample) and by the real Python
//! smdebug (`tests/peer/trial_bench_read.py --every-worker`, the best of its runs), phase
//! for phase the same calls: every value is one `value(step, worker=w)` call per tensor,
//! step and worker, on a freshly opened trial. `cargo xtask bench --small` runs these rows
//! alone.
use crate::util::{cargo, root, run as exec, step};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

/// (criterion id, Python phase, row name, goal).
const ROWS: [(&str, &str, &str, Option<f64>); 3] = [
    (
        "trial_small/open",
        "trial/open",
        "trial 8x60x250 small tensors: open vs Python smdebug",
        None,
    ),
    (
        "trial_small/list",
        "trial/list",
        "trial 8x60x250 small tensors: list tensors and steps vs Python smdebug",
        Some(50.0),
    ),
    (
        "trial_small/every_value",
        "trial/every_value",
        "trial 8x60x250 small tensors: every value (one call each) vs Python smdebug",
        Some(50.0),
    ),
];

/// Runs both sides and returns the rows (error rows when a side cannot run). `smdebug`: the
/// release CLI that writes the trial; `quick`: shorter criterion runs.
pub fn rows(python: &Path, smdebug: &Path, quick: bool) -> Vec<Value> {
    match measure(python, smdebug, quick) {
        Ok(rows) => rows,
        Err(e) => ROWS
            .iter()
            .map(|(_, _, name, _)| json!({"name": name, "error": format!("{e:#}")}))
            .collect(),
    }
}

fn measure(python: &Path, smdebug: &Path, quick: bool) -> Result<Vec<Value>> {
    let trial = super::python::many_small_trial(smdebug)?;
    let since = SystemTime::now();
    step("cargo bench -p smdebug-trial --bench small (8x60x250 small tensors)");
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "smdebug-trial", "--bench", "small", "--"])
        .env("SMDEBUG_TRIAL_SMALL_DIR", &trial);
    if quick {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    exec(&mut cmd)?;
    let ours = super::measure::read_criterion(&root().join("target/criterion"), Some(since))?;
    step("Python smdebug reading the 8x60x250 small-tensors trial (trial_bench_read.py)");
    let out = root().join("target/bench-trial-small-python.json");
    exec(
        Command::new(python)
            .arg(root().join("tests/peer/trial_bench_read.py"))
            .arg(&trial)
            .args(["--repeat", "2", "--every-worker", "--json"])
            .arg(&out)
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let py: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let mut rows = Vec::new();
    for (id, phase, name, goal) in ROWS {
        let (Some(m), Some(base)) = (ours.get(id), py["best_seconds"][phase].as_f64()) else {
            rows.push(
                json!({"name": name, "error": format!("{id} or Python {phase} did not run")}),
            );
            continue;
        };
        let s = m.seconds;
        rows.push(json!({
            "name": name, "value": s * 1e3, "unit": "ms",
            "baseline": format!("python smdebug {phase} (best)"),
            "ratio": base / s, "goal": goal, "seconds": s, "baseline_seconds": base,
        }));
    }
    Ok(rows)
}

/// `cargo xtask bench --small`: these rows alone, printed.
pub fn run_only(quick: bool) -> Result<()> {
    let python = crate::peer::ensure_peer()?;
    // The CLI only writes the trial: no build when a run before left it.
    if !super::python::many_small_written() {
        step("cargo build --release -p smdebug-cli (synth)");
        exec(cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
    }
    let rows = rows(&python, &root().join("target/release/smdebug"), quick);
    for r in &rows {
        println!("{}", serde_json::to_string(r).context("row")?);
    }
    Ok(())
}
