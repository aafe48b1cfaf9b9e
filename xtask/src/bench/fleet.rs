//! The fleet figures of `cargo xtask bench` (`--fleet` runs only these): judging a fleet
//! of small trials.
//!
//! * `smdebug rules FLEET` (the release binary, `-j 2`) against the loop a user of the
//!   original writes: per trial `create_trial` and smdebug's own `invoke_rule` with the
//!   same two rules (tests/peer/fleet_rules_bench.py). Ratio: Python seconds / ours; both
//!   must find every trial and agree on how many fired each rule.
//! * `smdebug_rs.spark.rule_verdicts` on a local Spark (crates/python/bench/spark_fleet.py,
//!   in the Spark venv with the release wheel): the verdicts' time, and apart from it
//!   Spark's own session start, which a cluster pays once per application. It judges the
//!   same fleet with the same rules, and must agree with `smdebug rules` on how many
//!   trials fired each rule.
//!
//! * A ceiling, not a figure of ours: the Python loop's seconds over those of a bare read of
//!   every file of the fleet (a folder walk and one `read` per file, on [`JOBS`] threads,
//!   inside this process: no process start, no parsing), the most any reader of these files
//!   could gain on this machine.
//!
//! The fleet is [`FLEET_TRIALS`] copies of the `small` preset written by `smdebug synth`
//! into `target/bench-fleet` (kept while its last trial is complete).
use super::trials::smdebug_bin;
use crate::peer::SPARK;
use crate::util::{output, root, run, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Trials in the benchmark's fleet.
const FLEET_TRIALS: usize = 200;
/// Trials evaluated at once by `smdebug rules`.
const JOBS: &str = "2";
/// The rules, as `smdebug rules --rule` takes them; fleet_rules_bench.py has their Python
/// twins.
const RULES: [&str; 2] = [
    "ExplodingTensor:tensor_regex=^gradient/,only_nan=True",
    "VanishingGradient",
];
/// Goal: Python seconds / ours.
const GOAL: f64 = 50.0;
/// Runs of `smdebug rules` (the fastest counts) and passes of the Python loop.
const REPEAT: usize = 3;
const PYTHON_REPEAT: &str = "2";

/// The fleet rows; a figure that cannot be measured is an error row saying why.
pub fn rows(peer_python: &Path) -> Vec<Value> {
    let name = format!("fleet: smdebug rules over {FLEET_TRIALS} trials (-j {JOBS})");
    let ours = rules_row(&name, peer_python);
    let fired = ours.as_ref().ok().map(|r| r["fired"].clone());
    let python = ours
        .as_ref()
        .ok()
        .and_then(|r| r["baseline_seconds"].as_f64());
    let mut rows = vec![match ours {
        Ok(r) => r,
        Err(e) => json!({"name": name, "error": format!("{e:#}")}),
    }];
    let ceiling = format!(
        "fleet: ceiling (Python loop / a bare read of every file of the {FLEET_TRIALS} trials)"
    );
    rows.push(match python.map(ceiling_row) {
        Some(Ok(mut r)) => {
            r.insert("name".into(), ceiling.clone().into());
            Value::Object(r)
        }
        Some(Err(e)) => json!({"name": ceiling, "error": format!("{e:#}")}),
        None => json!({"name": ceiling, "error": "no Python figure to compare with"}),
    });
    match spark_rows(fired.as_ref()) {
        Ok(r) => rows.extend(r),
        Err(e) => rows.push(json!({
            "name": format!("fleet: rule_verdicts on local Spark over {FLEET_TRIALS} trials"),
            "error": format!("{e:#}"),
        })),
    }
    rows
}

fn fleet_dir() -> PathBuf {
    root().join("target/bench-fleet")
}

/// Writes the fleet unless a complete one is there.
fn ensure_fleet() -> Result<PathBuf> {
    let dir = fleet_dir();
    let last = dir.join(format!("job-{:03}", FLEET_TRIALS - 1));
    if last.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    step(&format!(
        "writing {FLEET_TRIALS} trials (preset small) into {}",
        dir.display()
    ));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let first = dir.join("job-000");
    run(Command::new(smdebug_bin())
        .arg("synth")
        .arg(root().join("tests/peer/presets/small.json"))
        .arg(&first)
        .arg("-q"))?;
    for i in 1..FLEET_TRIALS {
        copy_dir(&first, &dir.join(format!("job-{i:03}")))?;
    }
    Ok(dir)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)
                .with_context(|| format!("{} -> {}", e.path().display(), target.display()))?;
        }
    }
    Ok(())
}

