//! `cargo xtask test`: the one test command. Every step fails loudly; nothing is skipped
//! silently because a tool was missing — the tools are installed here.
use crate::util::{cargo, run as exec, step};
use crate::{fuzz, peer, services};
use anyhow::{Context, Result};
use std::time::Instant;

/// Options of `cargo xtask test` (the defaults are what CI runs).
#[derive(clap::Args)]
pub struct TestArgs {
    /// Skip fmt, clippy and doc checks.
    #[arg(long)]
    pub no_lint: bool,
    /// Skip the fuzz smoke run.
    #[arg(long)]
    pub no_fuzz: bool,
    /// Seconds of fuzzing per target in the smoke run.
    #[arg(long, default_value_t = 10)]
    pub fuzz_time: u64,
    /// Extra arguments for `cargo test` (e.g. `-p smdebug-record`).
    #[arg(last = true)]
    pub cargo_args: Vec<String>,
}

pub fn run(args: TestArgs) -> Result<()> {
    let started = Instant::now();
    if !args.no_lint {
        step("cargo fmt --check");
        exec(cargo().args(["fmt", "--all", "--", "--check"])).context("run `cargo fmt --all`")?;
        crate::proto::run(crate::proto::GenProtoArgs { check: true })?;
        step("clippy -D warnings");
        exec(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))?;
        step("cargo doc (warnings are errors)");
        exec(
            cargo()
                .args(["doc", "--workspace", "--no-deps", "--quiet"])
                .env("RUSTDOCFLAGS", "-D warnings"),
        )?;
    }

    step("Python smdebug peer and test tools");
    let peer_python = peer::ensure_peer()?;
    let tools_python = peer::ensure_tools()?;

    step("S3-compatible test server (moto)");
    let s3 = services::S3Server::start(&tools_python)?;
    eprintln!("moto listening at {}", s3.endpoint);

    step("cargo test --workspace");
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .args(&args.cargo_args)
        .env("SMDEBUG_PEER_PYTHON", &peer_python)
        .env("SMDEBUG_TOOLS_PYTHON", &tools_python)
        .envs(s3.env());
    let shared_peer = crate::util::root().join("../shared/peer");
    if shared_peer.join("make_fixture.py").exists() {
        cmd.env("SMDEBUG_SHARED_PEER", shared_peer.canonicalize()?);
    }
    exec(&mut cmd)?;
    drop(s3);

    if !args.no_fuzz {
        step("fuzz smoke run");
        fuzz::ensure_cargo_fuzz()?;
        fuzz::build_all()?;
        for t in fuzz::targets()? {
            fuzz::fuzz_one(&t, args.fuzz_time, None)?;
        }
    }
    eprintln!(
        "\nall checks passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
