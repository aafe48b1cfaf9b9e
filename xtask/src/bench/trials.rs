//! The trials the figures read: the `large` preset on local disk and its S3 copy, the paths
//! of the release binary, and the environment each criterion target needs to find them.
use crate::util::{root, run as exec, step};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// Which trial a Python read timing reads.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TrialSource {
    /// [`large_trial_dir`].
    Local,
    /// [`S3_TRIAL`] on the moto server.
    S3,
}

/// Steps of the `large` preset, for the hook write benchmark and its Python peer.
pub(crate) const LARGE_STEPS: &str = "300";

/// Where the S3 figures' trial lives on the moto server.
pub(crate) const S3_TRIAL: &str = "s3://smdebug-test/bench-trial-s3";

/// The `large`-preset trial both the trial benchmark and the Python peer read.
pub(crate) fn large_trial_dir() -> PathBuf {
    root().join("target/bench-trial-large")
}

pub(crate) fn large_preset() -> PathBuf {
    root().join("tests/peer/presets/large.json")
}

/// The release smdebug CLI (`cargo build --release -p smdebug-cli`).
pub(crate) fn smdebug_bin() -> PathBuf {
    root().join("target/release/smdebug")
}

/// `name` from the environment, else `default`, so a user can shrink a run.
pub(crate) fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
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
pub(crate) fn ensure_large_trial() -> Result<()> {
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
pub(crate) fn write_s3_trial(s3_env: &[(String, String)]) -> Result<()> {
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
