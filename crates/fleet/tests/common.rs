//! Trials for the tests: a training job written step by step with a `gradients`
//! collection, optionally live (a pause per step) and obeying the stop signal.

use ndarray::arr1;
use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
use smdebug_trial::TensorValue;
use std::path::Path;
use std::time::Duration;

/// How a job's gradient and loss look at a step.
pub struct Job {
    /// Steps to write unless stopped.
    pub steps: i64,
    /// The gradient's magnitude at a step (below 1e-7: VanishingGradient fires).
    pub grad: fn(i64) -> f32,
    /// Steps where the gradient holds a NaN (ExplodingTensor fires).
    pub nan_at: &'static [i64],
    /// Pause after each step.
    pub pause: Duration,
}

/// Writes the job's trial at `out`; returns the steps written. Stops early (and still
/// writes the end marker, as a hook's close does) once `stop_training.smd` exists.
pub fn write_job(out: &Path, job: &Job) -> i64 {
    let store = start_job(out);
    let mut written = 0;
    for step in 0..job.steps {
        if out.join("stop_training.smd").exists() {
            break;
        }
        write_job_step(&store, job, step);
        written += 1;
        std::thread::sleep(job.pause);
    }
    write_end_marker(&store).unwrap();
    written
}

/// Starts the job's trial at `out`: its collections file, no step yet.
pub fn start_job(out: &Path) -> BlockingStore {
    std::fs::create_dir_all(out).unwrap();
    let store = BlockingStore::open(&Location::Local(out.to_owned())).unwrap();
    let mut cm = CollectionManager::new();
    let mut grads = Collection::new("gradients");
    grads.include("^gradient/").unwrap();
    cm.add(grads);
    cm.set_num_workers(1);
    store
        .put(
            &smdebug_index::collections_file_key("worker_0").unwrap(),
            smdebug_storage::Bytes::from(cm.to_json().into_bytes()),
        )
        .unwrap();
    store
}

/// Writes the job's step `step` into its trial.
pub fn write_job_step(store: &BlockingStore, job: &Job, step: i64) {
    let m = (job.grad)(step);
    let mut g = vec![m, -m, m, -m];
    if job.nan_at.contains(&step) {
        g[1] = f32::NAN;
    }
    let tensors = [("gradient/w", TensorValue::from(arr1(&g).into_dyn()))];
    write_step(
        store,
        &StepWrite::new(step, "worker_0", Mode::Train, &tensors),
    )
    .unwrap();
}

/// A healthy gradient.
pub fn healthy(_: i64) -> f32 {
    1e-2
}

/// A gradient that vanishes from step 5 on.
pub fn vanishing_from_5(step: i64) -> f32 {
    if step >= 5 {
        1e-9
    } else {
        1e-2
    }
}

/// Breaks a finished trial: its first index file becomes garbage.
pub fn corrupt(out: &Path) {
    std::fs::write(
        out.join("index/000000000/000000000000_worker_0.json"),
        "not json",
    )
    .unwrap();
}
