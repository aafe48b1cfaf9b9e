//! `cargo xtask bench --scale`: the scaling table (docs/src/scale.md). Trials of 10k, 100k
//! and 1M index entries, written by `smdebug synth-scale` into `target/bench-scale/`
//! (kept while complete), are opened by `smdebug inspect` (the release build) and by the
//! real Python smdebug (`tests/peer/scale_open.py`, under a time cap); each row gives wall
//! time and peak RSS (`/usr/bin/time`), the best of two runs, and the ratio Python / ours.
//! The 1M-entry shapes are the issue's: many tensors, many workers, many steps.
use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// (workers, steps, tensors) of each trial, smallest first.
const SHAPES: &[(usize, i64, usize)] = &[
    (64, 16, 10),
    (64, 156, 10),
    (64, 1560, 10),
    (8, 1250, 100),
    (512, 200, 10),
];

/// Seconds the Python smdebug may take per open before the row says it did not finish
/// (`SMDEBUG_SCALE_PYTHON_CAP` overrides).
const PYTHON_CAP_SECONDS: &str = "300";

fn trial_dir((w, s, t): (usize, i64, usize)) -> PathBuf {
    root().join(format!("target/bench-scale/{w}w-{s}s-{t}t"))
}

fn smdebug_bin() -> PathBuf {
    root().join("target/release/smdebug")
}

/// Wall seconds and peak RSS in bytes of `cmd` under `/usr/bin/time` (and `timeout cap`
/// when given), and what it printed; `None` when it ran past the cap.
fn timed_output(cmd: &[&str], cap: Option<&str>) -> Result<Option<(f64, f64, String)>> {
    let mut full = Command::new("timeout");
    full.arg(cap.unwrap_or("0"));
    full.args(["/usr/bin/time", "-f", "SCALE-TIME %e %M"]);
    full.args(cmd);
    full.env("SMDEBUG_LOG_LEVEL", "error");
    let out = full
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if out.status.code() == Some(124) {
        return Ok(None);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {err}", out.status);
    }
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("SCALE-TIME "))
        .with_context(|| format!("no timing from /usr/bin/time: {err}"))?;
    let mut parts = line.split_whitespace().skip(1);
    let secs: f64 = parts.next().unwrap_or("").parse()?;
    let kib: f64 = parts.next().unwrap_or("").parse()?;
    Ok(Some((
        secs,
        kib * 1024.0,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )))
}

/// [`timed_output`] without the output.
fn timed(cmd: &[&str], cap: Option<&str>) -> Result<Option<(f64, f64)>> {
    Ok(timed_output(cmd, cap)?.map(|(s, m, _)| (s, m)))
}

/// The better of two runs (time and memory each at their best).
fn best_of_two(cmd: &[&str], cap: Option<&str>) -> Result<Option<(f64, f64)>> {
    let Some(a) = timed(cmd, cap)? else {
        return Ok(None);
    };
    Ok(Some(match timed(cmd, cap)? {
        Some(b) => (a.0.min(b.0), a.1.min(b.1)),
        None => a,
    }))
}

fn ensure_trial(shape: (usize, i64, usize)) -> Result<PathBuf> {
    let dir = trial_dir(shape);
    if dir.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    let (w, s, t) = shape;
    step(&format!(
        "smdebug synth-scale: {w} workers x {s} steps x {t} tensors"
    ));
    let partial = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    let _ = std::fs::remove_dir_all(&dir);
    exec(Command::new(smdebug_bin()).args([
        "synth-scale",
        partial.to_str().context("non-UTF-8 path")?,
        "--workers",
        &w.to_string(),
        "--steps",
        &s.to_string(),
        "--tensors",
        &t.to_string(),
    ]))?;
    std::fs::rename(&partial, &dir)?;
    Ok(dir)
}

