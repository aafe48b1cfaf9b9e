//! Reading the two sides of a figure: criterion's fastest sample from its result files, and
//! the fastest run of a Python peer script.
use super::trials::{env_or, large_trial_dir, TrialSource, LARGE_STEPS, S3_TRIAL};
use crate::util::{root, step};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

/// Python runs per timing; the fastest counts.
pub(crate) const PYTHON_REPEAT: &str = "2";

/// One criterion result: the fastest sample's seconds per iteration and bytes per
/// iteration (if declared).
pub(crate) struct Measured {
    pub(crate) seconds: f64,
    pub(crate) bytes: Option<f64>,
}

/// Reads every `benchmark.json` + `sample.json` pair criterion left under `dir/**/new/`,
/// skipping results written before `since`.
pub(crate) fn read_criterion(
    dir: &Path,
    since: Option<SystemTime>,
) -> Result<BTreeMap<String, Measured>> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        bail!(
            "no criterion results in {} (run without --no-run)",
            dir.display()
        );
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let p = entry?.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "new") {
                    if let Some((id, m)) = read_one(&p, since)? {
                        out.insert(id, m);
                    }
                } else if p.file_name().is_none_or(|n| n != "base" && n != "report") {
                    stack.push(p);
                }
            }
        }
    }
    Ok(out)
}

pub(crate) fn read_one(
    new_dir: &Path,
    since: Option<SystemTime>,
) -> Result<Option<(String, Measured)>> {
    let sample_path = new_dir.join("sample.json");
    let (Ok(bench), Ok(sample)) = (
        std::fs::read(new_dir.join("benchmark.json")),
        std::fs::read(&sample_path),
    ) else {
        return Ok(None);
    };
    if let Some(since) = since {
        if std::fs::metadata(&sample_path)?.modified()? < since {
            return Ok(None);
        }
    }
    let bench: Value = serde_json::from_slice(&bench)?;
    let sample: Value = serde_json::from_slice(&sample)?;
    let id = bench["full_id"].as_str().unwrap_or_default().to_string();
    let ns = fastest_per_iteration(&sample)
        .with_context(|| format!("{}: no samples", sample_path.display()))?;
    let bytes = bench["throughput"]["Bytes"]
        .as_f64()
        .or_else(|| bench["throughput"]["BytesDecimal"].as_f64());
    Ok(Some((
        id,
        Measured {
            seconds: ns * 1e-9,
            bytes,
        },
    )))
}

/// The quickest sample's nanoseconds per iteration: criterion's `sample.json` holds, per
/// sample, the iteration count (`iters`) and the total time of those iterations (`times`).
pub(crate) fn fastest_per_iteration(sample: &Value) -> Option<f64> {
    let iters = sample["iters"].as_array()?;
    let times = sample["times"].as_array()?;
    iters
        .iter()
        .zip(times)
        .filter_map(|(n, t)| Some(t.as_f64()? / n.as_f64()?))
        .filter(|x| x.is_finite())
        .min_by(f64::total_cmp)
}

/// Times the real smdebug reading the trial the trial benchmark read, best of
/// [`PYTHON_REPEAT`] runs per phase.
pub(crate) fn python_trial_read(
    python: &Path,
    source: TrialSource,
    s3_env: Option<&[(String, String)]>,
) -> Result<Value> {
    let (path, out, env) = match source {
        TrialSource::Local => {
            let dir = large_trial_dir();
            if !dir.join("training_job_end.ts").exists() {
                bail!("{} is missing or incomplete", dir.display());
            }
            let out = root().join("target/bench-trial-python.json");
            (dir.display().to_string(), out, Vec::new())
        }
        TrialSource::S3 => {
            let Some(env) = s3_env else {
                bail!("the S3 timing needs the S3 server of a run (not --no-run)");
            };
            let out = root().join("target/bench-trial-s3-python.json");
            (S3_TRIAL.to_owned(), out, env.to_vec())
        }
    };
    step(&format!(
        "Python smdebug reading {path} (trial_bench_read.py)"
    ));
    crate::util::run(
        Command::new(python)
            .arg(root().join("tests/peer/trial_bench_read.py"))
            .arg(&path)
            .args(["--repeat", PYTHON_REPEAT, "--json"])
            .arg(&out)
            .envs(env)
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    Ok(serde_json::from_slice(&std::fs::read(&out)?)?)
}

/// Runs a peer timing script (it repeats the work and reports its fastest run, as ours is
/// the fastest criterion sample) and returns the seconds it reports.
pub(crate) fn python_seconds(python: &Path, script: &str, args: &[&str]) -> Result<f64> {
    step(&format!("Python baseline {script}"));
    let out = crate::util::output(
        Command::new(python)
            .arg(root().join("tests/peer").join(script))
            .args(args)
            .env(
                "SMDEBUG_HOOK_BENCH_STEPS",
                env_or("SMDEBUG_HOOK_BENCH_STEPS", LARGE_STEPS),
            )
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let v: Value =
        serde_json::from_str(out.trim()).with_context(|| format!("{script} printed {out}"))?;
    v["seconds"]
        .as_f64()
        .or_else(|| v["best_s"].as_f64())
        .with_context(|| format!("{script} printed no `seconds` or `best_s`: {out}"))
}

/// The row of a command timed against our every-value read of the same trial (`smdebug dump`,
/// best of its runs): ratio dump seconds / `seconds`, goal 0.5, i.e. within twice the time of
/// reading every value once.
pub(crate) fn vs_dump_row(name: &str, seconds: f64, dump_seconds: f64) -> serde_json::Value {
    serde_json::json!({
        "name": name, "value": seconds, "unit": "s",
        "baseline": "smdebug dump, every value (best)",
        "ratio": dump_seconds / seconds, "goal": 0.5,
        "seconds": seconds, "baseline_seconds": dump_seconds,
    })
}
