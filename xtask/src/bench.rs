//! `cargo xtask bench`: runs the criterion benchmarks and the Python peer's timings in one
//! run and prints every figure as a ratio to its baseline measured in the same run (raw
//! crc32c or memcpy throughput, memory bandwidth, numpy, the Python smdebug), so machine
//! load affects both sides alike.
//!
//! Statistic: the fastest of criterion's samples (time per iteration of the quickest
//! sample in `new/sample.json`) against the fastest of N ≥ 2 runs of a Python script. Both
//! sides take their best so that the VM's noise (a 1.2 GB write varies 0.4–2 s with
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
//! the moto server this command starts, written there by `smdebug synth` each run: moto
//! serves ~13 MB/s and the Python smdebug reads from it at ~2 MB/s, so the 30 steps
//! would take minutes per phase. Peak memory is `tests/peer/trial_peak_memory.py`:
//! `smdebug dump` and the Python smdebug,
//! each reading every value of the large trial in its own process.
//!
//! Issue 18 asks for the median of three runs for the fused pass against read bandwidth and
//! for the whole-trial write against Python's writer, and the flight recorder's two candle
//! benches (whose ratio moved by several percent from run to run) are taken the same way:
//! after the table is made, [`crate::bench_health::median_rows`] runs those benchmarks (and
//! their baselines) three more times and replaces the rows by the run with the median
//! ratio, named "(median of 3 runs)", every run's ratio kept under `runs`. The goals of the
//! candle rows (the hook at interval 500 and reductions every step against no hook, the
//! flight recorder against the same hook without it) are judged on
//! [`crate::bench_paired::rows`] instead: the `paired_steps` bench times the four cases in
//! alternating blocks of steps, so that the machine's slow spells fall on all of them
//! (median of 3 runs too).
//! The whole-trial write's runs also time a bare write of the same files
//! (`hook/write_trial_bare`), and a ceiling row after it divides each run's Python time by
//! that (how far any writer could get here).
//!
//! A run ends by writing `docs/benchmarks.md` (see [`crate::bench_doc`]), and with
//! `--json PATH` the result it was made from.
use crate::bench_doc;
use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

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
    /// Only the many-small-tensors rows (see xtask/src/bench_small.rs).
    #[arg(long)]
    pub small: bool,
    /// Only the framework hooks' step times (see xtask/src/bench_frameworks.rs).
    #[arg(long)]
    pub frameworks: bool,
    /// Only the scaling table (docs/src/scale.md): open time and peak RSS of trials of 10k
    /// to 1M index entries, ours and the Python smdebug's (minutes; not in the default run).
    #[arg(long)]
    pub scale: bool,
}

