//! The Python package `smdebug_rs` (crates/python) in `cargo xtask test` and `cargo xtask
//! bench`. The tests install it into each venv of [`SUITES`] (beside the real smdebug, so
//! both run from one Python) as a development install of the extension module that the
//! workspace's test build compiled ([`install_dev`]), and run that venv's files of the
//! pytest suite in crates/python/tests, printing pytest's summary line. The benchmarks build an optimised wheel with maturin
//! ([`install_wheel`]): see `bench_rows` (reader) and `hook_rows` (writer hook).
use crate::peer::{ensure_venv, site_packages, Venv};
use crate::util::{cache_dir, output, pip, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes sure the maturin venv exists; returns the `maturin` executable.
fn ensure_maturin() -> Result<PathBuf> {
    let venv = cache_dir().join("maturin-venv");
    ensure_venv(
        &venv,
        &[root().join("crates/python/build-requirements.txt")],
        &[],
        &[],
        "import maturin",
        &|_| Ok(()),
    )
    .context("setting up maturin")?;
    Ok(venv.join("bin/maturin"))
}

/// Installs the pinned pytest into the peer venv unless that exact version is there.
fn ensure_pytest(python: &Path) -> Result<()> {
    let req = root().join("crates/python/tests/requirements.txt");
    let text = std::fs::read_to_string(&req)?;
    let wanted = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("pytest=="))
        .context("crates/python/tests/requirements.txt pins no pytest")?;
    let have = Command::new(python)
        .args(["-c", "import pytest; print(pytest.__version__)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if have.as_deref() == Some(wanted) {
        return Ok(());
    }
    output(pip(python).args(["install", "--no-deps", "-r"]).arg(&req))
        .context("installing pytest into the peer venv")?;
    Ok(())
}

/// The `.pth` file of a development install (see [`install_dev`]).
const DEV_PTH: &str = "smdebug_rs_dev.pth";

/// Installs smdebug_rs into the venv of `python` from the sources, without a second build:
/// the extension module is the `cdylib` that `cargo build --workspace --lib` made with the
/// test build's features and profile (`target/debug/lib_native.so`), copied into the
/// package's Python folder as `_native.abi3.so`, and a `.pth` file in the venv's
/// site-packages puts that folder on `sys.path` — what `maturin develop` does, but with
/// the dependency tree built once. (maturin builds only this package, so cargo resolves
/// the dependencies' features for it alone and compiles most of the tree again.)
pub fn install_dev(python: &Path) -> Result<()> {
    let package = copy_extension()?;
    // A wheel installed by `cargo xtask bench` would come first on sys.path.
    output(pip(python).args(["uninstall", "-y", "smdebug_rs"]))
        .context("removing an installed smdebug_rs wheel")?;
    std::fs::write(
        site_packages(python)?.join(DEV_PTH),
        format!("{}\n", package.display()),
    )?;
    let found = output(Command::new(python).args([
        "-c",
        "import smdebug_rs, smdebug_rs._native as n; print(n.__file__)",
    ]))
    .context("importing the development install of smdebug_rs")?;
    eprintln!("smdebug_rs (development install): {}", found.trim());
    Ok(())
}

/// Copies the extension module the workspace's build made (`target/debug/lib_native.so`)
/// into the package's Python folder as `_native.abi3.so`; returns that folder.
fn copy_extension() -> Result<PathBuf> {
    let built = root().join("target/debug/lib_native.so");
    if !built.is_file() {
        bail!(
            "{} is missing: `cargo build --workspace --lib` builds it",
            built.display()
        );
    }
    let package = root().join("crates/python/python");
    std::fs::copy(&built, package.join("smdebug_rs/_native.abi3.so"))
        .context("copying the extension module into crates/python/python/smdebug_rs")?;
    Ok(package)
}

/// `cargo xtask test`'s type check of the package with the tools venv's interpreter
/// `python` (mypy is pinned in tests/peer/tools-requirements.txt): `mypy` with the
/// `[tool.mypy]` settings of crates/python/pyproject.toml (strict), then `stubtest`,
/// which imports the native module (the build's, as [`install_dev`] installs it) and
/// checks `_native.pyi` against it. Any finding of either fails the step, printed.
pub fn typecheck(python: &Path) -> Result<()> {
    let package = copy_extension()?;
    let crate_dir = root().join("crates/python");
    let out = output(
        Command::new(python)
            .current_dir(&crate_dir)
            .args(["-m", "mypy"]),
    )
    .context("mypy on smdebug_rs ([tool.mypy] in crates/python/pyproject.toml)")?;
    eprintln!("mypy: {}", out.trim().lines().last().unwrap_or_default());
    let out = output(
        Command::new(python)
            .current_dir(&crate_dir)
            .env("PYTHONPATH", &package)
            .env("SMDEBUG_LOG_LEVEL", "error")
            .args(["-m", "mypy.stubtest", "smdebug_rs._native"])
            .args(["--allowlist", "stubtest-allowlist.txt"])
            .args(["--mypy-config-file", "pyproject.toml"]),
    )
    .context("stubtest: smdebug_rs/_native.pyi against the native module")?;
    eprintln!(
        "stubtest: {}",
        out.trim().lines().last().unwrap_or_default()
    );
    Ok(())
}

/// Builds the smdebug_rs wheel (`release`: optimised, for benchmarks) and installs it into
/// the venv of `python` (in place of a development install).
pub fn install_wheel(python: &Path, release: bool) -> Result<()> {
    let dev = site_packages(python)?.join(DEV_PTH);
    if dev.exists() {
        std::fs::remove_file(&dev)?;
    }
    let maturin = ensure_maturin()?;
    let out = root().join("target/wheels");
    // Only this build's wheel may be installed: clear what an earlier build left.
    if out.is_dir() {
        for e in std::fs::read_dir(&out)? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "whl") {
                std::fs::remove_file(p)?;
            }
        }
    }
    let mut build = Command::new(&maturin);
    build
        .current_dir(root())
        .args(["build", "--strip", "-m", "crates/python/Cargo.toml", "-i"])
        .arg(python)
        .arg("--out")
        .arg(&out);
    if release {
        build.arg("--release");
    }
    crate::util::run(&mut build).context("building the smdebug_rs wheel")?;
    let wheel = std::fs::read_dir(&out)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("maturin wrote no wheel")?;
    output(
        pip(python)
            .args(["install", "--no-deps", "--force-reinstall"])
            .arg(&wheel),
    )
    .context("installing the smdebug_rs wheel")?;
    Ok(())
}

