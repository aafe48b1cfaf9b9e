//! Support for the cross-implementation test suite: finding the real Python smdebug peer,
//! running the project's own peer scripts (`tests/peer/*.py`) and the services that
//! `cargo xtask test` starts.
//!
//! Contract with `cargo xtask test` (which sets these variables after installing things):
//!
//! | variable | meaning |
//! |---|---|
//! | `SMDEBUG_PEER_PYTHON` | interpreter of the venv that holds smdebug 1.0.34 (`tests/peer/requirements.txt`) |
//! | `SMDEBUG_TEST_S3_ENDPOINT`, `SMDEBUG_TEST_S3_BUCKET` | an S3-compatible server on 127.0.0.1 and a bucket in it; `AWS_*` credentials are set too |
//! | `SMDEBUG_SHARED_PEER` | `../shared/peer` when it exists beside the clone: an independent second check, made only by the `#[ignore]`d tests `record::shared_peer_*`, which `cargo xtask test` runs as a step of its own (printing `shared peer check: ran` or `shared peer check: skipped: ../shared/peer absent`) |
//!
//! Tests that need the peer fail (they never skip) when it is missing: a green run must mean
//! the comparison happened.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder of the project's own peer scripts (`tests/peer`).
pub fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peer")
}

/// The folder holding the preset recipes (`tests/peer/presets`).
pub fn presets_dir() -> PathBuf {
    peer_dir().join("presets")
}

/// Every preset used by conformance tests: all but `large`, which is for benchmarks.
pub fn conformance_presets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(presets_dir())
        .expect("tests/peer/presets must exist")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_owned)
        })
        .filter(|n| n != "large")
        .collect();
    names.sort();
    assert!(
        !names.is_empty(),
        "no presets in {}",
        presets_dir().display()
    );
    names
}

/// The Python interpreter that has the real smdebug 1.0.34.
///
/// Panics with instructions when it is not configured: run the suite with `cargo xtask test`.
pub fn peer_python() -> PathBuf {
    if let Some(p) = std::env::var_os("SMDEBUG_PEER_PYTHON") {
        return PathBuf::from(p);
    }
    let default = default_peer_venv().join("bin/python");
    if default.exists() {
        return default;
    }
    panic!(
        "the Python smdebug peer is not set up: run the suite with `cargo xtask test` \
         (or `cargo xtask peer` once, then set SMDEBUG_PEER_PYTHON={})",
        default.display()
    );
}

/// Where `cargo xtask` keeps the peer's virtualenv by default.
pub fn default_peer_venv() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("smdebug-rs/peer-venv")
}

