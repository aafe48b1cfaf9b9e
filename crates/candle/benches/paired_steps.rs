//! The hook's cost per training step, measured in turns: the demo network without a hook,
//! with the hook at save interval 500, with the same hook plus a flight recorder keeping the
//! last N = 10 steps of every collection, and with reductions of every collection saved at
//! every step. Three comparisons and their goals: interval 500 against no hook (≤ 1 %
//! slower), reductions every step against no hook (≤ 5 %), the recorder against interval 500
//! (≤ 5 %).
//!
//! Why turns: criterion runs `overhead`'s benches one after the other, seconds apart, and on
//! a 2-core VM the fastest sample of the same bench of the same code moves between runs by
//! far more than the few per cent being measured (candle's two-thread barrier pool and
//! whatever else the machine runs decide how often a step waits for a descheduled thread). Here the four networks advance together: each round times one
//! block of [`BLOCK`] steps of each, in an order reversed every other round, so that a slow
//! spell of the machine falls on all of them. The two networks of each comparison are
//! neighbours in both orders. A round's ratio is the block time of the comparison's
//! baseline over the block time of the hook it judges; a comparison's figure is the median
//! of its rounds' ratios.
//!
//! A hooked block ends, inside its timing, with `Hook::flush`: it waits until the hook's
//! writer has written everything of the block. Otherwise the writer's work for the last
//! steps of one block would run during the next network's block and be charged to it (the
//! reductions hook writes at every step). The flush's round trip is charged to the hook,
//! and so is the writer's work for a block's last step, done while the training thread
//! waits rather than alongside later steps: the figure is an upper bound of the hook's cost
//! per step. `SMDEBUG_PAIRED_FLUSH=untimed` waits after the timing instead (a lower bound:
//! the last step's writer work then slows nothing), `none` not at all (that work then
//! falls on the next network's block), for comparison.
//!
//! Prints one JSON object on standard output; with `SMDEBUG_PAIRED_JSON=PATH` it also writes
//! it to PATH (what `cargo xtask bench` reads): `rounds`, `block_steps`, and under
//! `comparisons` one object per comparison (`interval_500`, `reductions_every_step`,
//! `recorder_n10`) with `without_median_seconds`, `with_median_seconds` (median seconds per
//! step of the baseline's and the judged hook's blocks), `ratio_median`, `ratio_q1`,
//! `ratio_q3` and `ratio_of_medians`. `SMDEBUG_PAIRED_ROUNDS`: rounds (default 300).

use std::time::Instant;

use smdebug_candle::demo::{Demo, Scenario};
use smdebug_candle::CandleHook;
use smdebug_hook::{FlightRecorder, SaveConfig, SaveConfigMode};

mod common;
use common::hooked;

// As in the `overhead` bench and the CLI.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Steps per block: long enough that the clock's cost, the flush and a block's first step
/// (whose activations the other networks' blocks pushed out of the cache) weigh little,
/// short enough that a slow spell of the machine spans the blocks of a round.
const BLOCK: usize = 16;

/// Steps each network takes before the rounds, in the same turns.
const WARM_UP_STEPS: usize = 320;

/// One network of the rounds: the demo and its hook, if any.
struct Net {
    demo: Demo,
    hook: Option<CandleHook>,
}

/// Where a hooked block waits for its writer to catch up (`SMDEBUG_PAIRED_FLUSH`).
#[derive(Clone, Copy, PartialEq)]
enum Flush {
    /// Inside the block's timing (the default).
    Timed,
    /// After the block's timing.
    Untimed,
    /// Never: the writer's last work of a block runs during the next block.
    None,
}

