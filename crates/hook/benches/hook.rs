//! Benchmarks of the hook.
//!
//! * `hook/save_small_tensor`: training-thread cost of saving one small tensor (a 4×3 f32
//!   copied from the caller's tensor and queued).
//! * `hook/save_1mib_tensor`: training-thread cost of saving a 1 MiB f32 tensor (copy +
//!   queue); the throughput is reported.
//! * `hook/encode_1mib_record`: the writer thread's per-tensor work for 1 MiB: protobuf
//!   encoding, framing, the length CRC and the payload CRC.
//! * `hook/write_trial_large`: a whole trial of the `large` preset's shape (steps × 100
//!   tensors of 100×100 f32 + a 0-d loss, every step saved, files on local disk), from the
//!   first step to `close()`, each tensor lent to the hook (`save_lent`, as smdebug-candle
//!   saves a framework's tensors and as Python's writer takes a numpy array by reference),
//!   so that the writer encodes it from its elements. `SMDEBUG_HOOK_BENCH_STEPS` sets the steps (default 30; the
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
//! * `hook/write_trial_bare`: the files `write_trial_large` writes (the same bytes, read back
//!   from a trial the hook wrote before timing), written from memory with no encoding: each
//!   file created under a temporary name, written with one `write` and renamed, the steps
//!   split between two threads. The file system's cost of that trial on this machine: the
//!   ceiling of any writer of it. `cargo xtask bench` reports Python's writer against it as
//!   the ceiling of the whole-trial row.

use criterion::measurement::WallTime;
// The allocator of the `smdebug` CLI and the Python package (whose `Hook` is this writer),
// as in the trial and candle benches: the figures are those of the writer as it ships.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use ndarray::{Array2, ArrayD, IxDyn};
use smdebug_config::{Collection, SaveConfig, SaveConfigMode};
use smdebug_hook::{Hook, HookBuilder, LentTensor, TensorValue, TensorView};
use smdebug_record::{append_tensor_event, Footer};
use std::hint::black_box;
use std::sync::Arc;
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

/// A tensor the bench lends to the hook (`save_lent`), as a framework adapter lends its
/// reference-counted tensors (smdebug-candle does) and as Python's writer takes a numpy
/// array by reference: the elements stay where they are until the writer encodes them.
struct Shared(Arc<ArrayD<f32>>);

impl LentTensor for Shared {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn with_view(&self, f: &mut dyn FnMut(TensorView<'_>)) -> bool {
        f(TensorView::F32(self.0.view()));
        true
    }
    fn to_value(&self) -> Result<TensorValue, String> {
        Ok(TensorValue::from((*self.0).clone()))
    }
}

/// The shape of the `write_trial_large` trial: steps, tensors per step and their names.
struct TrialShape {
    steps: usize,
    names: Vec<String>,
    values: Vec<Arc<ArrayD<f32>>>,
}

impl TrialShape {
    fn from_env() -> Self {
        let steps = env_usize("SMDEBUG_HOOK_BENCH_STEPS", 30);
        let tensors = env_usize("SMDEBUG_HOOK_BENCH_TENSORS", 100);
        let half = tensors / 2;
        let names = (0..half)
            .map(|i| format!("layer_{i:02}.weight"))
            .chain((0..tensors - half).map(|i| format!("gradient/layer_{i:02}.weight")))
            .collect();
        let values = (0..tensors)
            .map(|t| {
                Arc::new(ArrayD::<f32>::from_shape_fn(IxDyn(&[100, 100]), |i| {
                    (i[0] * 100 + i[1] + t) as f32 * 1e-4
                }))
            })
            .collect();
        TrialShape {
            steps,
            names,
            values,
        }
    }

    /// Bytes of tensor data per trial (the throughput both benches report).
    fn bytes(&self) -> u64 {
        (self.steps * (self.values.len() * 100 * 100 * 4 + 4)) as u64
    }

    /// Writes the whole trial with the hook into `dir/t`, from the first step to `close()`.
    fn write(&self, dir: &std::path::Path) {
        let mut weights = Collection::new("weights");
        weights.include("^(?!gradient).*weight").unwrap();
        let mut grads = Collection::new("gradients");
        grads.include("^gradient").unwrap();
        let mut h = HookBuilder::new(dir.join("t").to_str().unwrap())
            .save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .collection(weights)
            .collection(grads)
            .include_collections(["weights", "gradients"])
            .build()
            .unwrap();
        for _ in 0..self.steps {
            h.step().unwrap();
            for (n, v) in self.names.iter().zip(&self.values) {
                h.save_lent(n, Shared(Arc::clone(v))).unwrap();
            }
            let loss = TensorValue::from(ndarray::arr0(0.5f32).into_dyn());
            h.save("CrossEntropyLoss_output_0", loss).unwrap();
        }
        h.close().unwrap();
    }
}

/// A fresh folder for one iteration's trial, in `SMDEBUG_HOOK_BENCH_DIR` when set.
fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("SMDEBUG_HOOK_BENCH_DIR") {
        Some(parent) => tempfile::tempdir_in(parent).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

/// A flat group for a 1.2 GB iteration (see the module docs).
fn trial_group<'a>(c: &'a mut Criterion, bytes: u64) -> criterion::BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group("hook");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(bytes));
    g
}

