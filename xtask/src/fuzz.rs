//! `cargo xtask fuzz`: cargo-fuzz on the stable toolchain, without a sanitizer (`-s none`,
//! which cargo-fuzz supports on stable and which runs several times faster than ASan). The
//! targets live in `fuzz/src/` (package `smdebug-fuzz`); their libFuzzer binaries need the
//! package's `libfuzzer` feature. `cargo xtask test` does not fuzz: it replays the seeds,
//! the local corpus and mutations of the seeds through every target (`fuzz/tests/replay.rs`)
//! in the ordinary test build, which costs no second build of the dependency tree.
use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Result};
use std::process::Command;

/// The cargo-fuzz release we install when it is missing.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// `cargo xtask fuzz <target> [--time S]`.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// The target (a file name in `fuzz/fuzz_targets/` without `.rs`); `all` runs each.
    pub target: String,
    /// Seconds to fuzz each target.
    #[arg(long, default_value_t = 60)]
    pub time: u64,
    /// Stop after this many executions instead (libFuzzer `-runs`).
    #[arg(long)]
    pub runs: Option<u64>,
}

pub fn run(args: FuzzArgs) -> Result<()> {
    ensure_cargo_fuzz()?;
    let known = targets()?;
    let chosen = if args.target == "all" {
        known.clone()
    } else {
        vec![args.target.clone()]
    };
    for t in &chosen {
        if !known.contains(t) {
            bail!("no fuzz target {t:?}; have {known:?}");
        }
        fuzz_one(t, args.time, args.runs)?;
    }
    Ok(())
}

/// The fuzz targets in `fuzz/fuzz_targets/`.
pub fn targets() -> Result<Vec<String>> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut v: Vec<String> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_owned))
        .collect();
    v.sort();
    Ok(v)
}

pub fn ensure_cargo_fuzz() -> Result<()> {
    let have = Command::new("cargo").args(["fuzz", "--version"]).output();
    if matches!(&have, Ok(o) if o.status.success()) {
        return Ok(());
    }
    step(&format!("installing cargo-fuzz {CARGO_FUZZ_VERSION}"));
    exec(cargo().args([
        "install",
        "cargo-fuzz",
        "--locked",
        "--version",
        CARGO_FUZZ_VERSION,
    ]))
}

/// Runs one target; libFuzzer exits non-zero on a crash, which fails this.
pub fn fuzz_one(target: &str, seconds: u64, runs: Option<u64>) -> Result<()> {
    step(&format!("fuzzing {target} for {seconds} s"));
    let corpus = root().join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    let seeds = root().join("fuzz/seeds").join(target);
    let mut cmd = cargo();
    cmd.current_dir(root().join("fuzz"))
        .args([
            "fuzz",
            "run",
            "-s",
            "none",
            "--features",
            "libfuzzer",
            target,
        ])
        .arg(&corpus);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    cmd.arg("--").arg(format!("-max_total_time={seconds}"));
    if let Some(r) = runs {
        cmd.arg(format!("-runs={r}"));
    }
    cmd.arg("-print_final_stats=1");
    exec(&mut cmd)?;
    Ok(())
}
