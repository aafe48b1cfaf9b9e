//! Reading a trial: open, list, every value, one reduction per value, and a raw-read
//! baseline of the same event files.
//!
//! The trial is written at bench time with `smdebug_synth::steps`: STEPS × TENSORS float32
//! tensors of SIDE × SIDE, one worker (defaults 20 × 21 × 100 × 100 = 17 MB; the `large`
//! preset is 300 × 101 × 100 × 100 = 1.2 GB). Set `SMDEBUG_TRIAL_BENCH_STEPS`,
//! `SMDEBUG_TRIAL_BENCH_TENSORS`, `SMDEBUG_TRIAL_BENCH_SIDE`; `SMDEBUG_TRIAL_BENCH_DIR` keeps
//! the trial in that folder (reused when it holds `training_job_end.ts`) so
//! `tests/peer/trial_bench_read.py` can time the Python smdebug on the same files;
//! `cargo xtask bench` points it at a `large`-preset trial written by `smdebug synth`.
//!
//! `SMDEBUG_TRIAL_BENCH_S3_URL=s3://bucket/prefix` adds the group `trial_s3` (open, every
//! value, one reduction per value) reading an existing trial from that URL (the S3 test
//! server in `cargo xtask bench`; endpoint and credentials from the AWS_* variables).
//!
//! One iteration of the big figures takes about a second or more, so the groups sample
//! flat (the same iteration count per sample) with the minimum of 10 samples: criterion's
//! default linear sampling would run 55 iterations at least. `cargo xtask bench` reports
//! the fastest sample of each figure, not the mean.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use ndarray::{ArrayD, Dimension, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{TensorValue, Trial, TrialOptions};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;
use common::every_value_one_call_each;

// The allocator of the `smdebug` CLI (see crates/trial/README.md, "The allocator matters"):
// the figures are those of the reader as the CLI ships it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Setup {
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    bytes: u64,
}

fn write_trial(dir: &Path, steps: usize, tensors: usize, side: usize) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    let names: Vec<String> = (0..tensors)
        .map(|i| {
            if i + 1 == tensors {
                "loss".to_owned()
            } else if i % 2 == 0 {
                format!("fc{i}.weight")
            } else {
                format!("gradient/fc{i}.weight")
            }
        })
        .collect();
    write_train_trial(&store, steps as i64, |step| {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let shape: &[usize] = if n == "loss" { &[] } else { &[side, side] };
                let v = ArrayD::from_shape_fn(IxDyn(shape), |ix| {
                    let k = ix.slice().iter().fold(0usize, |a, &b| a * 31 + b);
                    ((k + i) as f32 * 0.001 + step as f32).sin()
                });
                (n.as_str(), TensorValue::Float32(v))
            })
            .collect()
    })
    .unwrap();
}

fn event_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for step in std::fs::read_dir(dir.join("events")).unwrap() {
        for f in std::fs::read_dir(step.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    out
}

fn setup() -> Setup {
    let steps = env("SMDEBUG_TRIAL_BENCH_STEPS", 20);
    let tensors = env("SMDEBUG_TRIAL_BENCH_TENSORS", 21);
    let side = env("SMDEBUG_TRIAL_BENCH_SIDE", 100);
    let (dir, temp) = match std::env::var_os("SMDEBUG_TRIAL_BENCH_DIR") {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let t = tempfile::tempdir().unwrap();
            (t.path().join("bench-trial"), Some(t))
        }
    };
    if !dir.join("training_job_end.ts").exists() {
        write_trial(&dir, steps, tensors, side);
    }
    let bytes = event_files(&dir)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    Setup {
        dir,
        _temp: temp,
        bytes,
    }
}

/// Options for timing reads: no value cache, so that nothing decoded is reused (events
/// files read ahead from object stores are kept, as by default).
fn no_cache() -> TrialOptions {
    TrialOptions {
        cache_bytes: 0,
        ..TrialOptions::default()
    }
}