fn write_trial(c: &mut Criterion) {
    let trial = TrialShape::from_env();
    let mut g = trial_group(c, trial.bytes());
    g.bench_function("write_trial_large", |b| {
        b.iter_batched(
            // Untimed: the previous iteration's trial (1.2 GB at 300 steps) is deleted when
            // its `TempDir` drops, right after its timing; flushing the disks here keeps
            // its writeback and the deletion out of the next iteration's time, so each
            // iteration writes into a clean page cache (tests/peer/hook_bench_write.py
            // does the same before each of its runs). Only one trial exists at a time.
            || {
                let dir = bench_dir();
                sync_disks();
                dir
            },
            |dir| {
                trial.write(dir.path());
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// The files of a trial, read back: (path relative to the trial, bytes), in the order the
/// hook publishes them (by step, the events file before the index file; the collections
/// file and the end marker last).
fn trial_files(root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(root, &mut paths);
    let rel: Vec<_> = paths
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().to_path_buf())
        .collect();
    // Events and index file names both start with the zero-padded step.
    let key = |p: &std::path::Path| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let kind = p
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let order = match kind.as_str() {
            "events" => 0,
            "index" => 1,
            _ => 2,
        };
        (order == 2, name, order)
    };
    let mut files: Vec<_> = rel
        .into_iter()
        .map(|r| {
            let bytes = std::fs::read(root.join(&r)).unwrap();
            (r, bytes)
        })
        .collect();
    files.sort_by_key(|(p, _)| key(p));
    files
}

/// Writes `files` under `root` as fast as this machine can and no more: no encoding, each
/// file created under a temporary name beside its place, written with one `write` and
/// renamed (as the hook publishes files), the steps' files split between two threads (as
/// the hook's two I/O threads), in no particular order between them.
fn bare_write(root: &std::path::Path, files: &[(std::path::PathBuf, Vec<u8>)]) {
    use std::io::Write;
    let mut dirs: Vec<_> = files
        .iter()
        .filter_map(|(p, _)| p.parent().map(|d| root.join(d)))
        .collect();
    dirs.sort();
    dirs.dedup();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let write = |part: usize| {
        // A step's events and index file go to the same thread (pairs of files in order).
        for (i, (rel, bytes)) in files.iter().enumerate() {
            if (i / 2) % 2 != part {
                continue;
            }
            let path = root.join(rel);
            let tmp = path.with_file_name(format!(
                ".{}.tmp",
                path.file_name().unwrap().to_string_lossy()
            ));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .unwrap();
            f.write_all(bytes).unwrap();
            drop(f);
            std::fs::rename(&tmp, &path).unwrap();
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| write(1));
        write(0);
    });
}

/// `hook/write_trial_bare`: the same files as `write_trial_large` (read back from a trial
/// the hook wrote, untimed), written from memory by [`bare_write`]: what the machine's file
/// system costs for that trial, the ceiling of any writer of it. `cargo xtask bench` divides
/// Python's time by this one's in the same run for the ceiling row.
fn write_trial_bare(c: &mut Criterion) {
    let trial = TrialShape::from_env();
    // Made when the bench runs (not when a filter leaves it out): 1.2 GB at 300 steps.
    let files = std::cell::OnceCell::new();
    let mut g = trial_group(c, trial.bytes());
    g.bench_function("write_trial_bare", |b| {
        let files = files.get_or_init(|| {
            let dir = bench_dir();
            trial.write(dir.path());
            let files = trial_files(&dir.path().join("t"));
            // An events and an index file per step, the collections file, the end marker.
            assert_eq!(
                files.len(),
                2 * trial.steps + 2,
                "the trial's files changed"
            );
            files
        });
        b.iter_batched(
            || {
                let dir = bench_dir();
                sync_disks();
                dir
            },
            |dir| {
                bare_write(&dir.path().join("t"), files);
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(
    benches,
    save_small,
    save_1mib,
    encode_1mib,
    write_trial,
    write_trial_bare
);
criterion_main!(benches);