/// The files below `dir`, walked depth first.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e?;
        if e.file_type()?.is_dir() {
            files_below(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

/// The ceiling row's fields: the fastest of [`REPEAT`] bare reads of the fleet (each trial
/// walked and its files read whole, trials shared among [`JOBS`] threads) against
/// `python_seconds`.
fn ceiling_row(python_seconds: f64) -> Result<serde_json::Map<String, Value>> {
    let fleet = ensure_fleet()?;
    let threads: usize = JOBS.parse()?;
    let mut best = f64::INFINITY;
    let mut bytes = 0usize;
    for _ in 0..REPEAT {
        let started = Instant::now();
        let mut trials: Vec<PathBuf> = std::fs::read_dir(&fleet)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        trials.sort();
        let read = |share: &[PathBuf]| -> Result<usize> {
            let mut n = 0;
            for t in share {
                let mut files = Vec::new();
                files_below(t, &mut files)?;
                for f in files {
                    n += std::fs::read(&f)?.len();
                }
            }
            Ok(n)
        };
        let share = trials.len().div_ceil(threads.max(1)).max(1);
        bytes = std::thread::scope(|s| {
            let handles: Vec<_> = trials
                .chunks(share)
                .map(|c| s.spawn(move || read(c)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a reader panicked")))
                })
                .sum::<Result<usize>>()
        })?;
        best = best.min(started.elapsed().as_secs_f64());
    }
    let row = json!({
        "value": best, "unit": "s",
        "baseline": format!("python create_trial + invoke_rule loop (best) / a bare read of {bytes} bytes on {JOBS} threads, in process (best of {REPEAT})"),
        "ratio": python_seconds / best, "goal": null, "seconds": best,
        "baseline_seconds": python_seconds,
    });
    match row {
        Value::Object(m) => Ok(m),
        _ => bail!("not an object"),
    }
}

/// Per rule, the number of trials where it fired, from `smdebug rules --json` output.
fn fired_per_rule(stdout: &str) -> Result<(usize, serde_json::Map<String, Value>)> {
    let mut trials = 0;
    let mut fired = serde_json::Map::new();
    for r in RULES {
        let name = r.split(':').next().unwrap_or(r);
        fired.insert(name.to_owned(), json!(0));
    }
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).with_context(|| format!("line {line}"))?;
        if v.get("error").is_some() {
            bail!("smdebug rules could not read a trial: {line}");
        }
        let Some(summary) = v.get("summary").and_then(Value::as_array) else {
            continue;
        };
        trials += 1;
        for s in summary {
            let rule = s["rule"].as_str().unwrap_or_default();
            if s["firings"].as_u64().unwrap_or(0) > 0 {
                if let Some(n) = fired.get_mut(rule) {
                    *n = json!(n.as_u64().unwrap_or(0) + 1);
                }
            }
        }
    }
    Ok((trials, fired))
}