/// What a figure is compared with.
pub(crate) enum Baseline {
    /// Another criterion benchmark of the same run, by full id.
    Bench(&'static str),
    /// A Python script under `tests/peer/` run with the peer venv; it prints JSON with
    /// `seconds` or `best_s` (its fastest run of the same work as one iteration).
    Python(&'static str, &'static [&'static str]),
    /// The real smdebug timing one phase of reading the trial the trial benchmark read
    /// (`tests/peer/trial_bench_read.py`), by phase id.
    PythonTrialRead(TrialSource, &'static str),
    /// An absolute figure: printed without a ratio.
    Nothing,
}

/// Which trial a Python read timing reads.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TrialSource {
    /// [`large_trial_dir`].
    Local,
    /// [`S3_TRIAL`] on the moto server.
    S3,
}

/// Steps of the `large` preset, for the hook write benchmark and its Python peer.
const LARGE_STEPS: &str = "300";

/// Where the S3 figures' trial lives on the moto server.
const S3_TRIAL: &str = "s3://smdebug-test/bench-trial-s3";

/// Python runs per timing; the fastest counts.
pub(crate) const PYTHON_REPEAT: &str = "2";

/// The `large`-preset trial both the trial benchmark and the Python peer read.
fn large_trial_dir() -> PathBuf {
    root().join("target/bench-trial-large")
}

fn large_preset() -> PathBuf {
    root().join("tests/peer/presets/large.json")
}

/// The release smdebug CLI (`cargo build --release -p smdebug-cli`).
fn smdebug_bin() -> PathBuf {
    root().join("target/release/smdebug")
}

/// `name` from the environment, else `default`, so a user can shrink a run.
fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// One line of the table.
pub(crate) struct Figure {
    pub(crate) name: &'static str,
    /// Criterion full id (`group/function/parameter`).
    pub(crate) bench: &'static str,
    pub(crate) baseline: Baseline,
    /// The ratio the issue asks for (value / baseline as speed; higher is better).
    pub(crate) goal: Option<f64>,
}

/// Every figure the issues ask for. Ratios are speed ratios: baseline time / our time.
pub(crate) const FIGURES: &[Figure] = &[
    Figure {
        name: "record: framing 1 MiB (both CRCs, to a sink) vs raw crc32c",
        bench: "record/frame_to_sink/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: Some(0.8),
    },
    Figure {
        name: "record: framing 1 MiB into a buffer vs raw crc32c",
        bench: "record/write_crc/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: framing 1 MiB into a buffer vs memcpy",
        bench: "record/write_crc/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: read+verify 1 MiB at index offset vs raw crc32c",
        bench: "record/decode_at/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: Some(0.8),
    },
    Figure {
        name: "record: streaming read+verify 1 MiB vs memcpy",
        bench: "record/read_verify/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: framing a 4 B payload (time per record)",
        bench: "record/frame_to_sink/4B",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "record: decode event with 1 MiB f32 tensor vs memcpy",
        bench: "record/decode_event_f32/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "reduce: fused pass 64 Mi f32 vs memory read bandwidth",
        bench: "reduce/fused_f32_64Mi",
        baseline: Baseline::Bench("reduce/read_bandwidth_f32_64Mi"),
        goal: Some(0.6),
    },
    Figure {
        name: "reduce: fused pass 64 Mi f32 vs numpy",
        bench: "reduce/fused_f32_64Mi",
        baseline: Baseline::Python("reduce_bench_numpy.py", &["--repeat", PYTHON_REPEAT]),
        goal: None,
    },
    Figure {
        name: "trial: open (index + collections) vs Python smdebug",
        bench: "trial/open",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/open"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: list tensors and steps vs Python smdebug",
        bench: "trial/list",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/list"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs Python smdebug",
        bench: "trial/every_value",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/every_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: one reduction per value vs Python smdebug",
        bench: "trial/one_reduction_per_value",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/one_reduction_per_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs raw read of the same files",
        bench: "trial/every_value",
        baseline: Baseline::Bench("trial/raw_read_baseline"),
        goal: Some(0.5),
    },
    Figure {
        // Not a figure of ours: how much faster than Python any reader that reads the
        // files could be at every value on this machine.
        name: "trial: ceiling for every value (Python every value / raw read of the files)",
        bench: "trial/raw_read_baseline",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/every_value"),
        goal: None,
    },
    Figure {
        name: "trial S3: open vs Python smdebug",
        bench: "trial_s3/open",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/open"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: every value vs Python smdebug",
        bench: "trial_s3/every_value",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/every_value"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: one reduction per value vs Python smdebug",
        bench: "trial_s3/one_reduction_per_value",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/one_reduction_per_value"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: every value vs raw GET of the same files",
        bench: "trial_s3/every_value",
        baseline: Baseline::Bench("trial_s3/raw_get_baseline"),
        goal: None,
    },
    Figure {
        name: "rules: VanishingGradient per step, large shape (every step)",
        bench: "rules/vanishing_gradient_step",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "hook: write a whole trial vs Python smdebug's writer",
        bench: "hook/write_trial_large",
        baseline: Baseline::Python("hook_bench_write.py", &["--repeat", PYTHON_REPEAT]),
        goal: Some(20.0),
    },
    Figure {
        name: "hook: training-thread cost per small tensor (goal ≤2 µs)",
        bench: "hook/save_small_tensor",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "hook: training-thread cost per 1 MiB tensor (goal ≥3 GB/s)",
        bench: "hook/save_1mib_tensor",
        baseline: Baseline::Nothing,
        goal: None,
    },
    // The goals of these two are judged on their paired rows (`bench_paired`).
    Figure {
        name: CRITERION_INTERVAL,
        bench: "candle_overhead/step/hook_interval_500",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: None,
    },
    Figure {
        name: CRITERION_REDUCTIONS,
        bench: "candle_overhead/step/hook_reductions_every_step",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: None,
    },
    Figure {
        name: "storage: 1000 ranged reads, concurrent vs sequential",
        bench: "ranged_reads_1000/concurrent",
        baseline: Baseline::Bench("ranged_reads_1000/sequential"),
        goal: None,
    },
    Figure {
        name: "storage: 1000 ranged reads, coalesced vs sequential",
        bench: "ranged_reads_1000/coalesced",
        baseline: Baseline::Bench("ranged_reads_1000/sequential"),
        goal: None,
    },
];

/// The criterion row of the hook at interval 500 against no hook (its goal, ≤ 1 % slower,
/// is judged on its paired row).
pub(crate) const CRITERION_INTERVAL: &str =
    "candle: step with hook at save_interval 500 vs no hook, as two criterion benches in turn (no goal: see the paired row)";

/// The criterion row of reductions every step against no hook (its goal, ≤ 5 % slower, is
/// judged on its paired row).
pub(crate) const CRITERION_REDUCTIONS: &str =
    "candle: step with reductions saved every step vs no hook, as two criterion benches in turn (no goal: see the paired row)";

/// The goal of the figure named `name`.
pub(crate) fn goal_of(name: &str) -> Option<f64> {
    // Both lists: a median row of issue 18 may replace a row of either.
    FIGURES
        .iter()
        .chain(crate::bench_health::FIGURES)
        .find(|f| f.name == name)
        .and_then(|f| f.goal)
}

/// Criterion benchmarks to run: (package, bench target).
const BENCHES: &[(&str, &str)] = &[
    ("smdebug-record", "record"),
    ("smdebug-reduce", "reduce"),
    ("smdebug-storage", "storage"),
    ("smdebug-trial", "trial"),
    ("smdebug-rules", "rules"),
    ("smdebug-hook", "hook"),
    ("smdebug-candle", "overhead"),
];

/// One criterion result: the fastest sample's seconds per iteration and bytes per
/// iteration (if declared).
pub(crate) struct Measured {
    pub(crate) seconds: f64,
    pub(crate) bytes: Option<f64>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    if let Some(result) = &args.doc_from {
        let doc = bench_doc::read_result(result)?;
        let page = bench_doc::write_doc(&doc)?;
        eprintln!("wrote {} from {}", page.display(), result.display());
        return Ok(());
    }
    if args.scale {
        crate::scale::run(&crate::peer::ensure_peer()?)?;
        return Ok(());
    }
    if args.small {
        return crate::bench_small::run_only(args.quick);
    }
    if args.frameworks {
        let rows = crate::bench_frameworks::rows(args.quick);
        print_rows(&rows);
        return Ok(());
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
    for f in FIGURES.iter().chain(crate::bench_health::FIGURES) {
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
        crate::bench_health::median_rows(&mut rows, &peer_python, args.quick);
        crate::bench_paired::rows(&mut rows, args.quick);
    }
    rows.push(peak_memory_row(&peer_python));
    rows.extend(crate::bench_stores::rows(
        &peer_python,
        &smdebug_bin(),
        s3_env.as_deref(),
    ));
    rows.extend(export_rows(&peer_python, &large_trial_dir()));
    rows.extend(crate::bench_small::rows(
        &peer_python,
        &smdebug_bin(),
        args.quick,
    ));
    rows.extend(crate::python::bench_rows(
        &peer_python,
        &large_trial_dir(),
        &smdebug_bin(),
        1,
    ));
    if !args.no_run {
        rows.extend(crate::bench_frameworks::rows(args.quick));
    }
    rows.extend(crate::bench_report::report_rows(
        &large_trial_dir(),
        &smdebug_bin(),
    ));
    print_rows(&rows);
    let doc = bench_doc::result_document(&rows, args.quick, started);
    if let Some(path) = &args.json {
        bench_doc::write_result(&doc, path)?;
    }
    // Only a run writes the page: `--no-run` reports results of an earlier run whose date
    // and machine this command does not know.
    if !args.no_run {
        let page = bench_doc::write_doc(&doc)?;
        eprintln!("wrote {}", page.display());
    }
    if !failed.is_empty() {
        bail!("benchmarks failed: {}", failed.join(", "));
    }
    Ok(())
}

/// `cargo xtask bench-report`: the report's rows alone, on the `large` trial and the release
/// binary unless told otherwise.
pub fn report_only(args: crate::bench_report::BenchReportArgs) -> Result<()> {
    crate::bench_report::run(args, &large_trial_dir(), &smdebug_bin())
}

/// Extra environment of one criterion bench target: the trial and hook benches on the
/// `large` preset's shape.
pub(crate) fn bench_env(bench: &str, with_s3: bool) -> Vec<(String, String)> {
    let mut env = Vec::new();
    match bench {
        "trial" => {
            let dir = large_trial_dir();
            env.push(("SMDEBUG_TRIAL_BENCH_DIR".into(), dir.display().to_string()));
            // Only used if the trial is missing: the bench's own writer, same shape.
            env.push(("SMDEBUG_TRIAL_BENCH_STEPS".into(), LARGE_STEPS.into()));
            env.push(("SMDEBUG_TRIAL_BENCH_TENSORS".into(), "101".into()));
            env.push(("SMDEBUG_TRIAL_BENCH_SIDE".into(), "100".into()));
            if with_s3 {
                env.push(("SMDEBUG_TRIAL_BENCH_S3_URL".into(), S3_TRIAL.into()));
            }
        }
        "hook" => env.push((
            "SMDEBUG_HOOK_BENCH_STEPS".into(),
            env_or("SMDEBUG_HOOK_BENCH_STEPS", LARGE_STEPS),
        )),
        _ => {}
    }
    env
}

/// Writes the `large` preset into [`large_trial_dir`] unless a complete one is there.
/// Written beside it and renamed, so an interrupted write is never taken for a trial.
fn ensure_large_trial() -> Result<()> {
    let dir = large_trial_dir();
    if dir.join("training_job_end.ts").exists() {
        return Ok(());
    }
    step(&format!(
        "smdebug synth large.json {} (1.2 GB)",
        dir.display()
    ));
    let tmp = dir.with_extension("partial");
    for d in [&dir, &tmp] {
        if d.exists() {
            std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    exec(
        Command::new(smdebug_bin())
            .arg("synth")
            .arg(large_preset())
            .arg(&tmp),
    )?;
    std::fs::rename(&tmp, &dir)?;
    Ok(())
}

/// Writes the S3 figures' trial: the `large` preset with `SMDEBUG_BENCH_S3_STEPS` steps.
/// The moto server is new each run, so this runs every time.
fn write_s3_trial(s3_env: &[(String, String)]) -> Result<()> {
    let steps: u64 = env_or("SMDEBUG_BENCH_S3_STEPS", "10")
        .parse()
        .context("SMDEBUG_BENCH_S3_STEPS")?;
    let mut recipe: Value = serde_json::from_slice(&std::fs::read(large_preset())?)?;
    recipe["schedule"] = json!([{"mode": "TRAIN", "steps": steps}]);
    recipe["description"] = json!(format!("the large preset's shape, {steps} TRAIN steps"));
    let path = root().join("target/bench-trial-s3-recipe.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&recipe)?)?;
    step(&format!("smdebug synth ({steps} steps) {S3_TRIAL}"));
    exec(
        Command::new(smdebug_bin())
            .args(["synth", "--quiet"])
            .arg(&path)
            .arg(S3_TRIAL)
            .envs(s3_env.iter().map(|(k, v)| (k, v))),
    )
}

/// Peak RSS of `smdebug dump` vs the Python smdebug, each reading every value of the
/// large trial (`tests/peer/trial_peak_memory.py`). Ratio: Python's peak / ours, so
/// higher means we need less memory.
fn peak_memory_row(python: &Path) -> Value {
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
/// 200 MB / ours, so ≥ 1 meets the bound).
fn export_rows(python: &Path, trial: &Path) -> Vec<Value> {
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
        json!({
            "name": READ, "value": ours, "unit": "s",
            "baseline": "smdebug dump, every value (best)",
            "ratio": read / ours, "goal": 0.5, "seconds": ours, "baseline_seconds": read,
        }),
        json!({
            "name": MEMORY, "value": rss / 1e6, "unit": "MB",
            "baseline": "ratio = 200 MB / ours (the issue's bound)",
            "ratio": 200e6 / rss, "goal": 1.0, "ours_max_rss_bytes": rss,
        }),
    ]
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

fn read_one(new_dir: &Path, since: Option<SystemTime>) -> Result<Option<(String, Measured)>> {
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
fn fastest_per_iteration(sample: &Value) -> Option<f64> {
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
fn python_trial_read(
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
