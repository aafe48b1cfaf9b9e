//! The PyTorch-in-practice figures of `cargo xtask bench` (part of `--frameworks`): the step
//! time of a small transformer (crates/python/bench/torch_practice_steps.py) trained as jobs
//! train today, without a hook beside one saving weights, gradients and the loss every 100
//! steps, measured in pairs as the other framework rows are (frameworks.rs):
//!
//! * compiled (`torch.compile`, inductor): smdebug_rs's hook (goal: no-hook time / ours ≥
//!   0.99), and as peers on the same model and cadence TensorBoard's `SummaryWriter` (a
//!   histogram of every weight and gradient) and `wandb.watch(model, log="all")` offline,
//!   each against no hook, and the time each adds to a step against ours (goal ≥ 1: we add
//!   less than both);
//! * DistributedDataParallel with 2 processes on gloo (under torchrun): ours against no
//!   hook (goal ≥ 0.99), as rank 0 measures it.
use super::frameworks::{Figures, Pair};
use crate::peer::TORCH_BENCH;
use crate::util::{output, root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Ours against no hook, compiled and under DDP.
const GOAL: f64 = 0.99;
/// The peers' added time over ours.
const PEER_GOAL: f64 = 1.0;
/// The hooks of the compiled setup: ours first, then the peers.
const COMPILED_HOOKS: [&str; 3] = ["smdebug_rs", "tensorboard", "wandb"];
const LABEL: &str = "save_interval 100 (weights, gradients, losses)";

/// The rows, or one error row if the venv or a run failed.
pub fn rows(quick: bool) -> Vec<Value> {
    match measured(quick) {
        Ok(rows) => rows,
        Err(e) => vec![json!({
            "name": "pytorch in practice: step time with the hooks",
            "error": format!("{e:#}"),
        })],
    }
}

fn measured(quick: bool) -> Result<Vec<Value>> {
    let python = TORCH_BENCH.ensure()?;
    crate::python::install_wheel(&python, true)?;
    let rounds = if quick { 3 } else { 5 };
    let steps = 300;
    step(&format!(
        "pytorch compiled transformer, {LABEL}: {rounds} rounds of {COMPILED_HOOKS:?}"
    ));
    let mut compiled = vec![Vec::new(); COMPILED_HOOKS.len()];
    for _ in 0..rounds {
        for (i, hook) in COMPILED_HOOKS.iter().enumerate() {
            compiled[i].push(run(&python, &["compiled", hook], steps, false)?);
        }
    }
    step(&format!(
        "pytorch DDP (2 processes) transformer, {LABEL}: {rounds} rounds"
    ));
    let mut ddp = Vec::new();
    for _ in 0..rounds {
        ddp.push(run(&python, &["ddp", "smdebug_rs"], steps, true)?);
    }
    Ok(practice_rows(&compiled, &ddp))
}

/// The rows from each compiled hook's pairs (in [`COMPILED_HOOKS`] order) and ours under DDP.
fn practice_rows(compiled: &[Vec<Pair>], ddp: &[Pair]) -> Vec<Value> {
    // A hook measured faster than no hook (noise) adds nothing.
    let added = |f: &Figures| f.added.max(1e-9);
    let vs_none = |setup: &str, hook: &str, f: &Figures, goal: Option<f64>| {
        json!({
            "name": format!("pytorch {setup} transformer: step, {LABEL}, {hook} vs no hook"),
            "value": f.hooked * 1e3, "unit": "ms", "baseline": "no hook",
            "ratio": f.ratio, "goal": goal, "seconds": f.hooked,
            "baseline_seconds": f.plain,
        })
    };
    let ours = Figures::of(&compiled[0]);
    let mut rows = vec![vs_none("compiled", "smdebug_rs", &ours, Some(GOAL))];
    for (hook, pairs) in COMPILED_HOOKS.iter().zip(compiled).skip(1) {
        let peer = Figures::of(pairs);
        rows.push(vs_none("compiled", hook, &peer, None));
        rows.push(json!({
            "name": format!("pytorch compiled transformer: time added to a step, {LABEL}, {hook}/ours"),
            "value": added(&ours) * 1e3, "unit": "ms", "baseline": format!("{hook}'s added time"),
            "ratio": added(&peer) / added(&ours), "goal": PEER_GOAL,
            "seconds": added(&ours), "baseline_seconds": added(&peer),
        }));
    }
    rows.push(vs_none(
        "DDP (2 processes)",
        "smdebug_rs",
        &Figures::of(ddp),
        Some(GOAL),
    ));
    rows
}

/// One process (or a torchrun job of 2) of torch_practice_steps.py.
fn run(python: &Path, args: &[&str], steps: u32, torchrun: bool) -> Result<Pair> {
    let script = root().join("crates/python/bench/torch_practice_steps.py");
    let mut cmd = Command::new(python);
    if torchrun {
        cmd.args([
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
        ]);
    }
    let out = output(
        cmd.arg(&script)
            .args(args)
            .arg(steps.to_string())
            .env("SMDEBUG_LOG_LEVEL", "error")
            .env("OMP_NUM_THREADS", "1")
            .env("WANDB_SILENT", "true"),
    )?;
    let last = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("{} printed no times: {out}", script.display()))?;
    let t: Value = serde_json::from_str(last)
        .with_context(|| format!("{} printed {last}", script.display()))?;
    let get = |k: &str| -> Result<f64> {
        let v = t[k].as_f64().with_context(|| format!("no {k} in {last}"))?;
        if !v.is_finite() || v <= 0.0 {
            bail!("{k} = {v} in {last}");
        }
        Ok(v)
    };
    Ok(Pair {
        plain: get("plain_s")?,
        hooked: get("hooked_s")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(plain: f64, hooked: f64) -> Vec<Pair> {
        vec![Pair { plain, hooked }]
    }

    #[test]
    fn peers_are_compared_by_the_time_they_add() {
        let compiled = [
            pairs(0.010, 0.0101),
            pairs(0.010, 0.0110),
            pairs(0.010, 0.0130),
        ];
        let rows = practice_rows(&compiled, &pairs(0.02, 0.0201));
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[0]["goal"].as_f64(), Some(GOAL));
        assert!((rows[0]["ratio"].as_f64().unwrap() - 0.010 / 0.0101).abs() < 1e-12);
        // tensorboard adds 1 ms, ours 0.1 ms.
        assert!((rows[2]["ratio"].as_f64().unwrap() - 10.0).abs() < 1e-6);
        assert!((rows[4]["ratio"].as_f64().unwrap() - 30.0).abs() < 1e-6);
        assert!(rows[1]["goal"].is_null() && rows[3]["goal"].is_null());
        assert!(rows[5]["name"].as_str().unwrap().contains("DDP"));
    }
}
