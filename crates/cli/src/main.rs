//! `smdebug`: the command-line tool of smdebug-rs: `demo` (the README's main command),
//! `dump`, `export`, `inspect`, `rules` (one trial or a fleet), `watch` (the rule service), `serve` (the live web view),
//! `synth`, `synth-scale` and `roundtrip`.

#[cfg(feature = "demo")]
mod demo;
mod doctor;
mod dump;
mod export;
mod fleet;
mod health;
mod inspect;
mod plot;
mod progress;
mod report;
mod roundtrip;
mod rules;
mod seal;
mod serve;
mod steps;
mod synth;
mod synth_scale;
mod watch;

use anyhow::Result;
use clap::{Parser, Subcommand};

// Reading a trial allocates and frees one buffer per value; glibc's malloc returns such memory
// to the kernel and faults it in again, which made `smdebug dump` of a large trial ~2× slower.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "smdebug",
    version,
    about = "Write, read and check SageMaker Debugger trials"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a small trial (local path or s3:// URL) and read it back, printing every tensor.
    Roundtrip(roundtrip::Args),
    /// Print everything the Trial/Tensor API says about a trial as JSON
    /// (schema smdebug-trial-dump/v1).
    Dump(dump::Args),
    /// Export a trial as columnar tables (tensors with statistics, reductions, scalars,
    /// steps) in Parquet, Arrow IPC or CSV, to a local folder or an object store.
    Export(export::Args),
    /// Print a human summary of a trial: steps, modes, workers, collections, tensors.
    Inspect(inspect::Args),
    /// Write the trial a fixture recipe (tests/peer/presets/*.json) describes, with the Rust
    /// hook (the same recipe format as tests/peer/fixture.py, for side-by-side comparison).
    Synth(synth::Args),
    /// Write a large many-worker trial fast (W workers × S steps × T small tensors), for
    /// scaling benchmarks.
    SynthScale(synth_scale::Args),
    /// Evaluate built-in rules over a finished or live trial; print each firing and a
    /// summary (exit status 0: none fired, 1: a rule fired, 2: error). `--list` shows
    /// every rule with its parameters and defaults.
    Rules(rules::Args),
    /// Train a small candle network in a chosen scenario (healthy, vanishing-gradient,
    /// exploding, ...) with the hook writing a trial and the built-in rules watching it
    /// live; print each rule firing as it happens and a summary.
    #[cfg(feature = "demo")]
    Demo(demo::Args),
    /// Find the first step, mode, worker and tensor holding a NaN or infinity (from raw
    /// values or health summaries, one pass), with a timeline around it and the tensors
    /// whose magnitudes grew first (exit status 0: all finite, 1: found, 2: error).
    Health(health::Args),
    /// Add the payload CRC key to every index file of an existing trial (atomically, file by
    /// file; smdebug ignores the key), so copies of it can be verified. Refuses a trial
    /// whose records fail to parse, naming each.
    Seal(seal::Args),
    /// Diagnose a trial: missing collections files, lagging workers, a writer stopped
    /// without its end marker, skipped steps, corrupt records and CRC mismatches (file and
    /// offset), gradient-accumulation step semantics; says whether payloads are verifiable
    /// (exit status 0: nothing found, 1: found, 2: error).
    Doctor(doctor::Args),
    /// Write one self-contained HTML report of a trial: summary, loss curves per mode,
    /// gradient and weight norms, update ratios, activations, histograms, worker
    /// completeness, rule verdicts on the step axis, health findings.
    Report(report::Args),
    /// Draw one statistic of the tensors a regex matches over steps, as PNG or SVG.
    Plot(plot::Args),
    /// The rule service: watch every trial under prefixes while the jobs write them, run
    /// the rules live, take their actions (stop training), record each firing exactly once
    /// in a firing log and resume from a state file after a restart (exit status 0: no
    /// firing, 1: a firing, 2: error).
    Watch(watch::Args),
    /// A live, read-only web view of trials and fleets: runs with their status and rule
    /// verdicts, curves, norms, histograms, completeness and health, updated while the
    /// jobs write; prints the URL to open.
    Serve(serve::Args),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Roundtrip(args) => roundtrip::run(&args, &mut std::io::stdout().lock()),
        Command::Dump(args) => dump::run(&args, &mut std::io::stdout().lock()),
        Command::Export(args) => export::run(&args, &mut std::io::stdout().lock()),
        Command::Inspect(args) => inspect::run(&args, &mut std::io::stdout().lock()),
        Command::Synth(args) => synth::run(&args, &mut std::io::stdout().lock()),
        Command::SynthScale(args) => synth_scale::run(&args, &mut std::io::stdout().lock()),
        Command::Rules(args) => rules::main(&args),
        Command::Health(args) => health::main(&args),
        Command::Seal(args) => seal::run(&args, &mut std::io::stdout().lock()),
        Command::Doctor(args) => doctor::main(&args),
        #[cfg(feature = "demo")]
        Command::Demo(args) => demo::run(&args, &mut std::io::stdout().lock()),
        Command::Report(args) => report::run(&args, &mut std::io::stdout().lock()),
        Command::Plot(args) => plot::run(&args, &mut std::io::stdout().lock()),
        Command::Watch(args) => watch::main(&args),
        Command::Serve(args) => serve::run(&args, &mut std::io::stdout().lock()),
    }
}