/// Times `phase` on a trial opened just before (not timed) at each iteration, as the
/// Python peer times each phase on a fresh `create_trial`: nothing read by one iteration
/// is at hand for the next.
fn on_fresh_trial(b: &mut criterion::Bencher<'_>, path: &str, phase: impl Fn(&Trial) -> usize) {
    b.iter_batched(
        || Trial::open(path, no_cache()).unwrap(),
        |t| black_box(phase(&t)),
        BatchSize::PerIteration,
    )
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let path = s.dir.to_str().unwrap().to_owned();
    let mut g = c.benchmark_group("trial");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));

    // Dropping the trial is not part of opening it (the Python peer's timer stops before
    // its trial is freed too). Each trial is dropped right after its iteration, so the next
    // open reuses its memory, as each of the peer's repetitions reuses the memory of the
    // one before; keeping a batch of trials alive would time page faults instead.
    g.bench_function("open", |b| {
        b.iter_batched(
            || (),
            |()| Trial::open(&path, no_cache()).unwrap(),
            BatchSize::PerIteration,
        )
    });

    let trial = Trial::open(&path, no_cache()).unwrap();
    g.bench_function("list", |b| {
        b.iter(|| {
            let mut n = 0;
            for name in trial.tensor_names().unwrap() {
                n += trial
                    .tensor(&name)
                    .unwrap()
                    .steps(Mode::Global, false)
                    .unwrap()
                    .len();
            }
            black_box(n)
        })
    });

    g.throughput(Throughput::Bytes(s.bytes));
    g.bench_function("every_value", |b| on_fresh_trial(b, &path, every_value));

    g.bench_function("one_reduction_per_value", |b| {
        on_fresh_trial(b, &path, one_reduction_per_value)
    });

    // As the Python package's every-value loop: one `value(step, worker)` call per value,
    // on a trial with the default options (the value cache on, as a user has it).
    g.bench_function("every_value_one_call_each", |b| {
        b.iter_batched(
            || Trial::open(&path, TrialOptions::default()).unwrap(),
            |t| black_box(every_value_one_call_each(&t)),
            BatchSize::PerIteration,
        )
    });

    let files = event_files(&s.dir);
    g.bench_function("raw_read_baseline", |b| {
        b.iter(|| {
            let mut total = 0usize;
            for f in &files {
                total += std::fs::read(f).unwrap().len();
            }
            black_box(total)
        })
    });
    g.finish();
}

/// Reads every value of `trial`, as the Python peer's every_value phase does.
fn every_value(trial: &Trial) -> usize {
    let mut n = 0;
    for name in trial.tensor_names().unwrap() {
        n += trial
            .tensor(&name)
            .unwrap()
            .values(Mode::Global, None)
            .unwrap()
            .len();
    }
    n
}

/// `mean` of every tensor at every step, one call each (computed from the raw value).
fn one_reduction_per_value(trial: &Trial) -> usize {
    let mut n = 0;
    for name in trial.tensor_names().unwrap() {
        let t = trial.tensor(&name).unwrap();
        for step in t.steps(Mode::Global, false).unwrap() {
            n += t
                .reduction_value(step, "mean", Mode::Global, None, false)
                .unwrap()
                .len();
        }
    }
    n
}

fn bench_s3(c: &mut Criterion) {
    let Ok(url) = std::env::var("SMDEBUG_TRIAL_BENCH_S3_URL") else {
        return;
    };
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    let bytes: u64 = store
        .list("events/", None)
        .unwrap()
        .iter()
        .map(|m| m.size)
        .sum();
    assert!(bytes > 0, "no event files under {url}");
    let mut g = c.benchmark_group("trial_s3");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));

    g.bench_function("open", |b| {
        b.iter_batched(
            || (),
            |()| Trial::open(&url, no_cache()).unwrap(),
            BatchSize::PerIteration,
        )
    });

    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("every_value", |b| on_fresh_trial(b, &url, every_value));

    g.bench_function("one_reduction_per_value", |b| {
        on_fresh_trial(b, &url, one_reduction_per_value)
    });

    // What the server itself delivers: every events file fetched whole, 16 at a time (the
    // reader's own concurrency), with nothing decoded.
    let keys: Vec<String> = store
        .list("events/", None)
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    let storage = store.storage().clone();
    g.bench_function("raw_get_baseline", |b| {
        b.iter(|| {
            let storage = storage.clone();
            let keys = keys.clone();
            let total: usize = store
                .block_on(async move {
                    use futures::stream::{self, StreamExt};
                    stream::iter(keys)
                        .map(|k| {
                            let storage = storage.clone();
                            async move { storage.get(&k).await.unwrap().len() }
                        })
                        .buffer_unordered(16)
                        .collect::<Vec<usize>>()
                        .await
                        .into_iter()
                        .sum()
                })
                .unwrap();
            black_box(total)
        })
    });
    g.finish();
}

criterion_group!(benches, bench, bench_s3);
criterion_main!(benches);
