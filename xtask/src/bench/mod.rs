//! `cargo xtask bench`: runs the criterion benchmarks and the Python peer's timings in one
//! run and prints every figure as a ratio to its baseline measured in the same run (raw
//! crc32c or memcpy throughput, memory bandwidth, numpy, the Python smdebug), so machine
//! load affects both sides alike.
//!
//! Statistic: the fastest of criterion's samples (time per iteration of the quickest
//! sample in `new/sample.json`) against the fastest of N ≥ 2 runs of a Python script. Both
//! sides take their best so that the VM's noise (a large write's time varies several-fold with
//! page-cache writeback) does not decide the ratio, and so that they are the same kind of
//! number.
//!
//! The trial and hook figures use the `large` preset (tests/peer/presets/large.json: 300
//! TRAIN steps × 101 tensors, 1.2 GB): the trial is written once by the release
//! `smdebug synth` into `target/bench-trial-large` (kept while it holds
//! `training_job_end.ts`) and read both by the criterion bench and by
//! `tests/peer/trial_bench_read.py`; the hook bench and `hook_bench_write.py` write 300
//! steps of the same shape. The S3 figures read the same shape with fewer steps
//! (`SMDEBUG_BENCH_S3_STEPS`, default 10, ~40 MB) from `s3://smdebug-test/bench-trial-s3` on
//! the moto server this command starts, written there by `smdebug synth` each run: few
//! steps, because the Python smdebug reads from moto far slower than moto serves, and more
//! would take minutes per phase. Peak memory is `tests/peer/trial_peak_memory.py`:
//! `smdebug dump` and the Python smdebug,
//! each reading every value of the large trial in its own process.
//!
//! The fused pass against read bandwidth, the whole-trial write against Python's writer and
//! the flight recorder's two candle benches vary from run to run by more than their goals'
//! margins, so they are taken as the median of three runs:
//! after the table is made, [`health::median_rows`] runs those benchmarks (and
//! their baselines) three more times and replaces the rows by the run with the median
//! ratio, named "(median of 3 runs)", every run's ratio kept under `runs`. The goals of the
//! candle rows (the hook at interval 500 and reductions every step against no hook, the
//! flight recorder against the same hook without it) are judged on
//! [`paired::rows`] instead: the `paired_steps` bench times the four cases in
//! alternating blocks of steps, so that the machine's slow spells fall on all of them
//! (median of 3 runs too).
//! The whole-trial write's runs also time a bare write of the same files
//! (`hook/write_trial_bare`), and a ceiling row after it divides each run's Python time by
//! that (how far any writer could get here).
//!
//! A run ends by writing `docs/benchmarks.md` (see [`doc`]), and with
//! `--json PATH` the result it was made from.
mod doc;
mod figures;
mod fleet;
mod frameworks;
mod health;
mod measure;
mod paired;
mod python;
mod pytorch_practice;
mod report;
mod scale;
mod serve;
mod small;
mod stores;
mod transformer_fleet;
mod trials;
mod whole_trial;

pub use report::BenchReportArgs;
pub use serve::BenchServeArgs;

use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Result};
use figures::{Baseline, BENCHES, FIGURES, HEALTH_FIGURES};
use measure::{python_seconds, python_trial_read, read_criterion, PYTHON_REPEAT};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;
use trials::{
    bench_env, ensure_large_trial, large_trial_dir, smdebug_bin, write_s3_trial, TrialSource,
};

/// Options of `cargo xtask bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Also write the run's result as one JSON document to PATH (`-`: standard output);
    /// `--doc-from` turns it into docs/benchmarks.md again.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Do not run anything: regenerate docs/benchmarks.md from a result written by `--json`.
    #[arg(long, value_name = "RESULT")]
    pub doc_from: Option<PathBuf>,
    /// Shorter criterion runs (1 s warm-up, 3 s measurement): noisier, for a quick look.
    /// The big trial figures sample flat with 10 samples either way.
    #[arg(long)]
    pub quick: bool,
    /// Do not run anything: report from the last criterion results on disk.
    #[arg(long)]
    pub no_run: bool,
    /// Only the many-small-tensors rows (see xtask/src/bench/small.rs).
    #[arg(long)]
    pub small: bool,
    /// Only the framework hooks' step times (see xtask/src/bench/frameworks.rs).
    #[arg(long)]
    pub frameworks: bool,
    /// Only the PyTorch-in-practice rows (see xtask/src/bench/pytorch_practice.rs): a small
    /// transformer compiled and under DDP, ours and the TensorBoard and wandb peers.
    #[arg(long)]
    pub pytorch_practice: bool,
    /// Only the fleet rows (see xtask/src/bench/fleet.rs): `smdebug rules` over many trials
    /// against the Python smdebug's loop, `rule_verdicts` on local Spark, and the transformer
    /// rules over a fleet of GPT trials (xtask/src/bench/transformer_fleet.rs).
    #[arg(long)]
    pub fleet: bool,
    /// Only the scaling table (docs/src/scale.md): open time and peak RSS of trials of 10k
    /// to 1M index entries, ours and the Python smdebug's (minutes; not in the default run).
    #[arg(long)]
    pub scale: bool,
}