/// Runs `tests/peer/<script>` with the peer's interpreter and returns its output, panicking
/// with stdout and stderr if it fails.
pub fn run_peer(script: &str, args: &[&str]) -> Output {
    let out = Command::new(peer_python())
        .arg(peer_dir().join(script))
        .args(args)
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .unwrap_or_else(|e| panic!("cannot run peer script {script}: {e}"));
    if !out.status.success() {
        panic!(
            "peer script {script} {args:?} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// Runs a peer script and parses its standard output as JSON.
pub fn run_peer_json(script: &str, args: &[&str]) -> serde_json::Value {
    let out = run_peer(script, args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "peer script {script} printed invalid JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The S3 test server, if `cargo xtask test` started one: `(endpoint, bucket)`.
pub fn s3_server() -> Option<(String, String)> {
    let endpoint = std::env::var("SMDEBUG_TEST_S3_ENDPOINT").ok()?;
    let bucket = std::env::var("SMDEBUG_TEST_S3_BUCKET").ok()?;
    Some((endpoint, bucket))
}

/// The S3 test server, panicking with instructions when the suite runs without it.
pub fn require_s3_server() -> (String, String) {
    s3_server().unwrap_or_else(|| {
        panic!(
            "no S3 test server: run the suite with `cargo xtask test`, which starts one \
             (SMDEBUG_TEST_S3_ENDPOINT / SMDEBUG_TEST_S3_BUCKET)"
        )
    })
}

/// A fresh temporary directory that is removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("smdebug-rs-test")
        .tempdir()
        .expect("create temp dir")
}

/// Writes the trial of a preset (`tests/peer/presets/<preset>.json`) with the real Python
/// smdebug writer classes (`tests/peer/fixture.py`) into `out` (which must not exist yet or
/// be empty), and returns `out`.
///
/// A preset is written by Python once per build directory and the same inputs, then copied:
/// the writer gives the same bytes for the same recipe (fixed wall times), and a dozen
/// tests write every preset, each run of the script paying a second of CPU for
/// `import smdebug` alone. The copy is the test's own, free to change.
pub fn write_fixture(preset: &str, out: &Path) -> PathBuf {
    copy_dir(&cached_preset(preset), out);
    out.to_path_buf()
}

/// The folder of `preset`'s trial as Python wrote it, written on first use. Its name holds
/// a hash of everything the trial follows from: the peer scripts, the preset and the
/// peer's pins.
fn cached_preset(preset: &str) -> PathBuf {
    use std::collections::BTreeMap;
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::sync::{Arc, Mutex, OnceLock};

    static WRITTEN: OnceLock<Mutex<BTreeMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let slot = WRITTEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(preset.to_owned())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(peer_dir())
            .expect("tests/peer")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "py" || x == "txt"))
            .collect();
        inputs.sort();
        inputs.push(presets_dir().join(format!("{preset}.json")));
        let mut h = DefaultHasher::new();
        for p in &inputs {
            p.file_name().hash(&mut h);
            std::fs::read(p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .hash(&mut h);
        }
        let exe = std::env::current_exe().expect("test executable path");
        // <build dir>/<profile>/deps/<test binary>
        let cache = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lives in <profile>/deps")
            .join("peer-fixtures");
        let dir = cache.join(format!("{preset}-{:016x}", h.finish()));
        if !dir.is_dir() {
            // Another test process may write the same preset: each writes its own folder
            // and renames it into place.
            let partial = cache.join(format!("{preset}.partial-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&partial);
            std::fs::create_dir_all(&cache).expect("create the fixture cache");
            let out_s = partial.to_str().expect("utf-8 cache path");
            run_peer("fixture.py", &[out_s, "--preset", preset, "--force", "-q"]);
            if std::fs::rename(&partial, &dir).is_err() {
                // Renamed into place by another process meanwhile.
                let _ = std::fs::remove_dir_all(&partial);
            }
        }
        dir
    })
    .clone()
}

/// Copies the folder `from` to `to` (created; files and subfolders).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.expect("read_dir entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap_or_else(|err| {
                panic!("{} -> {}: {err}", e.path().display(), target.display())
            });
        }
    }
}

/// Like [`write_fixture`], from a recipe file.
pub fn write_fixture_from_recipe(recipe: &Path, out: &Path) -> PathBuf {
    let out_s = out.to_str().expect("utf-8 temp path");
    let recipe_s = recipe.to_str().expect("utf-8 recipe path");
    run_peer(
        "fixture.py",
        &[out_s, "--recipe", recipe_s, "--force", "-q"],
    );
    out.to_path_buf()
}
pub mod manifest;

/// The `smdebug` binary of this workspace, built once per test run (a test crate cannot
/// depend on a binary crate, so it asks cargo for it). Asked for as `--workspace --tests`
/// asks, so that cargo resolves the dependencies' features as `cargo test --workspace`
/// does and finds the binary that build made (`-p smdebug-cli` alone would resolve them
/// for the CLI and compile much of the tree again).
///
/// The path comes from cargo's own build messages, not from the test executable's folder:
/// with a separate build directory (`CARGO_BUILD_BUILD_DIR`) the two live apart.
pub fn smdebug_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // <build dir>/<profile>/deps/conformance-… names the profile the suite was built with.
        let release = exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == "release");
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "--workspace", "--tests", "--bin", "smdebug"])
            .args(["--message-format", "json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            cmd.arg("--release");
        }
        let out = cmd.output().expect("run cargo build");
        assert!(
            out.status.success(),
            "cargo build --workspace --tests --bin smdebug failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|msg| {
                // The umbrella crate `smdebug` has a test executable of that name too.
                msg["reason"] == "compiler-artifact"
                    && msg["target"]["name"] == "smdebug"
                    && msg["target"]["kind"][0] == "bin"
                    && msg["profile"]["test"] == false
            })
            .find_map(|msg| msg["executable"].as_str().map(PathBuf::from))
            .expect("cargo reported no executable for the smdebug binary");
        assert!(bin.exists(), "{} missing after the build", bin.display());
        bin
    })
}

/// Asserts that a command succeeded, showing its output when it did not.
pub fn check(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
