//! The flight recorder's cost per training step, measured in pairs: the demo network with
//! the hook at save interval 500, with and without a flight recorder keeping the last
//! N = 10 steps of every collection (issue 18's goal: ≤ 5 % slower).
//!
//! Why pairs: the `overhead` bench's `hook_interval_500` and
//! `hook_interval_500_recorder_n10` run one after the other, seconds apart, and on a
//! 2-core VM the fastest sample of the same bench of the same code moved from 1.02 to
//! 1.29 ms between runs (candle's two-thread barrier pool and whatever else the machine
//! runs decide how often a step waits for a descheduled thread). That spread is larger
//! than the 5 % being measured. Here the two hooks advance together: each round times one
//! block of [`BLOCK`] steps of each, the order alternating from round to round, so that a
//! slow spell of the machine falls on both. A round's ratio is the block time without the
//! recorder over the block time with it; the figure is the median of the rounds' ratios.
//! Both networks and hooks reach every step (and every save step) in the same round.
//!
//! Prints one JSON object on standard output; with `SMDEBUG_PAIRED_JSON=PATH` it also
//! writes it to PATH (what `cargo xtask bench` reads). `SMDEBUG_PAIRED_ROUNDS`: rounds
//! (default 300).

use std::time::Instant;

use smdebug_candle::demo::Demo;
use smdebug_candle::CandleHook;
use smdebug_hook::{FlightRecorder, SaveConfig, SaveConfigMode};

mod common;
use common::hooked;

// As in the `overhead` bench and the CLI.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Steps per block: long enough that the clock's cost and a block's first step (whose
/// activations the other network's block pushed out of the cache) weigh little, short
/// enough that a slow spell of the machine spans both blocks of a round.
const BLOCK: usize = 16;

/// Steps each hook takes before the rounds, in the same turns.
const WARM_UP_STEPS: usize = 320;

/// Seconds per step of one block of `demo` with `hook`.
fn block(demo: &mut Demo, hook: &mut CandleHook) -> f64 {
    let t = Instant::now();
    for _ in 0..BLOCK {
        demo.train_step(Some(hook)).expect("step");
    }
    t.elapsed().as_secs_f64() / BLOCK as f64
}

/// The `q`-quantile of `v` (sorted in place; nearest rank).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

fn main() {
    let rounds: usize = std::env::var("SMDEBUG_PAIRED_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(300);
    let dir = tempfile::tempdir().expect("temp dir");
    let interval = || SaveConfig::new(SaveConfigMode::every(500));
    let (mut plain_demo, mut plain) = hooked(dir.path(), "interval", |b| b.save_config(interval()));
    let (mut rec_demo, mut rec) = hooked(dir.path(), "recorder", |b| {
        b.save_config(interval()).flight_recorder(FlightRecorder {
            steps: 10,
            ..Default::default()
        })
    });
    for _ in 0..WARM_UP_STEPS / BLOCK {
        block(&mut plain_demo, &mut plain);
        block(&mut rec_demo, &mut rec);
    }
    let (mut without, mut with, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (p, q) = if r % 2 == 0 {
            let p = block(&mut plain_demo, &mut plain);
            (p, block(&mut rec_demo, &mut rec))
        } else {
            let q = block(&mut rec_demo, &mut rec);
            (block(&mut plain_demo, &mut plain), q)
        };
        without.push(p);
        with.push(q);
        ratios.push(p / q);
    }
    plain.close().expect("close");
    rec.close().expect("close");
    let (p, q) = (quantile(&mut without, 0.5), quantile(&mut with, 0.5));
    let json = format!(
        concat!(
            "{{\"rounds\": {}, \"block_steps\": {}, ",
            "\"without_median_seconds\": {:e}, \"with_median_seconds\": {:e}, ",
            "\"ratio_median\": {}, \"ratio_q1\": {}, \"ratio_q3\": {}, ",
            "\"ratio_of_medians\": {}}}"
        ),
        rounds,
        BLOCK,
        p,
        q,
        quantile(&mut ratios, 0.5),
        quantile(&mut ratios, 0.25),
        quantile(&mut ratios, 0.75),
        p / q,
    );
    println!("{json}");
    if let Some(path) = std::env::var_os("SMDEBUG_PAIRED_JSON") {
        std::fs::write(&path, format!("{json}\n")).expect("write SMDEBUG_PAIRED_JSON");
    }
}