pub fn run(args: BenchArgs) -> Result<()> {
    if let Some(result) = &args.doc_from {
        let doc = doc::read_result(result)?;
        let page = doc::write_doc(&doc)?;
        eprintln!("wrote {} from {}", page.display(), result.display());
        return Ok(());
    }
    if args.scale {
        scale::run(&crate::peer::ensure_peer()?)?;
        return Ok(());
    }
    if args.small {
        return small::run_only(args.quick);
    }
    if args.frameworks {
        let rows = frameworks::rows(args.quick);
        print_rows(&rows);
        return fail_on_error_rows(&rows);
    }
    if args.pytorch_practice {
        let rows = pytorch_practice::rows(args.quick);
        print_rows(&rows);
        return fail_on_error_rows(&rows);
    }
    if args.fleet {
        let peer = crate::peer::ensure_peer()?;
        step("cargo build --release -p smdebug-cli (rules, synth)");
        exec(cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
        let mut rows = fleet::rows(&peer);
        rows.extend(transformer_fleet::rows());
        print_rows(&rows);
        return fail_on_error_rows(&rows);
    }
    let started = SystemTime::now();
    let mut services = None;
    // Results older than this run are leftovers of an earlier one: not reported as new.
    let mut since = None;
    // Why a figure's inputs could not be prepared (e.g. the S3 trial), keyed by what it
    // prevents; reported as error rows instead of aborting the other figures.
    let mut s3_setup_error = None;
    let mut failed = Vec::new();
    if !args.no_run {
        since = Some(SystemTime::now());
        let peer = crate::peer::ensure_peer()?;
        let tools = crate::peer::ensure_tools()?;
        let s3 = crate::services::S3Server::start(&tools)?;
        step("cargo build --release -p smdebug-cli (synth, dump)");
        exec(cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
        ensure_large_trial()?;
        if let Err(e) = write_s3_trial(&s3.env()) {
            eprintln!("warning: no S3 trial, the S3 figures will not run: {e:#}");
            s3_setup_error = Some(format!("{e:#}"));
        }
        for (pkg, bench) in BENCHES {
            step(&format!("cargo bench -p {pkg} --bench {bench}"));
            let mut cmd = cargo();
            cmd.args(["bench", "-p", pkg, "--bench", bench, "--"])
                .envs(s3.env())
                .envs(bench_env(bench, s3_setup_error.is_none()));
            if args.quick {
                cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
            }
            // One target failing (say, a crate another change broke) still leaves the
            // others' figures worth printing; its figures become error rows.
            if let Err(e) = exec(&mut cmd) {
                eprintln!("warning: {pkg}/{bench} failed: {e:#}");
                failed.push(format!("{pkg} --bench {bench}"));
            }
        }
        services = Some((peer, s3));
    }
    let results = read_criterion(&root().join("target/criterion"), since)?;
    let peer_python = match &services {
        Some((p, _)) => p.clone(),
        None => crate::peer::ensure_peer()?,
    };
    let s3_env = services.as_ref().map(|(_, s3)| s3.env());
    let mut python_trial: BTreeMap<TrialSource, std::result::Result<Value, String>> =
        BTreeMap::new();
    let mut rows = Vec::new();
    for f in FIGURES.iter().chain(HEALTH_FIGURES) {
        let Some(ours) = results.get(f.bench) else {
            let why = match (&s3_setup_error, f.bench.starts_with("trial_s3/")) {
                (Some(e), true) => format!("no S3 trial: {e}"),
                _ => format!("benchmark {} did not run", f.bench),
            };
            rows.push(json!({"name": f.name, "error": why}));
            continue;
        };
        let (baseline_name, baseline_seconds) = match &f.baseline {
            Baseline::Bench(id) => match results.get(*id) {
                Some(b) => (id.to_string(), b.seconds),
                None => {
                    rows.push(
                        json!({"name": f.name, "error": format!("baseline {id} did not run")}),
                    );
                    continue;
                }
            },
            Baseline::Nothing => (String::new(), f64::NAN),
            Baseline::PythonTrialRead(source, phase) => {
                let timing = python_trial.entry(*source).or_insert_with(|| {
                    python_trial_read(&peer_python, *source, s3_env.as_deref())
                        .map_err(|e| format!("{e:#}"))
                });
                let secs = match timing {
                    Ok(v) => v["best_seconds"][*phase]
                        .as_f64()
                        .ok_or_else(|| format!("no Python timing for {phase}")),
                    Err(e) => Err(format!("Python smdebug read failed: {e}")),
                };
                match secs {
                    Ok(secs) => (format!("python smdebug {phase} (best)"), secs),
                    Err(e) => {
                        rows.push(json!({"name": f.name, "error": e}));
                        continue;
                    }
                }
            }
            Baseline::Python(script, script_args) => {
                match python_seconds(&peer_python, script, script_args) {
                    Ok(secs) => (format!("python {script} (best)"), secs),
                    Err(e) => {
                        rows.push(
                            json!({"name": f.name, "error": format!("baseline {script}: {e:#}")}),
                        );
                        continue;
                    }
                }
            }
        };
        let (value, unit) = match ours.bytes {
            Some(b) if ours.seconds > 1e-6 => (b / ours.seconds / 1e9, "GB/s"),
            _ if ours.seconds < 1e-6 => (ours.seconds * 1e9, "ns"),
            _ if ours.seconds < 1e-3 => (ours.seconds * 1e6, "µs"),
            _ if ours.seconds < 1.0 => (ours.seconds * 1e3, "ms"),
            _ => (ours.seconds, "s"),
        };
        let ratio = baseline_seconds / ours.seconds;
        let ratio = if ratio.is_finite() { Some(ratio) } else { None };
        rows.push(json!({
            "name": f.name, "value": value, "unit": unit, "baseline": baseline_name,
            "ratio": ratio, "goal": f.goal, "seconds": ours.seconds,
            "baseline_seconds": baseline_seconds.is_finite().then_some(baseline_seconds),
        }));
    }
    if !args.no_run {
        health::median_rows(&mut rows, &peer_python, args.quick);
        paired::rows(&mut rows, args.quick);
    }
    rows.push(whole_trial::peak_memory_row(&peer_python));
    rows.extend(stores::rows(
        &peer_python,
        &smdebug_bin(),
        s3_env.as_deref(),
    ));
    rows.extend(whole_trial::export_rows(&peer_python, &large_trial_dir()));
    rows.extend(small::rows(&peer_python, &smdebug_bin(), args.quick));
    rows.extend(python::bench_rows(
        &peer_python,
        &large_trial_dir(),
        &smdebug_bin(),
        1,
    ));
    if !args.no_run {
        rows.extend(frameworks::rows(args.quick));
        rows.extend(fleet::rows(&peer_python));
        rows.extend(transformer_fleet::rows());
    }
    rows.extend(report::report_rows(&large_trial_dir(), &smdebug_bin()));
    rows.extend(serve::rows(&smdebug_bin()));
    print_rows(&rows);
    let doc = doc::result_document(&rows, args.quick, started);
    if let Some(path) = &args.json {
        doc::write_result(&doc, path)?;
    }
    // Only a run writes the page: `--no-run` reports results of an earlier run whose date
    // and machine this command does not know.
    if !args.no_run {
        let page = doc::write_doc(&doc)?;
        eprintln!("wrote {}", page.display());
    }
    if !failed.is_empty() {
        bail!("benchmarks failed: {}", failed.join(", "));
    }
    Ok(())
}

/// `cargo xtask bench-report`: the report's rows alone, on the `large` trial and the release
/// binary unless told otherwise.
pub fn report_only(args: report::BenchReportArgs) -> Result<()> {
    report::run(args, &large_trial_dir(), &smdebug_bin())
}

/// `cargo xtask bench-serve`: the serve rows alone.
pub fn serve_only(args: serve::BenchServeArgs) -> Result<()> {
    let bin = args.bin.unwrap_or_else(smdebug_bin);
    for row in serve::rows(&bin) {
        println!("{row}");
    }
    Ok(())
}

fn print_rows(rows: &[Value]) {
    println!(
        "\nours: fastest criterion sample (time per iteration); Python: best of {PYTHON_REPEAT} runs; \
         ratio = baseline time / our time (higher is faster) unless the row says otherwise"
    );
    println!(
        "{:<58} {:>12} {:>9} {:>7}  baseline",
        "figure", "value", "ratio", "goal"
    );
    for r in rows {
        if let Some(e) = r.get("error") {
            println!("{:<58} {e}", r["name"].as_str().unwrap_or(""));
            continue;
        }
        let goal = r["goal"]
            .as_f64()
            .map(|g| format!("≥{g}"))
            .unwrap_or_default();
        let met = match r["goal"].as_f64() {
            Some(g) if r["ratio"].as_f64().unwrap_or(0.0) >= g => " ok",
            Some(_) => " MISSED",
            None => "",
        };
        println!(
            "{:<58} {:>7.2} {:<4} {:>9} {:>7}{met}  {}",
            r["name"].as_str().unwrap_or(""),
            r["value"].as_f64().unwrap_or(f64::NAN),
            r["unit"].as_str().unwrap_or(""),
            r["ratio"]
                .as_f64()
                .map(|x| format!("{x:.3}"))
                .unwrap_or_else(|| "-".into()),
            goal,
            r["baseline"].as_str().unwrap_or("")
        );
    }
}

/// `cargo xtask bench-stores`: the object-store rows alone.
pub fn stores_alone() -> Result<()> {
    stores::run_alone()
}

/// An error row is a figure that was not measured: the command fails, naming them.
fn fail_on_error_rows(rows: &[Value]) -> Result<()> {
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r.get("error").is_some())
        .map(|r| r["name"].as_str().unwrap_or("?"))
        .collect();
    if !failed.is_empty() {
        bail!("figures not measured: {}", failed.join("; "));
    }
    Ok(())
}
