//! The transformer rules over a fleet (issue 44, docs/src/rules.md §21–§27): `smdebug rules`
//! over [`TRIALS`] trials of the small GPT of crates/python/tests/gpt_runs.py (its healthy
//! run, trained once with the PyTorch hook and linked into every trial of the fleet), with
//! the seven transformer rules against seven of the original's rules over the same trials.
//! The figure is the new rules' trials per second; the ratio is the old rules' seconds over
//! the new rules', so ≥ 1 means the new rules judge a fleet as fast as the old ones.
//!
//! The trials are hard links of one trial: the fleet costs one trial's disk, and both rule
//! sets read the same bytes from the same page cache.
use super::trials::smdebug_bin;
use crate::peer::TORCH_BENCH;
use crate::util::{output, root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Trials in the fleet.
const TRIALS: usize = 100;
/// Trials evaluated at once.
const JOBS: &str = "2";
/// Runs of each rule set (the fastest counts).
const REPEAT: usize = 3;
/// The transformer rules, as the proof test runs them.
const NEW_RULES: [&str; 7] = [
    "LossSpike",
    "GradientNormSpike",
    "AttentionLogitGrowth",
    "OutputLogitDivergence",
    "UpdateRatio",
    "AdamEpsilon",
    "ActivationOutlier:collection_names=activations",
];
/// Seven of the original's rules that read the same collections (losses, gradients,
/// weights, every tensor).
const OLD_RULES: [&str; 7] = [
    "LossNotDecreasing",
    "VanishingGradient",
    "ExplodingTensor",
    "WeightUpdateRatio",
    "PoorWeightInitialization",
    "AllZero:collection_names=weights,gradients",
    "UnchangedTensor:collection_names=weights",
];
/// Goal: old rules' seconds / new rules' seconds.
const GOAL: f64 = 1.0;

/// The row; an error row saying why when it cannot be measured.
pub fn rows() -> Vec<Value> {
    let name = format!(
        "fleet: the 7 transformer rules over {TRIALS} GPT trials (-j {JOBS}), trials/s, vs 7 of the original's"
    );
    vec![match row() {
        Ok(mut r) => {
            r["name"] = name.into();
            r
        }
        Err(e) => json!({"name": name, "error": format!("{e:#}")}),
    }]
}

fn fleet_dir() -> PathBuf {
    root().join("target/bench-gpt-fleet")
}

/// Trains the GPT once and links it into [`TRIALS`] trials, unless a complete fleet is there.
fn ensure_fleet() -> Result<PathBuf> {
    let dir = fleet_dir();
    let last = dir.join(format!("job-{:03}", TRIALS - 1));
    if last.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let python = TORCH_BENCH.ensure().context("the PyTorch venv")?;
    crate::python::install_wheel(&python, true).context("the smdebug_rs wheel")?;
    let first = dir.join("job-000");
    step("training the small GPT of gpt_runs.py (healthy) with the PyTorch hook");
    output(
        Command::new(&python)
            .arg(root().join("crates/python/tests/gpt_runs.py"))
            .arg("healthy")
            .arg(&first)
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    for i in 1..TRIALS {
        link_dir(&first, &dir.join(format!("job-{i:03}")))?;
    }
    Ok(dir)
}

fn link_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            link_dir(&e.path(), &target)?;
        } else {
            std::fs::hard_link(e.path(), &target)
                .with_context(|| format!("{} -> {}", e.path().display(), target.display()))?;
        }
    }
    Ok(())
}

/// The fastest of [`REPEAT`] runs of `smdebug rules` over the fleet with `rules`, and the
/// number of trials it judged.
fn time_rules(fleet: &Path, rules: &[&str]) -> Result<(f64, usize)> {
    let mut best = f64::INFINITY;
    let mut judged = 0;
    for _ in 0..REPEAT {
        let mut cmd = Command::new(smdebug_bin());
        cmd.arg("rules").arg(fleet).args(["--json", "-j", JOBS]);
        for r in rules {
            cmd.args(["--rule", r]);
        }
        let started = Instant::now();
        let out = cmd.output().context("running smdebug rules")?;
        best = best.min(started.elapsed().as_secs_f64());
        if !matches!(out.status.code(), Some(0 | 1)) {
            bail!(
                "smdebug rules failed with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        judged = 0;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let v: Value = serde_json::from_str(line).with_context(|| format!("line {line}"))?;
            if v.get("error").is_some() {
                bail!("smdebug rules could not read a trial: {line}");
            }
            if v.get("summary").is_some() {
                judged += 1;
            }
        }
    }
    Ok((best, judged))
}

fn row() -> Result<Value> {
    let fleet = ensure_fleet()?;
    step(&format!(
        "smdebug rules over {}: transformer rules, then the original's",
        fleet.display()
    ));
    let (new, judged_new) = time_rules(&fleet, &NEW_RULES)?;
    let (old, judged_old) = time_rules(&fleet, &OLD_RULES)?;
    if judged_new != TRIALS || judged_old != TRIALS {
        bail!("trials judged: new rules {judged_new}, old rules {judged_old}, expected {TRIALS}");
    }
    Ok(json!({
        "value": TRIALS as f64 / new, "unit": "trials/s",
        "baseline": format!("7 of the original's rules over the same fleet ({:.1} trials/s)", TRIALS as f64 / old),
        "ratio": old / new, "goal": GOAL, "seconds": new, "baseline_seconds": old,
    }))
}
