//! `cargo xtask`: every workflow of the project as a subcommand (rust-analyzer's habit),
//! so that CI and a newcomer run exactly the same steps.
//!
//! * `test` — the one test command: lints, the whole suite against the real Python smdebug
//!   and a real S3-compatible server, then a smoke run of every fuzz target.
//! * `bench` — criterion benchmarks side by side with the Python peer, printed as ratios
//!   and written to `docs/benchmarks.md` (`--json PATH`: the result as JSON).
//! * `fuzz` — one fuzz target with cargo-fuzz on the stable toolchain.
//! * `gen-proto` — regenerates the checked-in protobuf code.
//! * `peer` / `services` — install the peer, or start the test services for a dev shell.

mod bench;
mod browser;
mod fuzz;
mod listen;
mod peer;
mod phases;
mod proto;
mod python;
mod services;
mod stores;
mod test;
mod tidy;
mod util;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Workflows of smdebug-rs")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Lints, the whole test suite with its real peers, and a fuzz smoke run.
    Test(test::TestArgs),
    /// Benchmarks side by side with their baselines (raw limits, the Python peer).
    Bench(bench::BenchArgs),
    /// The report's rows of `bench` alone (`smdebug report` of a trial, its page, Chromium).
    BenchReport(bench::BenchReportArgs),
    /// `smdebug serve`'s rows of `bench` alone (first chart of a 10,000-step trial, step
    /// latency, memory with 1,000 trials), with the release binary or `--bin`.
    BenchServe(bench::BenchServeArgs),
    /// The object store rows of `bench` alone (S3 open vs Python, `--last 10` vs whole),
    /// on a moto server of their own; prints them as JSON lines.
    BenchStores,
    /// Runs one fuzz target (installs cargo-fuzz if needed).
    Fuzz(fuzz::FuzzArgs),
    /// Regenerates the checked-in protobuf code of smdebug-record (`--check`: fail on a diff).
    GenProto(proto::GenProtoArgs),
    /// Installs (or verifies) the Python venvs of the tests (the smdebug peer, with PyTorch,
    /// with MXNet; PyTorch with numpy 2; MXNet with Horovod; TensorFlow; the test tools); prints their
    /// interpreters.
    Peer,
    /// Starts the test services (S3 server, GCS and Azure emulators) and prints the environment to use them; runs
    /// until interrupted.
    Services,
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Test(args) => test::run(args),
        Task::Fuzz(args) => fuzz::run(args),
        Task::GenProto(args) => proto::run(args),
        Task::Bench(args) => bench::run(args),
        Task::BenchReport(args) => bench::report_only(args),
        Task::BenchServe(args) => bench::serve_only(args),
        Task::BenchStores => bench::stores_alone(),
        Task::Peer => {
            for venv in [
                &peer::PEER,
                &peer::TORCH,
                &peer::TORCH_NP2,
                &peer::MXNET,
                &peer::MXNET_HOROVOD,
                &peer::TF,
                &peer::SPARK,
                &peer::TOOLS,
            ] {
                println!("{}: {}", venv.purpose, venv.ensure()?.display());
            }
            Ok(())
        }
        Task::Services => services::run_foreground(),
    }
}
