//! Benchmarks of the fused reduction pass against the machine's single-core memory read
//! bandwidth.
//!
//! IDs (for `cargo xtask bench`):
//! * `reduce/fused_f32_64Mi`: min, max, mean, std, variance, sum, l1, l2 (flattened norms,
//!   PyTorch flavour) plus NaN/Inf counts and finite min/max/mean (`reduce_with_stats`),
//!   64 Mi finite float32 elements.
//! * `reduce/numpy_f32_64Mi`: min, max, mean, sum, l1, l2 with numpy semantics (1-d input),
//!   64 Mi float32 elements.
//! * `reduce/read_bandwidth_f32_64Mi`: the baseline, a plain integer sum of the same buffer.
//! * `reduce/reductions_only_f32_64Mi`: the same requests as `fused_f32_64Mi` without the
//!   statistics (`reduce`): what the writer computes for a collection without a health
//!   summary.
//! * `reduce/health_f32_64Mi`: the same requests plus the health summary
//!   (`reduce_with_health`, no histogram): the goal is ≤ 10 % over
//!   `reductions_only_f32_64Mi`. `reduce/health_hist_f32_64Mi`: with the exponent histogram.
//! * `reduce/finite_stats_f32_10Ki`, `reduce/finite_stats_le_f32_10Ki`: the statistics of
//!   one 100 × 100 float32 tensor, decoded and from its little-endian bytes (unaligned).
//! * `reduce/median_f32_1Mi`: numpy median of 1 Mi float32 elements.
//! * `reduce/pytorch_f32_32Ki`: min, max, mean, std and l2 (PyTorch flavour) of 32 Ki float32
//!   elements, what the candle demo's hook computes for each activation (4096 × 8) at every
//!   step when reductions are saved: a cache-resident tensor, where the per-element work and
//!   not the memory bandwidth sets the time.
//!
//! All report throughput in bytes, so the fused pass as a fraction of read bandwidth is the
//! ratio of the two throughputs.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::Array1;
use smdebug_reduce::{
    finite_stats, finite_stats_le, reduce, reduce_with_health, reduce_with_stats, DType, Flavor,
    ReductionRequest,
};
use std::hint::black_box;

const N: usize = 64 << 20;

fn data(n: usize) -> Array1<f32> {
    // A cheap deterministic generator (xorshift) of finite values, like a typical weight
    // tensor; NaN/Inf are still counted (a tensor with some costs one more pass for the
    // finite mean of `Stats`).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    Array1::from_shape_fn(n, |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
    })
}

fn requests(names: &[&str]) -> Vec<ReductionRequest> {
    names
        .iter()
        .map(|n| n.parse().expect("valid reduction name"))
        .collect()
}

/// Sums the bit patterns as integers in 16 independent lanes: the simplest loop that reads
/// every byte, vectorizes, and has no floating-point latency chain.
fn read_bandwidth(x: &[f32]) -> u32 {
    let mut acc = [0u32; 16];
    let chunks = x.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for j in 0..16 {
            acc[j] = acc[j].wrapping_add(c[j].to_bits());
        }
    }
    for (j, v) in rest.iter().enumerate() {
        acc[j] = acc[j].wrapping_add(v.to_bits());
    }
    acc.iter().fold(0, |a, &b| a.wrapping_add(b))
}

fn bench(c: &mut Criterion) {
    let x = data(N);
    let mut g = c.benchmark_group("reduce");
    g.sample_size(10);
    g.throughput(Throughput::Bytes((N * 4) as u64));
    let fused = requests(&["min", "max", "mean", "std", "variance", "sum", "l1", "l2"]);
    g.bench_function("fused_f32_64Mi", |b| {
        b.iter(|| {
            black_box(reduce_with_stats(
                black_box(x.view()),
                &fused,
                Flavor::PyTorch,
            ))
        })
    });
    g.bench_function("reductions_only_f32_64Mi", |b| {
        b.iter(|| black_box(reduce(black_box(x.view()), &fused, Flavor::PyTorch)))
    });
    g.bench_function("health_f32_64Mi", |b| {
        b.iter(|| {
            black_box(reduce_with_health(
                black_box(x.view()),
                &fused,
                Flavor::PyTorch,
                false,
            ))
        })
    });
    g.bench_function("health_hist_f32_64Mi", |b| {
        b.iter(|| {
            black_box(reduce_with_health(
                black_box(x.view()),
                &fused,
                Flavor::PyTorch,
                true,
            ))
        })
    });
    let np = requests(&["min", "max", "mean", "sum", "l1", "l2"]);
    g.bench_function("numpy_f32_64Mi", |b| {
        b.iter(|| black_box(reduce(black_box(x.view()), &np, Flavor::Numpy)))
    });
    let slice = x.as_slice().expect("contiguous");
    g.bench_function("read_bandwidth_f32_64Mi", |b| {
        b.iter(|| black_box(read_bandwidth(black_box(slice))))
    });
    // No NaN in the data: numpy's median of data with a NaN is NaN without any selection.
    let small = data(1 << 20);
    g.throughput(Throughput::Bytes((small.len() * 4) as u64));
    let median = requests(&["median"]);
    g.bench_function("median_f32_1Mi", |b| {
        b.iter(|| black_box(reduce(black_box(small.view()), &median, Flavor::Numpy)))
    });
    let act = data(4096 * 8)
        .into_shape_with_order((4096, 8))
        .expect("4096 × 8");
    g.throughput(Throughput::Bytes((act.len() * 4) as u64));
    g.sample_size(50);
    let torch = requests(&["min", "max", "mean", "std", "l2"]);
    g.bench_function("pytorch_f32_32Ki", |b| {
        b.iter(|| black_box(reduce(black_box(act.view()), &torch, Flavor::PyTorch)))
    });
    g.finish();
}

/// `finite_stats` of one 100 × 100 float32 tensor (the `large` trial's), decoded and
/// straight from its little-endian bytes at an odd address (as a record's `tensor_content`
/// lies in a read buffer): what the export's `tensors` table computes per row.
fn bench_finite(c: &mut Criterion) {
    let x = data(100 * 100);
    let mut bytes = vec![0u8; 1];
    bytes.extend(x.iter().flat_map(|v| v.to_le_bytes()));
    let mut g = c.benchmark_group("reduce");
    g.sample_size(50);
    g.throughput(Throughput::Bytes((x.len() * 4) as u64));
    g.bench_function("finite_stats_f32_10Ki", |b| {
        b.iter(|| black_box(finite_stats(black_box(x.view()))))
    });
    g.bench_function("finite_stats_le_f32_10Ki", |b| {
        b.iter(|| black_box(finite_stats_le(DType::F32, black_box(&bytes[1..]))))
    });
    g.finish();
}

criterion_group!(benches, bench, bench_finite);
criterion_main!(benches);
