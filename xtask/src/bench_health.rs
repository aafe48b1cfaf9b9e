//! The rows of issue 18 in `cargo xtask bench`: the health pass against the reductions-only
//! pass, and the flight recorder's training-thread cost per step at N = 10.
use crate::bench::{Baseline, Figure};

/// The figures, read from the criterion benches of smdebug-reduce and smdebug-candle.
pub(crate) const FIGURES: &[Figure] = &[
    Figure {
        name:
            "reduce: health summary + reductions vs reductions only, 64 Mi f32 (goal ≤10 % slower)",
        bench: "reduce/health_f32_64Mi",
        baseline: Baseline::Bench("reduce/reductions_only_f32_64Mi"),
        goal: Some(0.9),
    },
    Figure {
        name: "reduce: health summary with histogram + reductions vs reductions only, 64 Mi f32",
        bench: "reduce/health_hist_f32_64Mi",
        baseline: Baseline::Bench("reduce/reductions_only_f32_64Mi"),
        goal: None,
    },
    Figure {
        name: "candle: step with flight recorder N=10 vs the same hook without (goal ≤5 %)",
        bench: "candle_overhead/step/hook_interval_500_recorder_n10",
        baseline: Baseline::Bench("candle_overhead/step/hook_interval_500"),
        goal: Some(0.95),
    },
];
