//! `cargo xtask bench --scale`: the scaling table (docs/src/scale.md). Trials of 10k, 100k
//! and 1M index entries, written by `smdebug synth-scale` into `target/bench-scale/`
//! (kept while complete), are opened by `smdebug inspect` (the release build) and by the
//! real Python smdebug (`tests/peer/scale_open.py`, under a time cap); each row gives wall
//! time (best of three, our clock around the process) and peak RSS (`/usr/bin/time`), the
//! ratio Python / ours, and a ceiling: Python's open over the least time any reader needs,
//! locally a bare listing and read of the trial's index files, on S3 the moto server's CPU
//! time for our open's requests (moto serves one request at a time; its CPU time over our
//! wall time, near 1.0, shows it was the bound). The 1M-entry shapes are the issue's:
//! many tensors, many workers, many steps. The table is written to
//! `docs/scale-benchmarks.md`.
use crate::util::{cargo, root, run as exec, step};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

/// (workers, steps, tensors) of each trial, smallest first.
const SHAPES: &[(usize, i64, usize)] = &[
    (64, 16, 10),
    (64, 156, 10),
    (64, 1560, 10),
    (8, 1250, 100),
    (512, 200, 10),
];

/// The largest trials written to and opened on the S3 test server (moto answers one request
/// at a time, a few milliseconds each: 100k entries are about 20,000 objects to write);
/// `SMDEBUG_SCALE_S3_MAX_ENTRIES` overrides.
const S3_MAX_ENTRIES: usize = 100_000;

/// Seconds the Python smdebug may take per open before the row says it did not finish
/// (`SMDEBUG_SCALE_PYTHON_CAP` overrides).
const PYTHON_CAP_SECONDS: &str = "300";

fn trial_dir((w, s, t): (usize, i64, usize)) -> PathBuf {
    root().join(format!("target/bench-scale/{w}w-{s}s-{t}t"))
}

fn smdebug_bin() -> PathBuf {
    root().join("target/release/smdebug")
}

/// Wall seconds and peak RSS in bytes of `cmd` under `/usr/bin/time` (and `timeout cap`
/// when given), and what it printed; `None` when it ran past the cap.
fn timed_output(
    cmd: &[&str],
    cap: Option<&str>,
    env: &[(String, String)],
) -> Result<Option<(f64, f64, String)>> {
    let mut full = Command::new("timeout");
    full.envs(env.iter().map(|(k, v)| (k, v)));
    full.arg(cap.unwrap_or("0"));
    full.args(["/usr/bin/time", "-f", "SCALE-TIME %e %M"]);
    full.args(cmd);
    full.env("SMDEBUG_LOG_LEVEL", "error");
    let out = full
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if out.status.code() == Some(124) {
        return Ok(None);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {err}", out.status);
    }
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("SCALE-TIME "))
        .with_context(|| format!("no timing from /usr/bin/time: {err}"))?;
    let mut parts = line.split_whitespace().skip(1);
    let secs: f64 = parts.next().unwrap_or("").parse()?;
    let kib: f64 = parts.next().unwrap_or("").parse()?;
    Ok(Some((
        secs,
        kib * 1024.0,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )))
}

/// [`timed_output`] without the output.
fn timed(cmd: &[&str], cap: Option<&str>, env: &[(String, String)]) -> Result<Option<(f64, f64)>> {
    Ok(timed_output(cmd, cap, env)?.map(|(s, m, _)| (s, m)))
}

/// Runs of each timing; the best counts.
const REPEAT: usize = 3;

