//! Object store rows of `cargo xtask bench`, on the moto S3 server the run started:
//!
//! * opening a 1,000-step trial (`smdebug inspect s3://…`, the release CLI, process start
//!   included) against the Python smdebug opening the same trial (`tests/peer/scale_open.py`,
//!   its own clock: `create_trial`, `tensor_names()`, `steps()`), where Python's process
//!   pool for index files engages;
//! * opening `--last 10` of a 2,000-step trial against opening it whole.
//!
//! Both trials are written by `smdebug synth` (three small tensors a step, one worker) into
//! the moto server, new each run. Each figure is the best of [`REPEAT`] runs.
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::util::{root, step};

/// Runs per timing; the fastest counts.
const REPEAT: usize = 3;

const OPEN_ROW: &str = "trial S3: open of a 1,000-step trial vs Python smdebug";
const LAST_ROW: &str = "trial S3: --last 10 of a 2,000-step trial vs opening it whole";
const OPEN_URL: &str = "s3://smdebug-test/bench-s3-open-1000";
const CEILING_ROW: &str =
    "trial S3: ceiling for the 1,000-step open (Python open / the server's time for the bare listing and GETs of the index files)";

/// The rows; errors become error rows. `s3_env` points at the running S3 server.
pub fn rows(python: &Path, smdebug: &Path, s3_env: Option<&[(String, String)]>) -> Vec<Value> {
    let Some(env) = s3_env else {
        return [OPEN_ROW, CEILING_ROW, LAST_ROW]
            .iter()
            .map(|n| json!({"name": n, "error": "no S3 server in this run"}))
            .collect();
    };
    let open = open_row(python, smdebug, env)
        .unwrap_or_else(|e| json!({"name": OPEN_ROW, "error": format!("{e:#}")}));
    let ceiling = ceiling_row(python, env, open["baseline_seconds"].as_f64())
        .unwrap_or_else(|e| json!({"name": CEILING_ROW, "error": format!("{e:#}")}));
    vec![
        open,
        ceiling,
        last_row(smdebug, env)
            .unwrap_or_else(|e| json!({"name": LAST_ROW, "error": format!("{e:#}")})),
    ]
}

