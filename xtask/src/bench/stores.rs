//! Object store rows of `cargo xtask bench`, on the moto S3 server the run started:
//!
//! * opening a 1,000-step trial (`smdebug inspect s3://…`, the release CLI, process start
//!   included) against the Python smdebug opening the same trial (`tests/peer/scale_open.py`,
//!   its own clock: `create_trial`, `tensor_names()`, `steps()`), where Python's process
//!   pool for index files engages;
//! * the server's busy share during that open, and the ceiling of its ratio;
//! * opening `--last 10` of a 2,000-step trial against opening it whole, and the ceiling of
//!   that ratio.
//!
//! The ceilings come from the server's own CPU time ([`cpu_seconds`] of the moto process,
//! read before and after each run): moto serves every request under one interpreter lock,
//! so the CPU time it spends on a client's requests is time no client can have them answered
//! in less, and its CPU time over the client's wall time (≈ 1.0) says the server was never
//! idle, i.e. the server, not the client, bounds the figure.
//!
//! Both trials are written by `smdebug synth` (three small tensors a step, one worker) into
//! the moto server, new each run. Each figure is the best of [`REPEAT`] runs.
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::services::{cpu_seconds, server_pid};
use crate::util::{root, step};

/// Runs per timing; the fastest counts.
const REPEAT: usize = 3;

/// Runs of `--last 10`, the fastest of which is its time and whose server CPU time is
/// averaged: one run costs moto a few clock ticks (10 ms each), too coarse to read alone.
const LAST_CPU_RUNS: usize = 20;

const OPEN_ROW: &str = "trial S3: open of a 1,000-step trial vs Python smdebug";
const BUSY_ROW: &str =
    "trial S3: the server's busy share during our 1,000-step open (moto's CPU time / our wall time; 1.0 = the server is the bound)";
const CEILING_ROW: &str =
    "trial S3: ceiling for the 1,000-step open (Python open / moto's CPU time for our open's requests)";
const LAST_ROW: &str = "trial S3: --last 10 of a 2,000-step trial vs opening it whole";
const LAST_CEILING_ROW: &str =
    "trial S3: ceiling for --last 10 (opening the 2,000-step trial whole / moto's CPU time for the --last 10 requests)";
const OPEN_URL: &str = "s3://smdebug-test/bench-s3-open-1000";

