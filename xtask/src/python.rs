//! The Python package `smdebug_rs` (crates/python) in `cargo xtask test`: builds the wheel
//! with maturin, installs it into the peer venv (beside the real smdebug, so both run from
//! one Python), and runs the pytest suite of crates/python/tests, printing pytest's
//! summary line. Benchmarks: see `bench_rows`.
use crate::peer::ensure_venv;
use crate::util::{cache_dir, output, root, step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes sure the maturin venv exists; returns the `maturin` executable.
fn ensure_maturin() -> Result<PathBuf> {
    let venv = cache_dir().join("maturin-venv");
    ensure_venv(
        &venv,
        &root().join("crates/python/build-requirements.txt"),
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
    output(
        Command::new(python)
            .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
            .args(["install", "--no-deps", "-r"])
            .arg(&req),
    )
    .context("installing pytest into the peer venv")?;
    Ok(())
}

/// Builds the smdebug_rs wheel (`release`: optimised, for benchmarks) and installs it into
/// the venv of `python`.
pub fn install_wheel(python: &Path, release: bool) -> Result<()> {
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
        Command::new(python)
            .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
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

/// `cargo xtask test`'s Python step: wheel, install, pytest against `s3_env`'s server.
pub fn test(peer_python: &Path, s3_env: &[(String, String)]) -> Result<()> {
    step("Python package smdebug_rs: maturin build + pytest (crates/python/tests)");
    install_wheel(peer_python, false)?;
    ensure_pytest(peer_python)?;
    let tests = root().join("crates/python/tests");
    let out = Command::new(peer_python)
        .current_dir(&tests)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-r", "fEs"])
        .arg(&tests)
        .env("SMDEBUG_RS_PEER_DIR", root().join("tests/peer"))
        .env("SMDEBUG_LOG_LEVEL", "error")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The panic test panics on purpose; its backtrace is noise.
        .env("RUST_BACKTRACE", "0")
        .envs(s3_env.iter().map(|(k, v)| (k, v)))
        .output()
        .context("running pytest")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprint!("{stdout}");
    let summary = summary_line(&stdout).unwrap_or("no summary line");
    eprintln!("pytest (smdebug_rs): {summary}");
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        bail!("pytest failed: {summary}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::summary_line;

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