/// `cargo xtask bench-stores`: the rows alone, with a moto server of their own and the
/// release CLI (built here).
pub fn run_alone() -> Result<()> {
    let python = crate::peer::ensure_peer()?;
    let tools = crate::peer::ensure_tools()?;
    let s3 = crate::services::S3Server::start(&tools)?;
    step("cargo build --release -p smdebug-cli");
    crate::util::run(crate::util::cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
    let smdebug = root().join("target/release/smdebug");
    for row in rows(&python, &smdebug, Some(&s3.env())) {
        println!("{row}");
    }
    Ok(())
}

/// Writes a trial of `steps` TRAIN steps at `url` with `smdebug synth`.
fn write_trial(smdebug: &Path, env: &[(String, String)], steps: u64, url: &str) -> Result<()> {
    let recipe = json!({
        "description": format!("S3 open bench: {steps} steps, three small tensors"),
        "seed": 17,
        "workers": 1,
        "schedule": [{"mode": "TRAIN", "steps": steps}],
        "default_save_config": {"save_interval": 1},
        "collections": [
            {"name": "weights", "include_regex": ["weight"]},
            {"name": "losses", "include_regex": ["loss"]}
        ],
        "tensors": [
            {"name": "fc.weight", "shape": [4, 4], "dtype": "float32"},
            {"name": "fc.bias_weight", "shape": [4], "dtype": "float32"},
            {"name": "loss", "shape": [], "dtype": "float32"}
        ]
    });
    let path = root().join(format!("target/bench-s3-open-{steps}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&recipe)?)?;
    step(&format!("smdebug synth ({steps} steps) {url}"));
    crate::util::output(
        Command::new(smdebug)
            .args(["synth", "--quiet"])
            .arg(&path)
            .arg(url)
            .envs(env.iter().map(|(k, v)| (k, v))),
    )?;
    Ok(())
}

/// Best wall seconds of `smdebug inspect ARGS…` over [`REPEAT`] runs.
fn inspect_seconds(smdebug: &Path, env: &[(String, String)], args: &[&str]) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..REPEAT {
        let started = Instant::now();
        crate::util::output(
            Command::new(smdebug)
                .arg("inspect")
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("SMDEBUG_LOG_LEVEL", "error"),
        )?;
        best = best.min(started.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn open_row(python: &Path, smdebug: &Path, env: &[(String, String)]) -> Result<Value> {
    let url = OPEN_URL;
    write_trial(smdebug, env, 1000, url)?;
    step(&format!("{OPEN_ROW}: smdebug inspect"));
    let ours = inspect_seconds(smdebug, env, &[url])?;
    step(&format!("{OPEN_ROW}: Python smdebug (scale_open.py)"));
    let mut py = f64::INFINITY;
    for _ in 0..REPEAT {
        let out = crate::util::output(
            Command::new(python)
                .arg(root().join("tests/peer/scale_open.py"))
                .arg(url)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("SMDEBUG_LOG_LEVEL", "error"),
        )?;
        let v: Value = serde_json::from_str(out.trim())
            .with_context(|| format!("scale_open.py printed {out}"))?;
        if v["steps"].as_u64() != Some(1000) {
            bail!("Python smdebug saw {} steps, not 1000", v["steps"]);
        }
        py = py.min(v["seconds"].as_f64().context("no seconds")?);
    }
    Ok(json!({
        "name": OPEN_ROW, "value": ours * 1e3, "unit": "ms",
        "baseline": "python smdebug open (best; its own clock, ours includes process start)",
        "ratio": py / ours, "goal": 20.0, "seconds": ours, "baseline_seconds": py,
    }))
}

/// What the server alone takes to answer the requests any reader of the 1,000-step trial
/// must make (the index listing and one GET per index file, 32 at a time, boto3, no
/// parsing): Python's open time over it is the best open ratio this server allows.
fn ceiling_row(python: &Path, env: &[(String, String)], py_open: Option<f64>) -> Result<Value> {
    let py_open = py_open.context("the open row has no Python time")?;
    step(&format!("{CEILING_ROW}: s3_raw_gets.py"));
    let mut raw = f64::INFINITY;
    for _ in 0..REPEAT {
        let out = crate::util::output(
            Command::new(python)
                .arg(root().join("tests/peer/s3_raw_gets.py"))
                .arg(OPEN_URL)
                .envs(env.iter().map(|(k, v)| (k, v))),
        )?;
        let v: Value = serde_json::from_str(out.trim())
            .with_context(|| format!("s3_raw_gets.py printed {out}"))?;
        if v["objects"].as_u64() != Some(1000) {
            bail!(
                "s3_raw_gets.py listed {} index files, not 1000",
                v["objects"]
            );
        }
        raw = raw.min(v["seconds"].as_f64().context("no seconds")?);
    }
    Ok(json!({
        "name": CEILING_ROW, "value": raw * 1e3, "unit": "ms",
        "baseline": "python smdebug open of the same trial (best)",
        "ratio": py_open / raw, "seconds": raw, "baseline_seconds": py_open,
    }))
}

fn last_row(smdebug: &Path, env: &[(String, String)]) -> Result<Value> {
    let url = "s3://smdebug-test/bench-s3-open-2000";
    write_trial(smdebug, env, 2000, url)?;
    step(&format!("{LAST_ROW}: smdebug inspect --last 10 / whole"));
    let last = inspect_seconds(smdebug, env, &["--last", "10", url])?;
    let whole = inspect_seconds(smdebug, env, &[url])?;
    Ok(json!({
        "name": LAST_ROW, "value": last * 1e3, "unit": "ms",
        "baseline": "smdebug inspect of the whole trial (best)",
        "ratio": whole / last, "goal": 100.0, "seconds": last, "baseline_seconds": whole,
    }))
}
