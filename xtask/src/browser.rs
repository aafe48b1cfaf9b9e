//! The browser the report tests open pages in: Debian's `chromium`, installed with apt-get
//! when it is missing (CI runs as root on a Debian machine), then handed to the suite as
//! `SMDEBUG_CHROMIUM` (`tests/conformance/browser.rs`).
use crate::util::{output, run};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// Where Debian installs it.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The flags every headless run uses: no sandbox (CI runs as root), no GPU, no background
/// traffic, no first-run work.
pub const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Makes sure Chromium is installed; returns its path.
pub fn ensure_chromium() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SMDEBUG_CHROMIUM") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("SMDEBUG_CHROMIUM={} does not exist", p.display());
        }
        return Ok(p);
    }
    let path = PathBuf::from(CHROMIUM);
    if !path.is_file() {
        eprintln!("installing Debian's chromium (apt-get)");
        run(Command::new("apt-get")
            .args(["update", "-q"])
            .env("DEBIAN_FRONTEND", "noninteractive"))
        .context("apt-get update (the browser tests need Debian's chromium)")?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive"))
        .context("apt-get install chromium")?;
    }
    let version = output(Command::new(&path).arg("--version"))
        .with_context(|| format!("running {CHROMIUM} --version"))?;
    eprintln!("browser: {}", version.trim());
    Ok(path)
}