/// The rows; errors become error rows. `s3_env` points at the running S3 server.
pub fn rows(python: &Path, smdebug: &Path, s3_env: Option<&[(String, String)]>) -> Vec<Value> {
    let names = [OPEN_ROW, BUSY_ROW, CEILING_ROW, LAST_ROW, LAST_CEILING_ROW];
    let Some(env) = s3_env else {
        return names
            .iter()
            .map(|n| json!({"name": n, "error": "no S3 server in this run"}))
            .collect();
    };
    let failed = |names: &[&str], e: anyhow::Error| -> Vec<Value> {
        names
            .iter()
            .map(|n| json!({"name": n, "error": format!("{e:#}")}))
            .collect()
    };
    let mut out = open_rows(python, smdebug, env)
        .unwrap_or_else(|e| failed(&[OPEN_ROW, BUSY_ROW, CEILING_ROW], e));
    out.extend(
        last_rows(smdebug, env).unwrap_or_else(|e| failed(&[LAST_ROW, LAST_CEILING_ROW], e)),
    );
    out
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

/// One timed run of `cmd`: its wall seconds and the S3 server's CPU seconds meanwhile.
fn timed_run(cmd: &mut Command, pid: u32) -> Result<(f64, f64, String)> {
    let cpu = cpu_seconds(pid)?;
    let started = Instant::now();
    let out = crate::util::output(cmd)?;
    let wall = started.elapsed().as_secs_f64();
    Ok((wall, cpu_seconds(pid)? - cpu, out))
}

/// `smdebug inspect ARGS…` against the server of `env`.
fn inspect(smdebug: &Path, env: &[(String, String)], args: &[&str]) -> Command {
    let mut cmd = Command::new(smdebug);
    cmd.arg("inspect")
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SMDEBUG_LOG_LEVEL", "error");
    cmd
}

/// The fastest of [`REPEAT`] runs of `smdebug inspect ARGS…`: its wall seconds and the
/// server's CPU seconds during it.
fn inspect_best(smdebug: &Path, env: &[(String, String)], args: &[&str]) -> Result<(f64, f64)> {
    let pid = server_pid(env).context("the S3 server's pid is not in the environment")?;
    let mut best = (f64::INFINITY, f64::NAN);
    for _ in 0..REPEAT {
        let (wall, cpu, _) = timed_run(&mut inspect(smdebug, env, args), pid)?;
        if wall < best.0 {
            best = (wall, cpu);
        }
    }
    Ok(best)
}

/// The open row, the server's busy share during our open, and the ceiling of the ratio.
fn open_rows(python: &Path, smdebug: &Path, env: &[(String, String)]) -> Result<Vec<Value>> {
    let pid = server_pid(env).context("the S3 server's pid is not in the environment")?;
    let url = OPEN_URL;
    write_trial(smdebug, env, 1000, url)?;
    step(&format!("{OPEN_ROW}: smdebug inspect"));
    let (ours, ours_cpu) = inspect_best(smdebug, env, &[url])?;
    step(&format!("{OPEN_ROW}: Python smdebug (scale_open.py)"));
    let mut py = f64::INFINITY;
    let mut py_cpu = f64::NAN;
    for _ in 0..REPEAT {
        let (_, cpu, out) = timed_run(
            Command::new(python)
                .arg(root().join("tests/peer/scale_open.py"))
                .arg(url)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("SMDEBUG_LOG_LEVEL", "error"),
            pid,
        )?;
        let v: Value = serde_json::from_str(out.trim())
            .with_context(|| format!("scale_open.py printed {out}"))?;
        if v["steps"].as_u64() != Some(1000) {
            bail!("Python smdebug saw {} steps, not 1000", v["steps"]);
        }
        let secs = v["seconds"].as_f64().context("no seconds")?;
        if secs < py {
            (py, py_cpu) = (secs, cpu);
        }
    }
    if ours_cpu.is_nan() || ours_cpu <= 0.0 {
        bail!("the S3 server used no CPU time during our open ({ours_cpu} s): wrong pid?");
    }
    Ok(vec![
        json!({
            "name": OPEN_ROW, "value": ours * 1e3, "unit": "ms",
            "baseline": "python smdebug open (best; its own clock, ours includes process start)",
            "ratio": py / ours, "goal": 20.0, "seconds": ours, "baseline_seconds": py,
        }),
        json!({
            "name": BUSY_ROW, "value": ours_cpu * 1e3, "unit": "ms",
            "baseline": format!(
                "our open's wall time, {:.0} ms (the same run); during Python's open moto was busy {:.2} of its {:.0} ms",
                ours * 1e3, py_cpu / py, py * 1e3
            ),
            "ratio": ours_cpu / ours, "seconds": ours_cpu, "baseline_seconds": ours,
        }),
        json!({
            "name": CEILING_ROW, "value": ours_cpu * 1e3, "unit": "ms",
            "baseline": "python smdebug open of the same trial (best)",
            "ratio": py / ours_cpu, "seconds": ours_cpu, "baseline_seconds": py,
        }),
    ])
}

/// `--last 10` against the whole open, and the ceiling of that ratio: the whole open's time
/// over the server's CPU time for the `--last 10` requests (the mean of
/// [`LAST_CPU_RUNS`] runs).
fn last_rows(smdebug: &Path, env: &[(String, String)]) -> Result<Vec<Value>> {
    let pid = server_pid(env).context("the S3 server's pid is not in the environment")?;
    let url = "s3://smdebug-test/bench-s3-open-2000";
    write_trial(smdebug, env, 2000, url)?;
    step(&format!("{LAST_ROW}: smdebug inspect --last 10 / whole"));
    let args = ["--last", "10", url];
    let (whole, _) = inspect_best(smdebug, env, &[url])?;
    step(&format!(
        "{LAST_CEILING_ROW}: {LAST_CPU_RUNS} runs of smdebug inspect --last 10"
    ));
    // The fastest of these runs is the row's time; their mean CPU time the server's cost.
    let (mut last, mut wall, mut cpu) = (f64::INFINITY, 0.0, 0.0);
    for _ in 0..LAST_CPU_RUNS {
        let (w, c, _) = timed_run(&mut inspect(smdebug, env, &args), pid)?;
        last = last.min(w);
        wall += w;
        cpu += c;
    }
    let (wall, cpu) = (wall / LAST_CPU_RUNS as f64, cpu / LAST_CPU_RUNS as f64);
    if cpu.is_nan() || cpu <= 0.0 {
        bail!("the S3 server used no CPU time during {LAST_CPU_RUNS} runs of --last 10");
    }
    Ok(vec![
        json!({
            "name": LAST_ROW, "value": last * 1e3, "unit": "ms",
            "baseline": format!("smdebug inspect of the whole trial (best of {REPEAT}; ours: best of {LAST_CPU_RUNS})"),
            "ratio": whole / last, "goal": 100.0, "seconds": last, "baseline_seconds": whole,
        }),
        json!({
            "name": LAST_CEILING_ROW, "value": cpu * 1e3, "unit": "ms",
            "baseline": format!(
                "smdebug inspect of the whole trial (best); moto's CPU time is the mean of {LAST_CPU_RUNS} runs, busy {:.2} of their mean wall time {:.1} ms",
                cpu / wall, wall * 1e3
            ),
            "ratio": whole / cpu, "seconds": cpu, "baseline_seconds": whole,
        }),
    ])
}
