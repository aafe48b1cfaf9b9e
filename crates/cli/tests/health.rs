//! `smdebug health` on trials our hook writes with a NaN injected at a known step: from raw
//! values, from health summaries alone, and from reductions alone.

use ndarray::{arr1, ArrayD};
use serde_json::Value;
use smdebug_config::{Collection, HealthSummary, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use std::path::Path;
use std::process::Command;

/// Steps 0..10 of tensors `a` (steady) and `b` (grows ×100 from step 4, NaN at step 7 in
/// its last element), saved as `rc` says.
fn write(trial: &Path, rc: ReductionConfig) {
    let mut all = Collection::new("all");
    all.include(".*").unwrap();
    all.reduction_config = Some(rc);
    let mut hook = HookBuilder::new(trial.to_str().unwrap())
        .without_default_collections()
        .collection(all)
        .include_collections(["all"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .build()
        .unwrap();
    for step in 0..10 {
        hook.step().unwrap();
        let a = arr1(&[1.0f32, -2.0, 0.5, 3.0]).into_dyn();
        let scale = if step >= 4 { 100.0 } else { 1.0 };
        let mut b: ArrayD<f32> = arr1(&[0.5f32, 1.0, -1.5, 2.0]).into_dyn() * scale;
        if step == 7 {
            b[[3]] = f32::NAN;
        }
        hook.save("a", TensorValue::from(a)).unwrap();
        hook.save("b", TensorValue::from(b)).unwrap();
    }
    hook.close().unwrap();
}

fn health(trial: &Path) -> (i32, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(["health", "--json"])
        .arg(trial)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap(), v)
}

fn check(rc: ReductionConfig, source: &str) {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    write(&t, rc);
    let (code, r) = health(&t);
    assert_eq!(code, 1, "{r}");
    let f = &r["first_non_finite"];
    assert_eq!(f["step"], 7, "{r}");
    assert_eq!(f["tensor"], "b", "{r}");
    assert_eq!(f["worker"], "worker_0", "{r}");
    assert_eq!(f["summary"]["source"], source, "{r}");
    let grew = r["first_grew"].as_array().unwrap();
    assert_eq!(grew[0]["tensor"], "b", "{r}");
    assert_eq!(grew[0]["step"], 4, "{r}");
    assert!(grew.iter().all(|g| g["tensor"] != "a"), "{r}");
    let tl = r["timeline"][0]["steps"].as_array().unwrap();
    assert_eq!(
        tl.iter()
            .map(|s| s["step"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 3, 4, 5, 6, 7, 8, 9]
    );
}

#[test]
fn names_the_step_and_tensor_from_raw_values() {
    check(ReductionConfig::raw_only(), "raw value");
}

#[test]
fn names_the_step_and_tensor_from_health_summaries_alone() {
    check(
        ReductionConfig {
            health: HealthSummary::Counts,
            ..Default::default()
        },
        "health summary",
    );
}

#[test]
fn names_the_step_and_tensor_from_reductions_alone() {
    check(
        ReductionConfig {
            reductions: vec![smdebug_config::Reduction::Max],
            abs_reductions: vec![smdebug_config::Reduction::Max],
            ..Default::default()
        },
        "reductions",
    );
}

#[test]
fn a_finite_trial_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .save_all(true)
        .build()
        .unwrap();
    hook.step().unwrap();
    hook.save("x", TensorValue::from(arr1(&[1.0f64, 0.0]).into_dyn()))
        .unwrap();
    hook.close().unwrap();
    let (code, r) = health(&t);
    assert_eq!(code, 0, "{r}");
    assert!(r["first_non_finite"].is_null());
}