/// The summary line of pytest's output (`N passed, M skipped in S`).
fn summary_line(out: &str) -> Option<&str> {
    out.lines()
        .rev()
        .map(|l| l.trim().trim_matches('='))
        .map(str::trim)
        .find(|l| {
            l.contains(" in ")
                && [" passed", " failed", " error", " skipped", "no tests ran"]
                    .iter()
                    .any(|w| l.contains(w))
        })
}

/// One pytest run of `cargo xtask test`: a venv and the files of crates/python/tests it
/// runs there.
pub struct Suite {
    /// Where the files run (with the development install, see [`install_dev`]).
    pub venv: &'static Venv,
    /// The files: names with this prefix that no earlier row with another prefix took.
    /// Rows with the same prefix run the same files, each in its venv.
    prefix: &'static str,
    /// A pytest `-m` expression that deselects the tests this venv cannot run: pytest
    /// counts them as deselected, never as passed or skipped.
    markers: Option<&'static str>,
}

/// Which venv runs which files of crates/python/tests: a framework's hook tests run where
/// that framework is installed (the PyTorch ones again with numpy 2, but for those marked
/// `original`, which run the original smdebug, and `proof`, real training runs that prove
/// the rules and do not depend on numpy; MXNet's Horovod ones where Horovod is built),
/// smdebug_rs.spark's where PySpark is (by
/// file name prefix), every other file beside the plain peer (the last row).
pub const SUITES: [Suite; 7] = [
    suite(&crate::peer::TORCH, "test_pytorch_"),
    Suite {
        markers: Some("not original and not proof"),
        ..suite(&crate::peer::TORCH_NP2, "test_pytorch_")
    },
    suite(&crate::peer::MXNET_HOROVOD, "test_mxnet_horovod"),
    suite(&crate::peer::MXNET, "test_mxnet_"),
    suite(&crate::peer::TF, "test_tensorflow_"),
    suite(&crate::peer::SPARK, "test_spark_"),
    suite(&crate::peer::PEER, "test_"),
];