/// Our figures: the best wall time of [`REPEAT`] runs of `cmd` on its own, clocked here
/// around the whole process (`/usr/bin/time` counts in 10 ms steps, too coarse for the
/// small trials), the peak RSS of one more run under `/usr/bin/time`, and, given the S3
/// server's pid, the server's CPU seconds during the fastest run.
fn ours(
    cmd: &[&str],
    env: &[(String, String)],
    server: Option<u32>,
) -> Result<(f64, f64, Option<f64>)> {
    let mut best = f64::INFINITY;
    let mut best_cpu = None;
    for _ in 0..REPEAT {
        let cpu = server.map(crate::services::cpu_seconds).transpose()?;
        let start = Instant::now();
        let out = Command::new(cmd[0])
            .args(&cmd[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("SMDEBUG_LOG_LEVEL", "error")
            .output()
            .with_context(|| format!("cannot run {cmd:?}"))?;
        let secs = start.elapsed().as_secs_f64();
        if !out.status.success() {
            bail!(
                "{cmd:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let cpu = match (server, cpu) {
            (Some(pid), Some(before)) => Some(crate::services::cpu_seconds(pid)? - before),
            _ => None,
        };
        if secs < best {
            (best, best_cpu) = (secs, cpu);
        }
    }
    let (_, rss) = timed(cmd, None, env)?.context("no limit was set, yet the run timed out")?;
    Ok((best, rss, best_cpu))
}

/// Seconds (best of [`REPEAT`]) to list the trial's `index/` folder and read every file in
/// it, on this thread: the part of an open no reader can skip.
fn raw_index_read(dir: &Path) -> Result<f64> {
    fn read_all(dir: &Path, bytes: &mut u64) -> Result<()> {
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                read_all(&entry.path(), bytes)?;
            } else {
                *bytes += std::fs::read(entry.path())?.len() as u64;
            }
        }
        Ok(())
    }
    let mut best = f64::INFINITY;
    for _ in 0..REPEAT {
        let mut bytes = 0;
        let start = Instant::now();
        read_all(&dir.join("index"), &mut bytes)?;
        best = best.min(start.elapsed().as_secs_f64());
        if bytes == 0 {
            bail!("{} holds no index file", dir.display());
        }
    }
    Ok(best)
}

/// Writes the local trial of `shape` unless it is there, complete; returns its folder.
fn ensure_trial(shape: (usize, i64, usize)) -> Result<PathBuf> {
    let dir = trial_dir(shape);
    if dir.join("training_job_end.ts").exists() {
        return Ok(dir);
    }
    let (w, s, t) = shape;
    step(&format!(
        "smdebug synth-scale: {w} workers x {s} steps x {t} tensors"
    ));
    let partial = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    let _ = std::fs::remove_dir_all(&dir);
    synth_scale(partial.to_str().context("non-UTF-8 path")?, shape, &[])?;
    std::fs::rename(&partial, &dir)?;
    Ok(dir)
}

/// `smdebug synth-scale` of `shape` at `url` (a folder or an object store URL).
fn synth_scale(url: &str, (w, s, t): (usize, i64, usize), env: &[(String, String)]) -> Result<()> {
    exec(
        Command::new(smdebug_bin())
            .args(["synth-scale", url, "--workers", &w.to_string()])
            .args(["--steps", &s.to_string(), "--tensors", &t.to_string()])
            .envs(env.iter().map(|(k, v)| (k, v))),
    )
}

/// Where a row's trial lies: a local folder (with the raw-read ceiling) or the S3 test
/// server (written fresh by this run, with the server's environment).
enum Place<'a> {
    Local,
    S3(&'a [(String, String)]),
}

fn row(shape: (usize, i64, usize), python: &Path, cap: &str, place: &Place) -> Value {
    let (w, s, t) = shape;
    let entries = w as i64 * s * t as i64;
    let on = match place {
        Place::Local => "",
        Place::S3(_) => " on S3",
    };
    let name =
        format!("scale{on}: open {entries} index entries ({w} workers x {s} steps x {t} tensors)");
    let run = || -> Result<Value> {
        let (dir, env, raw) = match place {
            Place::Local => {
                let dir = ensure_trial(shape)?;
                let dir = dir.to_str().context("non-UTF-8 path")?.to_owned();
                step(&format!("{name}: raw read of the index files"));
                let raw = raw_index_read(Path::new(&dir))?;
                (dir, &[][..], Some(raw))
            }
            Place::S3(env) => {
                let url = format!("s3://{}/scale-{w}w-{s}s-{t}t", crate::services::BUCKET);
                step(&format!("{name}: smdebug synth-scale {url}"));
                synth_scale(&url, shape, env)?;
                (url, *env, None)
            }
        };
        let dir = dir.as_str();
        step(&format!("{name}: smdebug inspect"));
        let bin = smdebug_bin();
        let server = match place {
            Place::Local => None,
            Place::S3(env) => Some(
                crate::services::server_pid(env)
                    .context("the S3 server's pid is not in the environment")?,
            ),
        };
        let ours = ours(
            &[bin.to_str().context("non-UTF-8 path")?, "inspect", dir],
            env,
            server,
        )?;
        step(&format!("{name}: Python smdebug (cap {cap} s)"));
        let script = root().join("tests/peer/scale_open.py");
        // Python's own clock of the open (its interpreter start and `import smdebug`
        // excluded); the peak RSS is the process's.
        let py = timed_output(
            &[
                python.to_str().context("non-UTF-8 path")?,
                script.to_str().context("non-UTF-8 path")?,
                dir,
            ],
            Some(cap),
            env,
        )?;
        let py = match py {
            Some((_, rss, out)) => {
                let v: Value = serde_json::from_str(out.trim())
                    .with_context(|| format!("scale_open.py printed {out}"))?;
                let secs = v["seconds"]
                    .as_f64()
                    .context("no seconds from scale_open.py")?;
                Some((secs, rss))
            }
            None => None,
        };
        Ok(json!({
            "name": name, "s3": matches!(place, Place::S3(_)), "entries": entries, "workers": w, "steps": s, "tensors": t,
            "value": ours.0, "unit": "s", "ours_seconds": ours.0, "ours_max_rss_bytes": ours.1,
            "bytes_per_entry": ours.1 / entries as f64,
            "python_seconds": py.map(|p| p.0), "python_max_rss_bytes": py.map(|p| p.1),
            "ratio": py.map(|p| p.0 / ours.0),
            "raw_index_read_seconds": raw,
            "server_cpu_seconds": ours.2,
            "server_busy_share": ours.2.map(|c| c / ours.0),
            "ceiling": py.zip(raw.or(ours.2)).map(|(p, least)| p.0 / least),
            "baseline": match py {
                Some(_) => "python smdebug open (same trial)".to_owned(),
                None => format!("python smdebug did not finish within {cap} s"),
            },
            "goal": if entries >= 1_000_000 { Some("<= 2 s, <= 150 MB") } else { None },
        }))
    };
    run().unwrap_or_else(|e| json!({"name": name, "error": format!("{e:#}")}))
}

/// Builds the release CLI, writes the trials that are missing, and measures every row;
/// prints the table, writes it to `docs/scale-benchmarks.md` and returns the rows.
pub fn run(python: &Path) -> Result<Vec<Value>> {
    step("cargo build --release -p smdebug-cli (synth-scale, inspect)");
    exec(cargo().args(["build", "--release", "-p", "smdebug-cli"]))?;
    let cap =
        std::env::var("SMDEBUG_SCALE_PYTHON_CAP").unwrap_or_else(|_| PYTHON_CAP_SECONDS.into());
    let only: Option<usize> = std::env::var("SMDEBUG_SCALE_MAX_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut rows: Vec<Value> = SHAPES
        .iter()
        .filter(|(w, s, t)| only.is_none_or(|m| w * (*s as usize) * t <= m))
        .map(|&shape| row(shape, python, &cap, &Place::Local))
        .collect();
    let s3_max = std::env::var("SMDEBUG_SCALE_S3_MAX_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(S3_MAX_ENTRIES)
        .min(only.unwrap_or(usize::MAX));
    let s3 = crate::services::S3Server::start(&crate::peer::ensure_tools()?)?;
    let env = s3.env();
    rows.extend(
        SHAPES
            .iter()
            .filter(|(w, s, t)| w * (*s as usize) * t <= s3_max)
            .map(|&shape| row(shape, python, &cap, &Place::S3(&env))),
    );
    drop(s3);
    let table = table(&rows, &cap);
    println!("\n{table}");
    let commit = crate::util::output(
        Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(root()),
    )
    .map(|c| c.trim().to_owned())
    .unwrap_or_else(|_| "?".to_owned());
    let page = format!(
        "<!-- Generated by `cargo xtask bench --scale`: do not edit by hand. -->\n\
         # Scaling table\n\n\
         The figures of the last `cargo xtask bench --scale` run, {}, commit `{commit}`{}. \
         How they are measured: docs/src/scale.md, \"The scaling table\".\n\n{table}",
        super::doc::utc_timestamp(SystemTime::now()),
        match only {
            Some(m) => format!(", trials of at most {m} entries"),
            None => String::new(),
        },
    );
    let path = root().join("docs/scale-benchmarks.md");
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(rows)
}

/// The table of `rows` in Markdown.
fn table(rows: &[Value], cap: &str) -> String {
    let mut out = String::from(
        "| trial | entries | ours: `smdebug inspect` | ours peak RSS | peak RSS / entry (B) \
         | Python open | Python peak RSS | Python / ours | least time: raw read of the index files \
         (S3: moto's CPU time during our open, and its share of our wall time) \
         | ceiling: Python / least time |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mb = |v: &Value| {
        v.as_f64()
            .map_or("-".to_owned(), |b| format!("{:.0} MB", b / 1e6))
    };
    let secs = |v: &Value| {
        v.as_f64().map_or(format!("> {cap} s (cap)"), |s| {
            if s < 0.1 {
                format!("{:.1} ms", s * 1e3)
            } else {
                format!("{s:.2} s")
            }
        })
    };
    let times = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x:.0}×"));
    for r in rows {
        if let Some(e) = r["error"].as_str() {
            out += &format!(
                "| {} | error: {e} | | | | | | | | |\n",
                r["name"].as_str().unwrap_or("")
            );
            continue;
        }
        out += &format!(
            "| {}{}w × {}s × {}t | {} | {} | {} | {:.0} | {} | {} | {} | {} | {} |\n",
            if r["s3"].as_bool() == Some(true) {
                "S3: "
            } else {
                ""
            },
            r["workers"],
            r["steps"],
            r["tensors"],
            r["entries"],
            secs(&r["ours_seconds"]),
            mb(&r["ours_max_rss_bytes"]),
            r["bytes_per_entry"].as_f64().unwrap_or(f64::NAN),
            secs(&r["python_seconds"]),
            mb(&r["python_max_rss_bytes"]),
            times(&r["ratio"]),
            match (&r["raw_index_read_seconds"], &r["server_cpu_seconds"]) {
                (Value::Null, Value::Null) => "-".to_owned(),
                (Value::Null, cpu) => format!(
                    "{} (busy {:.2})",
                    secs(cpu),
                    r["server_busy_share"].as_f64().unwrap_or(f64::NAN)
                ),
                (raw, _) => secs(raw),
            },
            times(&r["ceiling"]),
        );
    }
    out
}
