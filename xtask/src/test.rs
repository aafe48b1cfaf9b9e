//! `cargo xtask test`: the one test command. Every step fails loudly; nothing is skipped
//! silently because a tool was missing — the tools are installed here.
use crate::phases::Phases;
use crate::util::{cargo, output, run as exec};
use crate::{peer, services};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;
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
    /// Extra arguments for `cargo test` (e.g. `-p smdebug-record`).
    #[arg(last = true)]
    pub cargo_args: Vec<String>,
}

/// What the tests need from outside the workspace: the Python peer and its framework
/// venvs, the test tools, the browser. Installed on a thread of its own while the
/// workspace compiles (the downloads wait on the network, not on the cores).
struct Tools {
    peer_python: PathBuf,
    tools_python: PathBuf,
    chromium: PathBuf,
    /// The interpreter of each row of [`crate::python::SUITES`].
    suite_pythons: Vec<PathBuf>,
}

impl Tools {
    /// The paths every test phase gets, the same way in each (cargo test, the shared peer
    /// check, pytest): a test never guesses where xtask installed a tool.
    fn env(&self) -> Vec<(String, String)> {
        [
            ("SMDEBUG_PEER_PYTHON", &self.peer_python),
            ("SMDEBUG_TOOLS_PYTHON", &self.tools_python),
            ("SMDEBUG_CHROMIUM", &self.chromium),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.display().to_string()))
        .collect()
    }
}

fn install_tools() -> Result<Tools> {
    let suite_pythons = crate::python::SUITES
        .iter()
        .map(|suite| suite.venv.ensure())
        .collect::<Result<Vec<_>>>()?;
    // The plain peer is one of the suites' venvs: checked once.
    let peer_python = match crate::python::SUITES
        .iter()
        .position(|suite| suite.venv.name == peer::PEER.name)
    {
        Some(row) => suite_pythons[row].clone(),
        None => peer::ensure_peer()?,
    };
    Ok(Tools {
        peer_python,
        tools_python: peer::ensure_tools()?,
        chromium: crate::browser::ensure_chromium()?,
        suite_pythons,
    })
}

/// `cargo` for the build and the test runs. With `lint`, clippy-driver compiles the
/// workspace's own crates (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy` does) with
/// `-D warnings`: the lints run inside the test build, so the dependencies are not compiled
/// a second time in check mode for `cargo clippy`. Every cargo call that must reuse that
/// build (the test runs, the tests' own `cargo build`) carries the same variables.
fn cargo_linted(lint: bool) -> Command {
    let mut c = cargo();
    if lint {
        c.env("RUSTC_WORKSPACE_WRAPPER", "clippy-driver").env(
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
        );
    }
    c
}

pub fn run(args: TestArgs) -> Result<()> {
    let started = Instant::now();
    let lint = !args.no_lint;
    let mut phases = Phases::new("cargo xtask test");
    let tools = std::thread::spawn(install_tools);
    if lint {
        phases.begin("lint: cargo fmt --check, gen-proto --check");
        exec(cargo().args(["fmt", "--all", "--", "--check"])).context("run `cargo fmt --all`")?;
        crate::proto::run(crate::proto::GenProtoArgs { check: true })?;
        output(Command::new("clippy-driver").arg("--version"))
            .context("clippy is not installed: rustup component add clippy")?;
    }

    phases.begin(if lint {
        "build + clippy -D warnings: cargo test --workspace --no-run, then --benches"
    } else {
        "build: cargo test --workspace --no-run, then --benches"
    });
    // Exactly the targets the test run below builds (examples as plain binaries), then the
    // benches in test mode so that they compile and pass clippy too. `--all-targets` would
    // build the examples in test mode instead, and the test run would build them again.
    exec(
        cargo_linted(lint)
            .args(["test", "--workspace", "--no-run"])
            .args(&args.cargo_args),
    )?;
    exec(
        cargo_linted(lint)
            .args(["test", "--workspace", "--benches", "--no-run"])
            .args(&args.cargo_args),
    )?;
    // The Python extension module (a `cdylib`, which the test build does not link) from
    // the same dependency builds: `--tests` keeps the dev-dependencies' features in the
    // resolution, so nothing below it is compiled again.
    phases.begin("build: cargo build --workspace --lib --tests (the Python extension)");
    exec(cargo_linted(lint).args(["build", "--workspace", "--lib", "--tests"]))?;

    if lint {
        // rustdoc needs the dependencies in check mode; the test build's do not serve.
        phases.begin("doc: cargo doc --workspace --no-deps (warnings are errors)");
        exec(
            cargo()
                .args(["doc", "--workspace", "--no-deps", "--quiet"])
                .env("RUSTDOCFLAGS", "-D warnings"),
        )?;
    }

    phases.begin("tools: Python venvs, test tools, Chromium (installed while the build ran)");
    let tools = tools
        .join()
        .map_err(|_| anyhow::anyhow!("the tool installer panicked"))??;
    phases.begin("python: mypy (strict) and stubtest of smdebug_rs (tools-venv)");
    crate::python::typecheck(&tools.tools_python)?;
    phases.begin("services: S3 server (moto), GCS and Azure emulators");
    let s3 = services::S3Server::start(&tools.tools_python)?;
    eprintln!("moto listening at {}", s3.endpoint);
    let emulators = crate::stores::Emulators::start(&tools.tools_python)?;

    phases.begin("test: cargo test --workspace");
    let mut cmd = cargo_linted(lint);
    cmd.args(["test", "--workspace"])
        .args(&args.cargo_args)
        .envs(tools.env())
        .envs(s3.env())
        .envs(emulators.env());
    exec(&mut cmd)?;
    drop(emulators);

    // The optional extra check: the shared peer beside the clone (absent on a fresh clone).
    // Its tests are ignored by default, so the run above reports them as ignored, never as
    // passed; here they run by name, and this step says whether they did.
    phases.begin("test: shared peer check (../shared/peer)");
    let shared_peer = crate::util::root().join("../shared/peer");
    if shared_peer.is_dir() {
        let out = output(
            cargo_linted(lint)
                // Every test target of the workspace, as the build phase resolved them:
                // naming one package or one target (`-p`, `--test conformance`) makes cargo
                // resolve the dependencies' features for that package alone and build them
                // again. The filter leaves the other binaries nothing to run.
                .args(["test", "--workspace", "--tests"])
                .args(["--", "--ignored", SHARED_PEER_TESTS])
                .envs(tools.env())
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
    for (row, python) in tools.suite_pythons.iter().enumerate() {
        let venv = crate::python::SUITES[row].venv.name;
        phases.begin(&format!("python: pytest in {venv} (development install)"));
        crate::python::install_dev(python)?;
        let env: Vec<_> = tools.env().into_iter().chain(s3.env()).collect();
        crate::python::test(row, python, &env)?;
    }
    drop(s3);
    drop(phases);
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
