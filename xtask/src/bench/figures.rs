//! The table of `cargo xtask bench`: each figure, the criterion benchmark it reads and what
//! it is compared with, and the criterion targets a run executes.
use super::measure::PYTHON_REPEAT;
use super::trials::TrialSource;

/// What a figure is compared with.
pub(crate) enum Baseline {
    /// Another criterion benchmark of the same run, by full id.
    Bench(&'static str),
    /// A Python script under `tests/peer/` run with the peer venv; it prints JSON with
    /// `seconds` or `best_s` (its fastest run of the same work as one iteration).
    Python(&'static str, &'static [&'static str]),
    /// The real smdebug timing one phase of reading the trial the trial benchmark read
    /// (`tests/peer/trial_bench_read.py`), by phase id.
    PythonTrialRead(TrialSource, &'static str),
    /// An absolute figure: printed without a ratio.
    Nothing,
}

/// One line of the table.
pub(crate) struct Figure {
    pub(crate) name: &'static str,
    /// Criterion full id (`group/function/parameter`).
    pub(crate) bench: &'static str,
    pub(crate) baseline: Baseline,
    /// The ratio we aim for (value / baseline as speed; higher is better).
    pub(crate) goal: Option<f64>,
}

/// Every figure the issues ask for. Ratios are speed ratios: baseline time / our time.
pub(crate) const FIGURES: &[Figure] = &[
    Figure {
        name: "record: framing 1 MiB (both CRCs, to a sink) vs raw crc32c",
        bench: "record/frame_to_sink/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: Some(0.8),
    },
    Figure {
        name: "record: framing 1 MiB into a buffer vs raw crc32c",
        bench: "record/write_crc/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: framing 1 MiB into a buffer vs memcpy",
        bench: "record/write_crc/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: read+verify 1 MiB at index offset vs raw crc32c",
        bench: "record/decode_at/1MiB",
        baseline: Baseline::Bench("record/crc32c/1MiB"),
        goal: Some(0.8),
    },
    Figure {
        name: "record: streaming read+verify 1 MiB vs memcpy",
        bench: "record/read_verify/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "record: framing a 4 B payload (time per record)",
        bench: "record/frame_to_sink/4B",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "record: decode event with 1 MiB f32 tensor vs memcpy",
        bench: "record/decode_event_f32/1MiB",
        baseline: Baseline::Bench("record/memcpy/1MiB"),
        goal: None,
    },
    Figure {
        name: "reduce: fused pass 64 Mi f32 vs memory read bandwidth",
        bench: "reduce/fused_f32_64Mi",
        baseline: Baseline::Bench("reduce/read_bandwidth_f32_64Mi"),
        goal: Some(0.6),
    },
    Figure {
        name: "reduce: fused pass 64 Mi f32 vs numpy",
        bench: "reduce/fused_f32_64Mi",
        baseline: Baseline::Python("reduce_bench_numpy.py", &["--repeat", PYTHON_REPEAT]),
        goal: None,
    },
    Figure {
        name: "trial: open (index + collections) vs Python smdebug",
        bench: "trial/open",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/open"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: list tensors and steps vs Python smdebug",
        bench: "trial/list",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/list"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs Python smdebug",
        bench: "trial/every_value",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/every_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: one reduction per value vs Python smdebug",
        bench: "trial/one_reduction_per_value",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/one_reduction_per_value"),
        goal: Some(50.0),
    },
    Figure {
        name: "trial: every value vs raw read of the same files",
        bench: "trial/every_value",
        baseline: Baseline::Bench("trial/raw_read_baseline"),
        goal: Some(0.5),
    },
    Figure {
        // Not a figure of ours: how much faster than Python any reader that reads the
        // files could be at every value on this machine.
        name: "trial: ceiling for every value (Python every value / raw read of the files)",
        bench: "trial/raw_read_baseline",
        baseline: Baseline::PythonTrialRead(TrialSource::Local, "trial/every_value"),
        goal: None,
    },
    Figure {
        name: "trial S3: open vs Python smdebug",
        bench: "trial_s3/open",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/open"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: every value vs Python smdebug",
        bench: "trial_s3/every_value",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/every_value"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: one reduction per value vs Python smdebug",
        bench: "trial_s3/one_reduction_per_value",
        baseline: Baseline::PythonTrialRead(TrialSource::S3, "trial/one_reduction_per_value"),
        goal: Some(20.0),
    },
    Figure {
        name: "trial S3: every value vs raw GET of the same files",
        bench: "trial_s3/every_value",
        baseline: Baseline::Bench("trial_s3/raw_get_baseline"),
        goal: None,
    },
    Figure {
        name: "rules: VanishingGradient per step, large shape (every step)",
        bench: "rules/vanishing_gradient_step",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "hook: write a whole trial vs Python smdebug's writer",
        bench: "hook/write_trial_large",
        baseline: Baseline::Python("hook_bench_write.py", &["--repeat", PYTHON_REPEAT]),
        goal: Some(20.0),
    },
    Figure {
        name: "hook: training-thread cost per small tensor (goal ≤2 µs)",
        bench: "hook/save_small_tensor",
        baseline: Baseline::Nothing,
        goal: None,
    },
    Figure {
        name: "hook: training-thread cost per 1 MiB tensor (goal ≥3 GB/s)",
        bench: "hook/save_1mib_tensor",
        baseline: Baseline::Nothing,
        goal: None,
    },
    // The goals of these two are judged on their paired rows (`paired.rs`).
    Figure {
        name: CRITERION_INTERVAL,
        bench: "candle_overhead/step/hook_interval_500",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: None,
    },
    Figure {
        name: CRITERION_REDUCTIONS,
        bench: "candle_overhead/step/hook_reductions_every_step",
        baseline: Baseline::Bench("candle_overhead/step/no_hook"),
        goal: None,
    },
    Figure {
        name: "storage: 1000 ranged reads, concurrent vs sequential",
        bench: "ranged_reads_1000/concurrent",
        baseline: Baseline::Bench("ranged_reads_1000/sequential"),
        goal: None,
    },
    Figure {
        name: "storage: 1000 ranged reads, coalesced vs sequential",
        bench: "ranged_reads_1000/coalesced",
        baseline: Baseline::Bench("ranged_reads_1000/sequential"),
        goal: None,
    },
];

/// The criterion row of the hook at interval 500 against no hook (its goal, ≤ 1 % slower,
/// is judged on its paired row).
pub(crate) const CRITERION_INTERVAL: &str =
    "candle: step with hook at save_interval 500 vs no hook, as two criterion benches in turn (no goal: see the paired row)";

/// The criterion row of reductions every step against no hook (its goal, ≤ 5 % slower, is
/// judged on its paired row).
pub(crate) const CRITERION_REDUCTIONS: &str =
    "candle: step with reductions saved every step vs no hook, as two criterion benches in turn (no goal: see the paired row)";

/// The figures, read from the criterion benches of smdebug-reduce and smdebug-candle.
pub(crate) const HEALTH_FIGURES: &[Figure] = &[
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
    // The goal's figure is the paired row (`paired.rs`); this one is kept to show what
    // two benches one after the other say.
    Figure {
        name: CRITERION_RECORDER,
        bench: "candle_overhead/step/hook_interval_500_recorder_n10",
        baseline: Baseline::Bench("candle_overhead/step/hook_interval_500"),
        goal: None,
    },
];

/// The flight recorder's row from the two criterion benches, run one after the other (its
/// goal is judged on the paired row of `paired.rs`).
pub(crate) const CRITERION_RECORDER: &str =
    "candle: step with flight recorder N=10 vs the same hook without, as two criterion benches in turn (no goal: see the paired row)";

/// The goal of the figure named `name`.
pub(crate) fn goal_of(name: &str) -> Option<f64> {
    // Both lists: a median row may replace a row of either.
    FIGURES
        .iter()
        .chain(HEALTH_FIGURES)
        .find(|f| f.name == name)
        .and_then(|f| f.goal)
}

/// Criterion benchmarks to run: (package, bench target).
pub(crate) const BENCHES: &[(&str, &str)] = &[
    ("smdebug-record", "record"),
    ("smdebug-reduce", "reduce"),
    ("smdebug-storage", "storage"),
    ("smdebug-trial", "trial"),
    ("smdebug-rules", "rules"),
    ("smdebug-hook", "hook"),
    ("smdebug-candle", "overhead"),
];
