//! Rows measured on whole runs of the release binary against the Python peer on the
//! `large` trial: peak memory of reading every value, and the export.
use super::measure::{vs_dump_row, PYTHON_REPEAT};
use super::trials::{large_trial_dir, smdebug_bin};
use crate::util::{root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Peak RSS of `smdebug dump` vs the Python smdebug, each reading every value of the
/// large trial (`tests/peer/trial_peak_memory.py`). Ratio: Python's peak / ours, so
/// higher means we need less memory.
pub(crate) fn peak_memory_row(python: &Path) -> Value {
    let name = "memory: peak RSS, every value of large trial vs Python";
    let run = || -> Result<Value> {
        let dir = large_trial_dir();
        if !dir.join("training_job_end.ts").exists() {
            bail!("{} is missing or incomplete", dir.display());
        }
        if !smdebug_bin().exists() {
            bail!("{} is not built", smdebug_bin().display());
        }
        step("peak memory: smdebug dump vs Python smdebug (trial_peak_memory.py)");
        let out = crate::util::output(
            Command::new(python)
                .arg(root().join("tests/peer/trial_peak_memory.py"))
                .arg(&dir)
                .arg("--smdebug")
                .arg(smdebug_bin())
                .env("SMDEBUG_LOG_LEVEL", "error"),
        )?;
        serde_json::from_str(out.trim()).with_context(|| format!("printed {out}"))
    };
    match run() {
        Ok(v) => {
            let (Some(ours), Some(py)) = (
                v["ours_max_rss_bytes"].as_f64(),
                v["python_max_rss_bytes"].as_f64(),
            ) else {
                return json!({"name": name, "error": format!("unexpected output {v}")});
            };
            json!({
                "name": name, "value": ours / 1e6, "unit": "MB",
                "baseline": format!("python smdebug {:.0} MB; ratio = Python / ours, higher = we use less", py / 1e6),
                "ratio": py / ours, "goal": null,
                "ours_max_rss_bytes": ours, "python_max_rss_bytes": py,
            })
        }
        Err(e) => json!({"name": name, "error": format!("{e:#}")}),
    }
}

/// The export figures (`tests/peer/export_bench.py`): `smdebug export` of a trial's
/// `tensors` table with statistics in GB/s of raw values (ratio: the Python baseline doing
/// the same with smdebug + numpy + pyarrow), against our every-value read of the same trial
/// (`smdebug dump`, ratio read time / export time), and the export's peak RSS (ratio:
/// 200 MB / ours, so ≥ 1 meets the 200 MB bound).
pub(crate) fn export_rows(python: &Path, trial: &Path) -> Vec<Value> {
    const SPEED: &str = "export: tensors table with statistics vs Python smdebug+numpy+pyarrow";
    const READ: &str = "export vs our every-value read (smdebug dump) of the same trial";
    const MEMORY: &str = "memory: peak RSS of smdebug export";
    let run = || -> Result<Value> {
        if !trial.join("training_job_end.ts").exists() {
            bail!("{} is missing or incomplete", trial.display());
        }
        if !smdebug_bin().exists() {
            bail!("{} is not built", smdebug_bin().display());
        }
        step("export: smdebug export vs Python smdebug + numpy + pyarrow (export_bench.py)");
        let scratch = root().join("target/bench-export-out");
        let out = crate::util::output(
            Command::new(python)
                .arg(root().join("tests/peer/export_bench.py"))
                .arg(trial)
                .arg("--smdebug")
                .arg(smdebug_bin())
                .arg("--out")
                .arg(&scratch)
                .args(["--repeat", PYTHON_REPEAT])
                .env("SMDEBUG_LOG_LEVEL", "error"),
        )?;
        serde_json::from_str(out.trim()).with_context(|| format!("printed {out}"))
    };
    let v = match run() {
        Ok(v) => v,
        Err(e) => {
            let e = format!("{e:#}");
            return [SPEED, READ, MEMORY]
                .iter()
                .map(|n| json!({"name": n, "error": e}))
                .collect();
        }
    };
    let (Some(ours), Some(py), Some(read), Some(bytes), Some(rows), Some(rss)) = (
        v["ours_seconds"].as_f64(),
        v["python_seconds"].as_f64(),
        v["read_seconds"].as_f64(),
        v["value_bytes"].as_f64(),
        v["rows"].as_f64(),
        v["ours_max_rss_bytes"].as_f64(),
    ) else {
        return vec![json!({"name": SPEED, "error": format!("unexpected output {v}")})];
    };
    vec![
        json!({
            "name": SPEED, "value": bytes / ours / 1e9, "unit": "GB/s",
            "baseline": format!("python export_bench.py; {:.0} rows/s", rows / ours),
            "ratio": py / ours, "goal": 20.0, "seconds": ours, "baseline_seconds": py,
            "rows_per_second": rows / ours,
        }),
        vs_dump_row(READ, ours, read),
        json!({
            "name": MEMORY, "value": rss / 1e6, "unit": "MB",
            "baseline": "ratio = 200 MB / ours (the bound)",
            "ratio": 200e6 / rss, "goal": 1.0, "ours_max_rss_bytes": rss,
        }),
    ]
}
