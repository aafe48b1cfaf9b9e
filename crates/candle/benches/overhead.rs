//! Training-step time of the demo network with and without the smdebug hook.
//!
//! IDs: `candle_overhead/step/no_hook`, `candle_overhead/step/hook_interval_500` (default
//! save interval), `candle_overhead/step/hook_reductions_every_step` (min/max/mean/std/l2
//! of every collection at every step, no raw values) and
//! `candle_overhead/step/hook_interval_500_recorder_n10` (the flight recorder keeping the
//! last 10 steps of every collection). Their goals (≤ 1 %, ≤ 5 % and, against
//! `hook_interval_500`, ≤ 5 % slower) are measured by the `paired_steps` bench, whose
//! networks take turns: these benches run one after the other, and the same bench of the
//! same code moved by more than 5 % between runs.
//!
//! `SMDEBUG_BENCH_WRITER_PRIORITY=background` builds every hook with
//! `WriterPriority::Background` instead of the default `Normal`, for an A/B comparison.

use criterion::{criterion_group, criterion_main, Criterion};

use smdebug_candle::demo::{Demo, Scenario};
use smdebug_hook::{FlightRecorder, SaveConfig, SaveConfigMode};

mod common;
use common::hooked;

// The allocator `smdebug demo` runs with (the CLI's global allocator), for all three cases
// alike: with glibc's malloc the writer thread's frees hand pages back to the kernel, whose
// TLB shootdowns interrupt the training threads too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn overhead(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut g = c.benchmark_group("candle_overhead/step");

    let mut plain = Demo::new(Scenario::Healthy, 1).expect("demo network");
    g.bench_function("no_hook", |b| {
        b.iter(|| plain.train_step(None).expect("step"))
    });

    let (mut demo, mut hook) = hooked(dir.path(), "interval", |b| {
        b.save_config(SaveConfig::new(SaveConfigMode::every(500)))
    });
    g.bench_function("hook_interval_500", |b| {
        b.iter(|| demo.train_step(Some(&mut hook)).expect("step"))
    });
    hook.close().expect("close");

    let (mut demo, mut hook) = hooked(dir.path(), "recorder", |b| {
        b.save_config(SaveConfig::new(SaveConfigMode::every(500)))
            .flight_recorder(FlightRecorder {
                steps: 10,
                ..Default::default()
            })
    });
    g.bench_function("hook_interval_500_recorder_n10", |b| {
        b.iter(|| demo.train_step(Some(&mut hook)).expect("step"))
    });
    hook.close().expect("close");

    let (mut demo, mut hook) = hooked(dir.path(), "reductions", |b| {
        b.save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .reduction_config(Demo::reductions_only())
    });
    g.bench_function("hook_reductions_every_step", |b| {
        b.iter(|| demo.train_step(Some(&mut hook)).expect("step"))
    });
    hook.close().expect("close");
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
