//! Benchmarks of the hook.
//!
//! * `hook/save_small_tensor`: training-thread cost of saving one small tensor (a 4×3 f32
//!   copied from the caller's tensor and queued); goal ≤ 2 µs.
//! * `hook/save_1mib_tensor`: training-thread cost of saving a 1 MiB f32 tensor (copy +
//!   queue); the throughput is reported.
//! * `hook/encode_1mib_record`: the writer thread's per-tensor work for 1 MiB: protobuf
//!   encoding, framing, the length CRC and the payload CRC (goal ≥ 3 GB/s).
//! * `hook/write_trial_large`: a whole trial of the `large` preset's shape (steps × 100
//!   tensors of 100×100 f32 + a 0-d loss, every step saved, files on local disk), from the
//!   first step to `close()`. `SMDEBUG_HOOK_BENCH_STEPS` sets the steps (default 30; the
//!   `large` preset has 300), `SMDEBUG_HOOK_BENCH_TENSORS` the tensors per step (100).
//!   Compare with `tests/peer/hook_bench_write.py`, which times Python smdebug writing the
//!   same trial. `cargo xtask bench` runs it with 300 steps (1.2 GB per iteration), so the
//!   group samples flat (one iteration per sample at that size) with the minimum of 10
//!   samples, and xtask reports the fastest sample: page-cache writeback makes single
//!   iterations vary several-fold on a VM, which skews a mean. Each iteration starts after
//!   `sync` (untimed), with the previous iteration's trial deleted and flushed.
//!   `SMDEBUG_HOOK_BENCH_DIR` sets the folder the trials are written in (default: the
//!   system's temporary folder); give `hook_bench_write.py --dir` the same one. On ext4
//!   without a journal, creating a file right after many were deleted is slow and varies
//!   from run to run (the inode allocator skips inodes deleted in the last minute, reading
//!   each one's inode table block), so `cargo xtask bench` points both sides at a tmpfs
//!   when there is one: the row then measures the two writers, not the disk's free-inode
//!   history.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use ndarray::{Array2, ArrayD, IxDyn};
use smdebug_config::{Collection, SaveConfig, SaveConfigMode};
use smdebug_hook::{Hook, HookBuilder, TensorValue};
use smdebug_record::{append_tensor_event, Footer};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn hook(dir: &std::path::Path, capacity: usize) -> Hook {
    let mut h = HookBuilder::new(dir.join("trial").to_str().unwrap())
        .save_all(true)
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .queue_capacity(capacity)
        .build()
        .unwrap();
    h.step().unwrap();
    h
}

/// Times `iters` saves of `value` on the training thread, in batches that fit the queue;
/// the writer drains between batches, outside the timed region.
fn timed_saves(
    h: &mut Hook,
    names: &[String],
    value: &TensorValue,
    iters: u64,
    batch: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = batch.min(iters - done);
        let start = Instant::now();
        for i in 0..n {
            let name = &names[(i % names.len() as u64) as usize];
            black_box(h.save(name, value.clone()).unwrap());
        }
        total += start.elapsed();
        done += n;
        h.step().unwrap();
        h.flush().unwrap();
    }
    total
}

fn save_small(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut h = hook(dir.path(), 1 << 16);
    let names: Vec<String> = (0..100).map(|i| format!("layer{i}.weight")).collect();
    let value = TensorValue::from(Array2::<f32>::from_elem((4, 3), 0.5).into_dyn());
    let mut g = c.benchmark_group("hook");
    g.throughput(Throughput::Elements(1));
    g.bench_function("save_small_tensor", |b| {
        b.iter_custom(|iters| timed_saves(&mut h, &names, &value, iters, 1 << 15))
    });
    g.finish();
    h.close().unwrap();
}

fn save_1mib(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut h = hook(dir.path(), 64);
    let names: Vec<String> = (0..8).map(|i| format!("big{i}")).collect();
    let value = TensorValue::from(ArrayD::<f32>::from_elem(IxDyn(&[512, 512]), 0.25));
    let mut g = c.benchmark_group("hook");
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("save_1mib_tensor", |b| {
        b.iter_custom(|iters| timed_saves(&mut h, &names, &value, iters, 32))
    });
    g.finish();
    h.close().unwrap();
}

fn encode_1mib(c: &mut Criterion) {
    let value = TensorValue::from(ArrayD::<f32>::from_shape_fn(IxDyn(&[512, 512]), |i| {
        i[0] as f32 * 0.5
    }));
    let mut g = c.benchmark_group("hook");
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("encode_1mib_record", |b| {
        b.iter_batched_ref(
            || Vec::with_capacity((1 << 20) + 256),
            |file| {
                // What the writer thread does per tensor: encode in place, both CRCs.
                black_box(
                    append_tensor_event(
                        file,
                        "layer.weight",
                        &value,
                        7,
                        1,
                        7,
                        1.7e9,
                        Footer::Magic,
                    )
                    .unwrap(),
                );
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// Flushes every file system's dirty pages (`sync(1)`); a no-op where there is none.
fn sync_disks() {
    let _ = std::process::Command::new("sync").status();
}

fn write_trial(c: &mut Criterion) {
    let steps = env_usize("SMDEBUG_HOOK_BENCH_STEPS", 30);
    let tensors = env_usize("SMDEBUG_HOOK_BENCH_TENSORS", 100);
    let half = tensors / 2;
    let names: Vec<String> = (0..half)
        .map(|i| format!("layer_{i:02}.weight"))
        .chain((0..tensors - half).map(|i| format!("gradient/layer_{i:02}.weight")))
        .collect();
    let values: Vec<TensorValue> = (0..tensors)
        .map(|t| {
            TensorValue::from(ArrayD::<f32>::from_shape_fn(IxDyn(&[100, 100]), |i| {
                (i[0] * 100 + i[1] + t) as f32 * 1e-4
            }))
        })
        .collect();
    let bytes = (steps * (tensors * 100 * 100 * 4 + 4)) as u64;
    let mut g = c.benchmark_group("hook");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("write_trial_large", |b| {
        b.iter_batched(
            // Untimed: the previous iteration's trial (1.2 GB at 300 steps) is deleted when
            // its `TempDir` drops, right after its timing; flushing the disks here keeps
            // its writeback and the deletion out of the next iteration's time, so each
            // iteration writes into a clean page cache (tests/peer/hook_bench_write.py
            // does the same before each of its runs). Only one trial exists at a time.
            || {
                let dir = match std::env::var_os("SMDEBUG_HOOK_BENCH_DIR") {
                    Some(parent) => tempfile::tempdir_in(parent).unwrap(),
                    None => tempfile::tempdir().unwrap(),
                };
                sync_disks();
                dir
            },
            |dir| {
                let mut weights = Collection::new("weights");
                weights.include("^(?!gradient).*weight").unwrap();
                let mut grads = Collection::new("gradients");
                grads.include("^gradient").unwrap();
                let mut h = HookBuilder::new(dir.path().join("t").to_str().unwrap())
                    .save_config(SaveConfig::new(SaveConfigMode::every(1)))
                    .collection(weights)
                    .collection(grads)
                    .include_collections(["weights", "gradients"])
                    .build()
                    .unwrap();
                for _ in 0..steps {
                    h.step().unwrap();
                    for (n, v) in names.iter().zip(&values) {
                        h.save(n, v.clone()).unwrap();
                    }
                    let loss = TensorValue::from(ndarray::arr0(0.5f32).into_dyn());
                    h.save("CrossEntropyLoss_output_0", loss).unwrap();
                }
                h.close().unwrap();
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, save_small, save_1mib, encode_1mib, write_trial);
criterion_main!(benches);
