//! The Python package `smdebug_rs` (crates/python) in `cargo xtask test` and `cargo xtask
//! bench`. The tests install it into each venv of [`SUITES`] (beside the real smdebug, so
//! both run from one Python) as a development install of the extension module that the
//! workspace's test build compiled ([`install_dev`]), and run that venv's files of the
//! pytest suite in crates/python/tests, printing pytest's summary line. The benchmarks build an optimised wheel with maturin
//! ([`install_wheel`]): see `bench_rows` (reader) and `hook_rows` (writer hook).
use crate::peer::{ensure_venv, Venv};
use crate::util::{cache_dir, output, root, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes sure the maturin venv exists; returns the `maturin` executable.
fn ensure_maturin() -> Result<PathBuf> {
    let venv = cache_dir().join("maturin-venv");
    ensure_venv(
        &venv,
        &[root().join("crates/python/build-requirements.txt")],
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

/// The `.pth` file of a development install (see [`install_dev`]).
const DEV_PTH: &str = "smdebug_rs_dev.pth";

/// The venv's `site-packages` folder.
fn site_packages(python: &Path) -> Result<PathBuf> {
    let out = output(Command::new(python).args([
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ]))?;
    Ok(PathBuf::from(out.trim()))
}

/// Installs smdebug_rs into the venv of `python` from the sources, without a second build:
/// the extension module is the `cdylib` that `cargo build --workspace --lib` made with the
/// test build's features and profile (`target/debug/lib_native.so`), copied into the
/// package's Python folder as `_native.abi3.so`, and a `.pth` file in the venv's
/// site-packages puts that folder on `sys.path` — what `maturin develop` does, but with
/// the dependency tree built once. (maturin builds only this package, so cargo resolves
/// the dependencies' features for it alone and compiles most of the tree again.)
pub fn install_dev(python: &Path) -> Result<()> {
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
    // A wheel installed by `cargo xtask bench` would come first on sys.path.
    output(
        Command::new(python)
            .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
            .args(["uninstall", "-y", "smdebug_rs"]),
    )
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

/// Which venv runs which files of crates/python/tests: a framework's hook tests run where
/// that framework is installed, smdebug_rs.spark's where PySpark is (by file name prefix),
/// every other file beside the plain peer (the last row). Each venv gets the development
/// install first.
pub const SUITES: [(&Venv, &str); 5] = [
    (&crate::peer::TORCH, "test_pytorch_"),
    (&crate::peer::MXNET, "test_mxnet_"),
    (&crate::peer::TF, "test_tensorflow_"),
    (&crate::peer::SPARK, "test_spark_"),
    (&crate::peer::PEER, "test_"),
];

/// The test files of [`SUITES`] row `row`, sorted.
fn suite_files(row: usize) -> Result<Vec<PathBuf>> {
    let (_, prefix) = SUITES[row];
    let claimed_earlier = |name: &str| SUITES[..row].iter().any(|(_, p)| name.starts_with(p));
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
/// venv of `python` (with the development install, see [`install_dev`]) against `s3_env`'s
/// server, printing pytest's summary line. A skipped test fails the step: every venv has
/// what its files need, so a skip means a test did not run that should have.
pub fn test(row: usize, python: &Path, s3_env: &[(String, String)]) -> Result<()> {
    ensure_pytest(python)?;
    let files = suite_files(row)?;
    if files.is_empty() {
        bail!("no crates/python/tests/{}*.py files", SUITES[row].1);
    }
    let tests = root().join("crates/python/tests");
    let out = Command::new(python)
        .current_dir(&tests)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-r", "fEs"])
        .args(&files)
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
    let venv = SUITES[row].0.name;
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

/// Whether [`many_small_trial`] is written already.
pub(crate) fn many_small_written() -> bool {
    root()
        .join("target/bench-python-many-small/training_job_end.ts")
        .exists()
}

/// The many-small-tensors trial of the Python benchmarks (8 workers × 60 steps × 250
/// tensors of 10 floats), written by `smdebug synth` from crates/python/bench/many_small.json.
pub(crate) fn many_small_trial(smdebug: &Path) -> Result<PathBuf> {
    let dir = root().join("target/bench-python-many-small");
    if dir.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    step("smdebug synth many_small.json (Python benchmarks: 8 x 60 x 250 tensors)");
    let tmp = dir.with_extension("partial");
    for d in [&dir, &tmp] {
        if d.exists() {
            std::fs::remove_dir_all(d)?;
        }
    }
    crate::util::run(
        Command::new(smdebug)
            .arg("synth")
            .arg(root().join("crates/python/bench/many_small.json"))
            .arg(&tmp),
    )?;
    std::fs::rename(&tmp, &dir)?;
    Ok(dir)
}

/// Runs of each smdebug_rs phase in [`bench_rows`]; the best counts.
const OURS_REPEAT: u32 = 5;

/// Runs crates/python/bench/bench_python.py for one package on one trial.
fn time_package(python: &Path, trial: &Path, package: &str, repeat: u32) -> Result<Value> {
    step(&format!(
        "Python benchmark: {package} on {}",
        trial.display()
    ));
    let out = output(
        Command::new(python)
            .arg(root().join("crates/python/bench/bench_python.py"))
            .arg(trial)
            .args(["--package", package, "--repeat", &repeat.to_string()])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    serde_json::from_str(out.trim()).with_context(|| format!("bench_python.py printed {out}"))
}

/// `cargo xtask bench` rows of the Python package: smdebug_rs against smdebug, both from the
/// peer venv's Python on the same trials — open, every value and `to_pandas` (against the
/// same DataFrame built with smdebug + numpy + pandas) on the `large` preset and on many
/// small tensors. The wheel is built in release mode first. `python_repeat` runs of the
/// original count (its best), [`OURS_REPEAT`] of ours (a few milliseconds each for the
/// open, where the best of two still held a first open's noise).
pub fn bench_rows(python: &Path, large: &Path, smdebug: &Path, python_repeat: u32) -> Vec<Value> {
    // (trial label, every-value goal)
    const TRIALS: [(&str, f64); 2] = [("large", 10.0), ("8x60x250 small tensors", 30.0)];
    let names = |label: &str| {
        [
            (
                format!("python: open {label} trial, smdebug_rs vs smdebug"),
                "open",
                50.0,
            ),
            (
                format!("python: every value of {label} trial, smdebug_rs vs smdebug"),
                "every_value",
                f64::NAN,
            ),
            (
                format!("python: to_pandas of {label} trial vs smdebug+numpy+pandas"),
                "to_pandas",
                20.0,
            ),
        ]
    };
    let mut rows = Vec::new();
    let prepared = install_wheel(python, true).and_then(|()| {
        if !large.join("training_job_end.ts").exists() {
            bail!("{} is missing or incomplete", large.display());
        }
        Ok(vec![large.to_path_buf(), many_small_trial(smdebug)?])
    });
    let trials = match prepared {
        Ok(t) => t,
        Err(e) => {
            let e = format!("{e:#}");
            for (label, _) in TRIALS {
                for (name, _, _) in names(label) {
                    rows.push(json!({"name": name, "error": e}));
                }
            }
            for (name, _, _, _) in HOOK_ROWS {
                rows.push(json!({"name": name, "error": e}));
            }
            return rows;
        }
    };
    rows.extend(hook_rows(python));
    for ((label, value_goal), trial) in TRIALS.iter().zip(&trials) {
        let timed = time_package(python, trial, "smdebug_rs", OURS_REPEAT)
            .and_then(|ours| Ok((ours, time_package(python, trial, "smdebug", python_repeat)?)));
        for (name, key, goal) in names(label) {
            let goal = if key == "every_value" {
                *value_goal
            } else {
                goal
            };
            let row = match &timed {
                Ok((ours, py)) => match (ours[key].as_f64(), py[key].as_f64()) {
                    (Some(o), Some(p)) => json!({
                        "name": name, "value": o * 1e3, "unit": "ms",
                        "baseline": format!("smdebug 1.0.34, same Python (best of {python_repeat})"),
                        "ratio": p / o, "goal": goal, "seconds": o, "baseline_seconds": p,
                    }),
                    _ => json!({"name": name, "error": format!("no {key} timing: {ours} / {py}")}),
                },
                Err(e) => json!({"name": name, "error": format!("{e:#}")}),
            };
            rows.push(row);
        }
    }
    rows
}

/// The writer-hook rows: (name, key of bench_hook.py's output, unit, bound). The issue's
/// goals are absolute (≤ 5 µs per small save, ≥ 2000 MB/s for 1 MiB tensors), so a row's
/// ratio is ours against the bound (≥ 1 meets it, as the memory row of bench.rs does); the
/// original's figure from the same run is the row's `baseline_value`.
const HOOK_ROWS: [(&str, &str, &str, f64); 2] = [
    (
        "python: hook save of a small tensor, training-thread time, smdebug_rs vs smdebug",
        "small_save_us",
        "us",
        5.0,
    ),
    (
        "python: hook 1 MiB tensors, first step to close, smdebug_rs vs smdebug",
        "big_mb_per_s",
        "MB/s",
        2000.0,
    ),
];

/// Runs crates/python/bench/bench_hook.py for one package.
fn time_hook(python: &Path, package: &str) -> Result<Value> {
    step(&format!("Python benchmark: writer hook, {package}"));
    let out = output(
        Command::new(python)
            .arg(root().join("crates/python/bench/bench_hook.py"))
            .args(["--package", package])
            .env("SMDEBUG_LOG_LEVEL", "error"),
    )?;
    serde_json::from_str(out.trim()).with_context(|| format!("bench_hook.py printed {out}"))
}

/// `cargo xtask bench` rows of the writer hook from Python: smdebug_rs.Hook against the
/// original's hook (crates/python/tests/same_calls.py), both from the peer venv's Python
/// (the release wheel is installed by `bench_rows`).
fn hook_rows(python: &Path) -> Vec<Value> {
    let timed =
        time_hook(python, "smdebug_rs").and_then(|ours| Ok((ours, time_hook(python, "smdebug")?)));
    HOOK_ROWS
        .iter()
        .map(|&(name, key, unit, bound)| match &timed {
            Ok((ours, py)) => match (ours[key].as_f64(), py[key].as_f64()) {
                (Some(o), Some(p)) => {
                    // Time: lower is better; throughput: higher is better.
                    let (ratio, vs_original) = if unit == "us" {
                        (bound / o, p / o)
                    } else {
                        (o / bound, o / p)
                    };
                    json!({
                        "name": name, "value": o, "unit": unit,
                        "baseline": format!("bound {bound} {unit}; smdebug 1.0.34's hook, same Python: {p:.1} {unit} ({vs_original:.0}x)"),
                        "baseline_value": p, "vs_original": vs_original,
                        "ratio": ratio, "goal": 1.0,
                    })
                }
                _ => json!({"name": name, "error": format!("no {key}: {ours} / {py}")}),
            },
            Err(e) => json!({"name": name, "error": format!("{e:#}")}),
        })
        .collect()
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
