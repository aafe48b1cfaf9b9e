//! Trials for the tests.

use ndarray::arr1;
use smdebug_config::{Collection, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use std::path::{Path, PathBuf};

/// Steps 0..8 of a weight and its gradient, both changing every step, saved every step;
/// `nan_at`: the gradient holds a NaN from that step on.
pub fn trial(dir: &Path, nan_at: Option<i64>) -> PathBuf {
    trial_with(dir, nan_at, false)
}

/// [`trial`]; with `accumulate`, the weight changes only every second step (an optimizer
/// that steps once per two hook steps).
pub fn trial_with(dir: &Path, nan_at: Option<i64>, accumulate: bool) -> PathBuf {
    let t = dir.join("t");
    let mut weights = Collection::new("weights");
    weights.include("weight$").unwrap();
    let mut grads = Collection::new("gradients");
    grads.include("^gradient/").unwrap();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .without_default_collections()
        .collection(weights)
        .collection(grads)
        .include_collections(["weights", "gradients"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .build()
        .unwrap();
    for step in 0..8i64 {
        hook.step().unwrap();
        let update = if accumulate { step / 2 } else { step } as f32;
        let w = arr1(&[1.0f32 + update, 2.0, 3.0]).into_dyn();
        let bad = nan_at.is_some_and(|n| step >= n);
        let g = arr1(&[0.1f32, if bad { f32::NAN } else { 0.2 }, 0.3]).into_dyn();
        hook.save("fc.weight", TensorValue::from(w)).unwrap();
        hook.save("gradient/fc.weight", TensorValue::from(g))
            .unwrap();
    }
    hook.close().unwrap();
    t
}

/// The path of a step's index or events file of `worker_0`.
pub fn step_file(t: &Path, kind: &str, step: i64) -> PathBuf {
    worker_file(t, kind, step, "worker_0")
}

/// The path of a step's index or events file of `worker`.
pub fn worker_file(t: &Path, kind: &str, step: i64, worker: &str) -> PathBuf {
    let key = match kind {
        "index" => smdebug_index::index_file_key(step, worker).unwrap(),
        _ => smdebug_index::event_file_key(step, worker).unwrap(),
    };
    t.join(key)
}

/// A path as the `&str` the library takes.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