fn rules_row(name: &str, peer_python: &Path) -> Result<Value> {
    let fleet = ensure_fleet()?;
    step(&format!("smdebug rules over {}", fleet.display()));
    let mut best = f64::INFINITY;
    let mut ours = None;
    for _ in 0..REPEAT {
        let mut cmd = Command::new(smdebug_bin());
        cmd.arg("rules").arg(&fleet).args(["--json", "-j", JOBS]);
        for r in RULES {
            cmd.args(["--rule", r]);
        }
        let started = Instant::now();
        let out = cmd.output().context("running smdebug rules")?;
        best = best.min(started.elapsed().as_secs_f64());
        // 0: no rule fired, 1: one fired; 2 is an error.
        if !matches!(out.status.code(), Some(0 | 1)) {
            bail!(
                "smdebug rules failed with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ours = Some(fired_per_rule(&String::from_utf8_lossy(&out.stdout))?);
    }
    let (trials, fired) = ours.context("no run")?;
    step("Python smdebug: create_trial + invoke_rule per trial (fleet_rules_bench.py)");
    let py = output(
        Command::new(peer_python)
            .arg(root().join("tests/peer/fleet_rules_bench.py"))
            .arg(&fleet)
            .args(["--repeat", PYTHON_REPEAT])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    let py: Value = serde_json::from_str(py.trim()).with_context(|| format!("printed {py}"))?;
    let py_seconds = py["seconds"].as_f64().context("no `seconds`")?;
    if trials != FLEET_TRIALS || py["trials"].as_u64() != Some(FLEET_TRIALS as u64) {
        bail!(
            "trials found: ours {trials}, Python {}, expected {FLEET_TRIALS}",
            py["trials"]
        );
    }
    if Value::Object(fired.clone()) != py["fired"] {
        bail!(
            "verdicts differ: ours {}, Python {}",
            Value::Object(fired),
            py["fired"]
        );
    }
    Ok(json!({
        "name": name, "value": best, "unit": "s",
        "baseline": "python create_trial + invoke_rule loop (best)",
        "ratio": py_seconds / best, "goal": GOAL, "seconds": best,
        "baseline_seconds": py_seconds, "fired": fired,
    }))
}

/// The Spark rows, over the fleet `smdebug rules` judged; `fired` is what it found per rule
/// (when it ran), which Spark's verdicts must match.
fn spark_rows(fired: Option<&Value>) -> Result<Vec<Value>> {
    let fleet = ensure_fleet()?;
    let python = SPARK.ensure().context("the Spark venv")?;
    crate::python::install_wheel(&python, true).context("the smdebug_rs wheel")?;
    step(&format!(
        "rule_verdicts over {FLEET_TRIALS} trials on local Spark (spark_fleet.py)"
    ));
    let mut cmd = Command::new(&python);
    cmd.arg(root().join("crates/python/bench/spark_fleet.py"))
        .arg("--fleet")
        .arg(&fleet)
        .args(["--trials", &FLEET_TRIALS.to_string(), "--repeat", "2"])
        .env("SMDEBUG_LOG_LEVEL", "error");
    for r in RULES {
        cmd.args(["--rule", r]);
    }
    let out = output(&mut cmd)?;
    let v: Value = serde_json::from_str(out.trim()).with_context(|| format!("printed {out}"))?;
    if let Some(Value::Object(ours)) = fired {
        // spark_fleet.py names only the rules that fired somewhere.
        let spark = |rule: &str| v["fired"].get(rule).and_then(Value::as_u64).unwrap_or(0);
        if ours.iter().any(|(rule, n)| n.as_u64() != Some(spark(rule))) {
            bail!(
                "verdicts differ: smdebug rules {}, Spark {}",
                Value::Object(ours.clone()),
                v["fired"]
            );
        }
    }
    let verdicts = v["verdicts_s"].as_f64().context("no `verdicts_s`")?;
    let start = v["session_start_s"]
        .as_f64()
        .context("no `session_start_s`")?;
    Ok(vec![
        json!({
            "name": format!(
                "fleet: rule_verdicts on local Spark over {FLEET_TRIALS} trials ({} rules)",
                v["rules"]
            ),
            "value": verdicts, "unit": "s", "baseline": "", "ratio": null, "goal": null,
            "seconds": verdicts, "per_trial_ms": v["per_trial_ms"], "master": v["master"],
        }),
        json!({
            "name": "fleet: local Spark session start (once per application)",
            "value": start, "unit": "s", "baseline": "", "ratio": null, "goal": null,
            "seconds": start,
        }),
    ])
}
