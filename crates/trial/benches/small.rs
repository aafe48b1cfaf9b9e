//! Reading a trial of many small tensors as a new user would: open, list (tensor names and
//! each tensor's steps), and every value one `value(step, worker)` call at a time over
//! every tensor, step and worker — the phases `tests/peer/trial_bench_read.py --every-worker`
//! times for the Python smdebug.
//!
//! The trial: `SMDEBUG_TRIAL_SMALL_DIR` (reused when it holds `training_job_end.ts`, else
//! written there), or a temporary one, written by `smdebug_synth` from
//! crates/python/bench/many_small.json (8 workers × 60 steps × 250 tensors of 10 float32,
//! the many-small-tensors trial of the Python package's benchmarks). `cargo xtask bench`
//! runs this target (see xtask/src/bench_small.rs).
//!
//! Each timed phase runs on a trial opened just before with the default options (the value
//! cache on, as a user has it): nothing read by one iteration is at hand for the next.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use smdebug_config::Mode;
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use smdebug_trial::{Trial, TrialOptions};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::every_value_one_call_each;

// The allocator of the `smdebug` CLI, as in the `trial` bench.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn recipe_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/bench/many_small.json")
}

fn setup() -> (PathBuf, Option<tempfile::TempDir>) {
    let (dir, temp) = match std::env::var_os("SMDEBUG_TRIAL_SMALL_DIR") {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let t = tempfile::tempdir().unwrap();
            (t.path().join("small-trial"), Some(t))
        }
    };
    if !dir.join("training_job_end.ts").exists() {
        let recipe = Recipe::load(&recipe_path()).unwrap();
        write_trial(&recipe, dir.to_str().unwrap(), WriteOptions::default()).unwrap();
    }
    (dir, temp)
}

fn open(path: &str) -> Trial {
    Trial::open(path, TrialOptions::default()).unwrap()
}

/// Tensor names and each tensor's steps, as the Python peer's list phase.
fn list(trial: &Trial) -> usize {
    let mut n = 0;
    for name in trial.tensor_names().unwrap() {
        n += trial
            .tensor(&name)
            .unwrap()
            .steps(Mode::Global, false)
            .unwrap()
            .len();
    }
    n
}

fn bench(c: &mut Criterion) {
    let (dir, _temp) = setup();
    let path = dir.to_str().unwrap().to_owned();
    let mut g = c.benchmark_group("trial_small");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.bench_function("open", |b| {
        b.iter_batched(|| (), |()| open(&path), BatchSize::PerIteration)
    });
    // The trial is dropped after the timing (`iter_batched_ref`), as the peer's timer
    // stops before its trial is freed.
    g.bench_function("list", |b| {
        b.iter_batched_ref(
            || open(&path),
            |t| black_box(list(t)),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("every_value", |b| {
        b.iter_batched_ref(
            || open(&path),
            |t| black_box(every_value_one_call_each(t)),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