fn row(shape: (usize, i64, usize), python: &Path, cap: &str) -> Value {
    let (w, s, t) = shape;
    let entries = w as i64 * s * t as i64;
    let name =
        format!("scale: open {entries} index entries ({w} workers x {s} steps x {t} tensors)");
    let run = || -> Result<Value> {
        let dir = ensure_trial(shape)?;
        let dir = dir.to_str().context("non-UTF-8 path")?;
        step(&format!("{name}: smdebug inspect"));
        let bin = smdebug_bin();
        let ours = best_of_two(
            &[bin.to_str().context("non-UTF-8 path")?, "inspect", dir],
            None,
        )?
        .context("smdebug inspect did not finish")?;
        step(&format!("{name}: Python smdebug (cap {cap} s)"));
        let script = root().join("tests/peer/scale_open.py");
        // Python's own clock of the open (its interpreter start and `import smdebug`
        // excluded); the peak RSS is the process's.
        let py = timed_output(
            &[
                python.to_str().context("non-UTF-8 path")?,
                script.to_str().context("non-UTF-8 path")?,
                dir,
            ],
            Some(cap),
        )?;
        let py = match py {
            Some((_, rss, out)) => {
                let v: Value = serde_json::from_str(out.trim())
                    .with_context(|| format!("scale_open.py printed {out}"))?;
                let secs = v["seconds"]
                    .as_f64()
                    .context("no seconds from scale_open.py")?;
                Some((secs, rss))
            }
            None => None,
        };
        Ok(json!({
            "name": name, "entries": entries, "workers": w, "steps": s, "tensors": t,
            "value": ours.0, "unit": "s", "ours_seconds": ours.0, "ours_max_rss_bytes": ours.1,
            "bytes_per_entry": ours.1 / entries as f64,
            "python_seconds": py.map(|p| p.0), "python_max_rss_bytes": py.map(|p| p.1),
            "ratio": py.map(|p| p.0 / ours.0),
            "baseline": match py {
                Some(_) => "python smdebug open (same trial)".to_owned(),
                None => format!("python smdebug did not finish within {cap} s"),
            },
            "goal": if entries >= 1_000_000 { Some("<= 2 s, <= 150 MB") } else { None },
        }))
    };
    run().unwrap_or_else(|e| json!({"name": name, "error": format!("{e:#}")}))
}

/// Builds the release CLI, writes the trials that are missing, and measures every row;
/// prints the table and returns the rows.
pub fn run(python: &Path) -> Result<Vec<Value>> {
    step("cargo build --release -p smdebug-cli (synth-scale, inspect)");
    exec(cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
    let cap =
        std::env::var("SMDEBUG_SCALE_PYTHON_CAP").unwrap_or_else(|_| PYTHON_CAP_SECONDS.into());
    let only: Option<usize> = std::env::var("SMDEBUG_SCALE_MAX_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok());
    let rows: Vec<Value> = SHAPES
        .iter()
        .filter(|(w, s, t)| only.is_none_or(|m| w * (*s as usize) * t <= m))
        .map(|&shape| row(shape, python, &cap))
        .collect();
    println!("\n| trial | entries | ours: `smdebug inspect` | ours peak RSS | peak RSS / entry (B) | Python open | Python peak RSS | Python / ours |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        if let Some(e) = r["error"].as_str() {
            println!(
                "| {} | error: {e} | | | | | | |",
                r["name"].as_str().unwrap_or("")
            );
            continue;
        }
        let mb = |v: &Value| {
            v.as_f64()
                .map_or("-".to_owned(), |b| format!("{:.0} MB", b / 1e6))
        };
        let secs = |v: &Value| {
            v.as_f64()
                .map_or(format!("> {cap} s (cap)"), |s| format!("{s:.2} s"))
        };
        println!(
            "| {}w × {}s × {}t | {} | {} | {} | {:.0} | {} | {} | {} |",
            r["workers"],
            r["steps"],
            r["tensors"],
            r["entries"],
            secs(&r["ours_seconds"]),
            mb(&r["ours_max_rss_bytes"]),
            r["bytes_per_entry"].as_f64().unwrap_or(f64::NAN),
            secs(&r["python_seconds"]),
            mb(&r["python_max_rss_bytes"]),
            r["ratio"]
                .as_f64()
                .map_or("-".to_owned(), |x| format!("{x:.0}×")),
        );
    }
    Ok(rows)
}