impl Net {
    /// Seconds per step of one block.
    fn block(&mut self, flush: Flush) -> f64 {
        let t = Instant::now();
        for _ in 0..BLOCK {
            self.demo.train_step(self.hook.as_mut()).expect("step");
        }
        let flush_now = |h: &mut Option<CandleHook>| {
            if let Some(h) = h {
                h.hook_mut().flush().expect("flush");
            }
        };
        if flush == Flush::Timed {
            flush_now(&mut self.hook);
        }
        let secs = t.elapsed().as_secs_f64() / BLOCK as f64;
        if flush == Flush::Untimed {
            flush_now(&mut self.hook);
        }
        secs
    }
}

// The networks, in the order of an even round (an odd round takes them in reverse), so
// that the two of each comparison are neighbours.
const REDUCTIONS: usize = 0;
const NO_HOOK: usize = 1;
const INTERVAL: usize = 2;
const RECORDER: usize = 3;

/// The comparisons: name, baseline network, judged network.
const COMPARISONS: [(&str, usize, usize); 3] = [
    ("interval_500", NO_HOOK, INTERVAL),
    ("reductions_every_step", NO_HOOK, REDUCTIONS),
    ("recorder_n10", INTERVAL, RECORDER),
];

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
    let flush = match std::env::var("SMDEBUG_PAIRED_FLUSH").as_deref() {
        Ok("untimed") => Flush::Untimed,
        Ok("none") => Flush::None,
        _ => Flush::Timed,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let interval = || SaveConfig::new(SaveConfigMode::every(500));
    let net = |(demo, hook): (Demo, CandleHook)| Net {
        demo,
        hook: Some(hook),
    };
    let mut nets = [
        net(hooked(dir.path(), "reductions", |b| {
            b.save_config(SaveConfig::new(SaveConfigMode::every(1)))
                .reduction_config(Demo::reductions_only())
        })),
        Net {
            demo: Demo::new(Scenario::Healthy, 1).expect("demo network"),
            hook: None,
        },
        net(hooked(dir.path(), "interval", |b| {
            b.save_config(interval())
        })),
        net(hooked(dir.path(), "recorder", |b| {
            b.save_config(interval()).flight_recorder(FlightRecorder {
                steps: 10,
                ..Default::default()
            })
        })),
    ];
    let round = |nets: &mut [Net; 4], r: usize| -> [f64; 4] {
        let mut t = [0.0; 4];
        for k in 0..4 {
            let i = if r % 2 == 0 { k } else { 3 - k };
            t[i] = nets[i].block(flush);
        }
        t
    };
    for r in 0..WARM_UP_STEPS / BLOCK {
        round(&mut nets, r);
    }
    let times: Vec<[f64; 4]> = (0..rounds).map(|r| round(&mut nets, r)).collect();
    for n in nets {
        if let Some(h) = n.hook {
            h.close().expect("close");
        }
    }
    let comparisons: serde_json::Map<String, serde_json::Value> = COMPARISONS
        .iter()
        .map(|&(name, base, judged)| {
            let mut without: Vec<f64> = times.iter().map(|t| t[base]).collect();
            let mut with: Vec<f64> = times.iter().map(|t| t[judged]).collect();
            let mut ratios: Vec<f64> = times.iter().map(|t| t[base] / t[judged]).collect();
            let (p, q) = (quantile(&mut without, 0.5), quantile(&mut with, 0.5));
            let c = serde_json::json!({
                "without_median_seconds": p,
                "with_median_seconds": q,
                "ratio_median": quantile(&mut ratios, 0.5),
                "ratio_q1": quantile(&mut ratios, 0.25),
                "ratio_q3": quantile(&mut ratios, 0.75),
                "ratio_of_medians": p / q,
            });
            (name.to_owned(), c)
        })
        .collect();
    let json = serde_json::json!({
        "rounds": rounds, "block_steps": BLOCK, "comparisons": comparisons,
    });
    println!("{json}");
    if let Some(path) = std::env::var_os("SMDEBUG_PAIRED_JSON") {
        std::fs::write(&path, format!("{json}\n")).expect("write SMDEBUG_PAIRED_JSON");
    }
}