/// A row of [`SUITES`] that runs every test of its files.
const fn suite(venv: &'static Venv, prefix: &'static str) -> Suite {
    Suite {
        venv,
        prefix,
        markers: None,
    }
}

/// The test files of [`SUITES`] row `row`, sorted.
fn suite_files(row: usize) -> Result<Vec<PathBuf>> {
    let prefix = SUITES[row].prefix;
    let claimed_earlier = |name: &str| {
        SUITES[..row]
            .iter()
            .any(|s| s.prefix != prefix && name.starts_with(s.prefix))
    };
    let mut files = Vec::new();
    for e in std::fs::read_dir(root().join("crates/python/tests"))? {
        let path = e?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with(prefix) && name.ends_with(".py") && !claimed_earlier(name) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// `cargo xtask test`'s Python step for [`SUITES`] row `row`: pytest of its files in the
/// venv of `python` (with the development install, see [`install_dev`]) with `env` (the
/// tools' paths and the S3 server's variables), printing pytest's summary line. A skipped test fails the step: every venv has
/// what its files need, so a skip means a test did not run that should have.
pub fn test(row: usize, python: &Path, env: &[(String, String)]) -> Result<()> {
    ensure_pytest(python)?;
    let files = suite_files(row)?;
    if files.is_empty() {
        bail!("no crates/python/tests/{}*.py files", SUITES[row].prefix);
    }
    let tests = root().join("crates/python/tests");
    let mut pytest = Command::new(python);
    pytest
        .current_dir(&tests)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-r", "fEs"]);
    if let Some(markers) = SUITES[row].markers {
        pytest.args(["-m", markers]);
    }
    let out = pytest
        .args(&files)
        .env("SMDEBUG_RS_PEER_DIR", root().join("tests/peer"))
        .env("SMDEBUG_LOG_LEVEL", "error")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The panic test panics on purpose; its backtrace is noise.
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .context("running pytest")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprint!("{stdout}");
    let summary = summary_line(&stdout).unwrap_or("no summary line");
    let venv = SUITES[row].venv.name;
    eprintln!("pytest (smdebug_rs, {venv}): {summary}");
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        bail!("pytest in {venv} failed: {summary}");
    }
    if summary.contains(" skipped") {
        bail!("pytest in {venv}: tests were skipped ({summary}); see the reasons above");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{suite_files, summary_line, SUITES};

    #[test]
    fn every_test_file_runs_and_shared_prefixes_run_the_same_files() {
        let names = |row: usize| -> Vec<String> {
            suite_files(row)
                .unwrap()
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        let row = |venv: &str| SUITES.iter().position(|s| s.venv.name == venv).unwrap();
        let torch = names(row("peer-torch-venv"));
        assert!(
            torch.contains(&"test_pytorch_hook.py".to_owned()),
            "{torch:?}"
        );
        assert_eq!(names(row("peer-torch-np2-venv")), torch);
        let horovod = names(row("peer-mxnet-horovod-venv"));
        let mxnet = names(row("peer-mxnet-venv"));
        assert!(!horovod.is_empty() && mxnet.iter().all(|f| !horovod.contains(f)));
        // Every file once, but for the rows that share a prefix.
        let mut all: Vec<String> = (0..SUITES.len())
            .filter(|&r| SUITES[r].markers.is_none())
            .flat_map(names)
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a file in two rows: {all:?}");
    }

    #[test]
    fn finds_pytest_summary_lines() {
        let out = "....s.\n========= 5 passed, 1 skipped in 3.21s =========\n";
        assert_eq!(summary_line(out), Some("5 passed, 1 skipped in 3.21s"));
        assert_eq!(
            summary_line("F.\n1 failed, 1 passed in 0.50s\n"),
            Some("1 failed, 1 passed in 0.50s")
        );
        assert_eq!(summary_line("collecting ...\n"), None);
    }
}
