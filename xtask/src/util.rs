//! Small helpers for running commands loudly.
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    // `cargo run` sets CARGO_MANIFEST_DIR for the run too. The compile-time value can name
    // another checkout: a target dir shared between worktrees reuses this binary.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Prints a step header so a CI log shows where time goes.
pub fn step(name: &str) {
    eprintln!("\n==> {name}");
}

/// Runs a command, inheriting stdio, and fails with the command line if it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("command failed ({status}): {shown}");
    }
    Ok(())
}

/// Runs a command and returns its stdout, failing with its stderr if it fails.
pub fn output(cmd: &mut Command) -> Result<String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {shown}"))?;
    if !out.status.success() {
        bail!(
            "command failed ({}): {shown}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `python -m pip` without its version check or prompts; the caller adds the subcommand.
pub fn pip(python: &Path) -> Command {
    let mut c = Command::new(python);
    c.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
    c
}

/// `cargo` as invoked by the user (respects `$CARGO`), without the variables `cargo run`
/// set for xtask itself (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …): build scripts that
/// watch them (ring's does) would otherwise run again, and everything above them be
/// compiled again, between a `cargo xtask test` and a plain `cargo test`.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || matches!(
                key,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            c.env_remove(key);
        }
    }
    c
}

/// Where the project keeps machine-local caches (venvs): `$XDG_CACHE_HOME/smdebug-rs`.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("smdebug-rs")
}
