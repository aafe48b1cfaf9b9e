//! `cargo xtask test`: the one test command. Every step fails loudly; nothing is skipped
//! silently because a tool was missing — the tools are installed here.
use crate::util::{cargo, output, run as exec, step};
use crate::{fuzz, peer, services};
use anyhow::{bail, Context, Result};
use std::time::Instant;

/// Name filter of the conformance tests that compare with `../shared/peer` (ignored by
/// default; `tests/conformance/record.rs`).
const SHARED_PEER_TESTS: &str = "record::shared_peer_";

/// The number of tests libtest reports as passed in `out` (the sum over its result lines).
fn tests_passed(out: &str) -> usize {
    out.lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(" passed").next()?.trim().parse::<usize>().ok())
        .sum()
}

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

    step("headless Chromium for the report tests");
    let chromium = crate::browser::ensure_chromium()?;

    step("S3-compatible test server (moto)");
    let s3 = services::S3Server::start(&tools_python)?;
    eprintln!("moto listening at {}", s3.endpoint);
    step("GCS and Azure emulators (fake-gcs-server, Azurite)");
    let emulators = crate::stores::Emulators::start(&tools_python)?;

    step("cargo test --workspace");
    let mut cmd = cargo();
    cmd.args(["test", "--workspace"])
        .args(&args.cargo_args)
        .env("SMDEBUG_PEER_PYTHON", &peer_python)
        .env("SMDEBUG_TOOLS_PYTHON", &tools_python)
        .env("SMDEBUG_CHROMIUM", &chromium)
        .envs(s3.env())
        .envs(emulators.env());
    exec(&mut cmd)?;
    drop(emulators);

    // The optional extra check: the shared peer beside the clone (absent on a fresh clone).
    // Its tests are ignored by default, so the run above reports them as ignored, never as
    // passed; here they run by name, and this step says whether they did.
    step("shared peer check (../shared/peer)");
    let shared_peer = crate::util::root().join("../shared/peer");
    if shared_peer.is_dir() {
        let out = output(
            cargo()
                .args(["test", "-p", "smdebug-conformance", "--test", "conformance"])
                .args(["--", "--ignored", SHARED_PEER_TESTS])
                .env("SMDEBUG_PEER_PYTHON", &peer_python)
                .env("SMDEBUG_TOOLS_PYTHON", &tools_python)
                .env("SMDEBUG_SHARED_PEER", shared_peer.canonicalize()?)
                .envs(s3.env()),
        )?;
        eprint!("{out}");
        let ran = tests_passed(&out);
        if ran == 0 {
            bail!("shared peer check: no test matched `{SHARED_PEER_TESTS}`");
        }
        eprintln!("shared peer check: ran ({ran} tests passed)");
    } else {
        eprintln!("shared peer check: skipped: ../shared/peer absent");
    }
    crate::python::test(&peer_python, &s3.env())?;
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

#[cfg(test)]
mod tests {
    use super::tests_passed;

    #[test]
    fn counts_passed_tests_of_every_result_line() {
        let out = "running 2 tests\ntest a ... ok\ntest b ... ok\n\n\
                   test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 49 filtered out\n";
        assert_eq!(tests_passed(out), 2);
        assert_eq!(
            tests_passed(
                "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 51 filtered out"
            ),
            0
        );
        assert_eq!(tests_passed(""), 0);
    }
}
