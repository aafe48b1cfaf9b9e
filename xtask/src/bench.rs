//! `cargo xtask bench`: runs the criterion benchmarks and the Python peer's timings in one
//! run and prints every figure as a ratio to its baseline measured in the same run (raw
//! crc32c or memcpy throughput, memory bandwidth, numpy, the Python smdebug), so machine
//! load affects both sides alike.
use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Options of `cargo xtask bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Print one JSON object per figure instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Shorter criterion runs (1 s warm-up, 3 s measurement): noisier, for a quick look.
    #[arg(long)]
    pub quick: bool,
    /// Do not run anything: report from the last criterion results on disk.
    #[arg(long)]
    pub no_run: bool,
}

/// What a figure is compared with.
enum Baseline {
    /// Another criterion benchmark of the same run, by full id.
    Bench(&'static str),
    /// A Python script under `tests/peer/` run with the peer venv; it prints JSON with
    /// `seconds` (for the same work as the benchmark's one iteration).
    Python(&'static str, &'static [&'static str]),
    /// The real smdebug timing one phase of reading the trial the trial benchmark wrote
    /// (`tests/peer/trial_bench_read.py` on `target/bench-trial`), by phase id.
    PythonTrialRead(&'static str),
    /// An absolute figure: printed without a ratio.
    Nothing,
}

/// Where the trial benchmark keeps its trial, so the Python peer reads the same files.
fn bench_trial_dir() -> std::path::PathBuf {
    root().join("target/bench-trial")
}

/// One line of the table.
struct Figure {
    name: &'static str,
    /// Criterion full id (`group/function/parameter`).
    bench: &'static str,
    baseline: Baseline,
    /// The ratio the issue asks for (value / baseline as speed; higher is better).
    goal: Option<f64>,
}

/// Every figure the issues ask for. Ratios are speed ratios: baseline time / our time.
const FIGURES: &[Figure] = &[
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
        baseline: Baseline::Python("reduce_bench_numpy.py", &[]),
        goal: None,
    },
    Figure {
        name: "trial: open (index + collections) vs Python smdebug",
        bench: "trial/open",
        baseline: Baseline::PythonTrialRead("trial/open"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: list tensors and steps vs Python smdebug",
        bench: "trial/list",
        baseline: Baseline::PythonTrialRead("trial/list"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs Python smdebug",
        bench: "trial/every_value",
        baseline: Baseline::PythonTrialRead("trial/every_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: one reduction per value vs Python smdebug",
        bench: "trial/one_reduction_per_value",
        baseline: Baseline::PythonTrialRead("trial/one_reduction_per_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs raw read of the same files",
        bench: "trial/every_value",
        baseline: Baseline::Bench("trial/raw_read_baseline"),
        goal: Some(0.5),
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
        baseline: Baseline::Python("hook_bench_write.py", &["--repeat", "1"]),
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
    Figure {
        name: "candle: step with hook at save_interval 500 vs no hook",
        bench: "candle_overhead/step/hook_interval_500",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: Some(0.99),
    },
    Figure {
        name: "candle: step with reductions saved every step vs no hook",
        bench: "candle_overhead/step/hook_reductions_every_step",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: Some(0.95),
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

/// One criterion result: mean seconds per iteration and bytes per iteration (if declared).
struct Measured {
    seconds: f64,
    bytes: Option<f64>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    let mut services = None;
    if !args.no_run {
        let peer = crate::peer::ensure_peer()?;
        let tools = crate::peer::ensure_tools()?;
        let s3 = crate::services::S3Server::start(&tools)?;
        for (pkg, bench) in BENCHES {
            step(&format!("cargo bench -p {pkg} --bench {bench}"));
            let mut cmd = cargo();
            cmd.args(["bench", "-p", pkg, "--bench", bench, "--"])
                .envs(s3.env());
            if args.quick {
                cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
            }
            exec(&mut cmd)?;
        }
        services = Some((peer, s3));
    }
    let results = read_criterion(&root().join("target/criterion"))?;
    let peer_python = match &services {
        Some((p, _)) => p.clone(),
        None => crate::peer::ensure_peer()?,
    };
    let mut python_trial: Option<Value> = None;
    let mut rows = Vec::new();
    for f in FIGURES {
        let Some(ours) = results.get(f.bench) else {
            rows.push(
                json!({"name": f.name, "error": format!("benchmark {} did not run", f.bench)}),
            );
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
            Baseline::PythonTrialRead(phase) => {
                if python_trial.is_none() {
                    python_trial = Some(python_trial_read(&peer_python)?);
                }
                let secs = python_trial
                    .as_ref()
                    .and_then(|v| v["median_seconds"][*phase].as_f64());
                match secs {
                    Some(secs) => (format!("python smdebug {phase}"), secs),
                    None => {
                        rows.push(json!({"name": f.name, "error": format!("no Python timing for {phase}")}));
                        continue;
                    }
                }
            }
            Baseline::Python(script, script_args) => {
                let secs = python_seconds(&peer_python, script, script_args)
                    .with_context(|| format!("baseline {script}"))?;
                (format!("python {script}"), secs)
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
            "ratio": ratio, "goal": f.goal,
        }));
    }
    print_rows(&rows, args.json);
    Ok(())
}

fn print_rows(rows: &[Value], as_json: bool) {
    if as_json {
        for r in rows {
            println!("{r}");
        }
        return;
    }
    println!(
        "\n{:<58} {:>12} {:>9} {:>7}  baseline",
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

/// Reads every `benchmark.json` + `estimates.json` pair criterion left under `dir/**/new/`.
fn read_criterion(dir: &Path) -> Result<BTreeMap<String, Measured>> {
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
                    if let Some((id, m)) = read_one(&p)? {
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

fn read_one(new_dir: &Path) -> Result<Option<(String, Measured)>> {
    let (Ok(bench), Ok(est)) = (
        std::fs::read(new_dir.join("benchmark.json")),
        std::fs::read(new_dir.join("estimates.json")),
    ) else {
        return Ok(None);
    };
    let bench: Value = serde_json::from_slice(&bench)?;
    let est: Value = serde_json::from_slice(&est)?;
    let id = bench["full_id"].as_str().unwrap_or_default().to_string();
    let ns = est["mean"]["point_estimate"].as_f64().unwrap_or(f64::NAN);
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

/// Times the real smdebug reading the trial benchmark's trial, once per phase.
fn python_trial_read(python: &Path) -> Result<Value> {
    let dir = bench_trial_dir();
    if !dir.exists() {
        bail!(
            "{} does not exist: the trial benchmark did not run",
            dir.display()
        );
    }
    step("Python smdebug reading the same trial (trial_bench_read.py)");
    let out = root().join("target/bench-trial-python.json");
    crate::util::run(
        Command::new(python)
            .arg(root().join("tests/peer/trial_bench_read.py"))
            .arg(&dir)
            .args(["--repeat", "1", "--json"])
            .arg(&out)
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    Ok(serde_json::from_slice(&std::fs::read(&out)?)?)
}

/// Runs a peer timing script (several times; the fastest run counts, as criterion's
/// iterations are warm too) and returns the seconds it reports.
fn python_seconds(python: &Path, script: &str, args: &[&str]) -> Result<f64> {
    let out = crate::util::output(
        Command::new(python)
            .arg(root().join("tests/peer").join(script))
            .args(args)
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let v: Value =
        serde_json::from_str(out.trim()).with_context(|| format!("{script} printed {out}"))?;
    v["seconds"]
        .as_f64()
        .with_context(|| format!("{script} printed no `seconds`: {out}"))
}
