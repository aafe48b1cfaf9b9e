//! The report's figures in `cargo xtask bench` on the `large` preset:
//! the time `smdebug report` takes against our every-value read of the same trial
//! (`smdebug dump`, values hashed; goal: the report within 2× of it, ratio ≥ 0.5), the
//! page's size (the default rules run; the same without rules is a row of its own, as the
//! rules read every value again, each through its own reader), and the time headless Chromium takes to load the page against a blank page.
//! `cargo xtask bench-report --trial DIR --bin PATH` runs them alone.
use super::measure::vs_dump_row;
use crate::util::{output, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const TIME: &str = "report: smdebug report of large trial vs our every-value read";
const TIME_NO_RULES: &str = "report: the same without rules (--rules none) vs every-value read";
const SIZE: &str = "report: page size of large trial's report";
const LOAD: &str = "report: Chromium load of large trial's report vs a blank page";

/// Runs per timing; the fastest counts.
const REPEAT: usize = 2;

/// Options of `cargo xtask bench-report`.
#[derive(clap::Args)]
pub struct BenchReportArgs {
    /// The trial (default: the bench's `large` preset trial).
    #[arg(long)]
    pub trial: Option<PathBuf>,
    /// The smdebug binary (default: the release build).
    #[arg(long)]
    pub bin: Option<PathBuf>,
}

/// `cargo xtask bench-report`: prints the rows.
pub fn run(args: BenchReportArgs, default_trial: &Path, default_bin: &Path) -> Result<()> {
    let trial = args.trial.unwrap_or_else(|| default_trial.to_path_buf());
    let bin = args.bin.unwrap_or_else(|| default_bin.to_path_buf());
    for row in report_rows(&trial, &bin) {
        println!("{row}");
    }
    Ok(())
}

fn best_of(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..REPEAT {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// The three rows (error rows when something is missing).
pub fn report_rows(trial: &Path, bin: &Path) -> Vec<Value> {
    let errors = |e: anyhow::Error| -> Vec<Value> {
        let e = format!("{e:#}");
        [TIME, TIME_NO_RULES, SIZE, LOAD]
            .iter()
            .map(|n| json!({"name": n, "error": e}))
            .collect()
    };
    if !trial.join("training_job_end.ts").exists() {
        return errors(anyhow::anyhow!(
            "{} is missing or incomplete",
            trial.display()
        ));
    }
    if !bin.exists() {
        return errors(anyhow::anyhow!("{} is not built", bin.display()));
    }
    step("report: smdebug report of the large trial vs smdebug dump of every value");
    let scratch = crate::util::root().join("target/bench-report");
    let page = scratch.join("report.html");
    let report_run = |rules: &str| {
        best_of(|| {
            output(
                Command::new(bin)
                    .arg("report")
                    .arg(trial)
                    .arg("-o")
                    .arg(&page)
                    .args(["--rules", rules])
                    .env("SMDEBUG_LOG_LEVEL", "error"),
            )
            .map(drop)
        })
    };
    let timed = || -> Result<(f64, f64, f64)> {
        std::fs::create_dir_all(&scratch)?;
        // The default rules last, so that the page measured below is the default page.
        let no_rules = report_run("none")?;
        let report = report_run("default")?;
        let read = best_of(|| {
            let status = Command::new(bin)
                .arg("dump")
                .arg(trial)
                .args(["--no-computed-reductions", "--no-global-lookup"])
                .args(["--max-inline", "0", "--compact"])
                .stdout(std::process::Stdio::null())
                .status()
                .context("running smdebug dump")?;
            if !status.success() {
                bail!("smdebug dump failed: {status}");
            }
            Ok(())
        })?;
        Ok((report, no_rules, read))
    };
    let (report, no_rules, read) = match timed() {
        Ok(x) => x,
        Err(e) => return errors(e),
    };
    let size = std::fs::metadata(&page).map(|m| m.len()).unwrap_or(0) as f64;
    let mut rows = vec![
        vs_dump_row(TIME, report, read),
        vs_dump_row(TIME_NO_RULES, no_rules, read),
        json!({
            "name": SIZE, "value": size / 1e3, "unit": "kB",
            "baseline": "", "ratio": null, "goal": null, "bytes": size,
        }),
    ];
    rows.push(match chromium_load(&page, &scratch) {
        Ok((load, blank)) => json!({
            "name": LOAD, "value": load, "unit": "s",
            "baseline": "the same Chromium run on an empty page (best)",
            "ratio": blank / load, "goal": null, "seconds": load, "baseline_seconds": blank,
        }),
        Err(e) => json!({"name": LOAD, "error": format!("{e:#}")}),
    });
    rows
}

/// Seconds for `chromium --headless --dump-dom` of the page and of a blank page (start-up
/// included in both).
fn chromium_load(page: &Path, scratch: &Path) -> Result<(f64, f64)> {
    let chromium = crate::browser::ensure_chromium()?;
    let blank = scratch.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>")?;
    let load = |p: &Path| -> Result<f64> {
        let url = format!("file://{}", p.canonicalize()?.display());
        best_of(|| {
            let profile = tempfile_dir(scratch)?;
            output(
                Command::new(&chromium)
                    .args(crate::browser::FLAGS)
                    .arg(format!("--user-data-dir={}", profile.display()))
                    .arg("--dump-dom")
                    .arg(&url),
            )
            .map(drop)?;
            std::fs::remove_dir_all(&profile).ok();
            Ok(())
        })
    };
    Ok((load(page)?, load(&blank)?))
}

fn tempfile_dir(scratch: &Path) -> Result<PathBuf> {
    let d = scratch.join(format!("profile-{}", std::process::id()));
    if d.exists() {
        std::fs::remove_dir_all(&d)?;
    }
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
