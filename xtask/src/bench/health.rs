//! The health and median rows of `cargo xtask bench`: the health pass against the reductions-only
//! pass, the flight recorder's training-thread cost per step at N = 10, and the median of
//! three runs of the fused pass and of the whole-trial write, the latter with its ceiling
//! (Python's writer against a bare write of the same files, in the same runs).
use super::measure::{python_seconds, read_criterion, PYTHON_REPEAT};
use super::trials::bench_env;
use crate::bench::figures::{Baseline, CRITERION_RECORDER};
use std::path::Path;

/// The figures taken as the median of three runs, because one run's ratio moves by more than
/// the goal's margin: the fused pass against read bandwidth, the whole-trial write against
/// Python smdebug's writer, and the flight recorder's cost per step (a ratio of two noisy
/// benches).
struct MedianFigure {
    /// The row of `FIGURES` in figures.rs that this replaces (same name).
    name: &'static str,
    package: &'static str,
    target: &'static str,
    /// Criterion filter: ours and, for a bench baseline, the baseline.
    filter: &'static str,
    bench: &'static str,
    baseline: Baseline,
    /// A second row from the same runs: the baseline against another bench of the filter.
    ceiling: Option<Ceiling>,
}

/// A row of how far any implementation could get on this machine: the same baseline, in
/// the same run, divided by a bench that does only the unavoidable part of the work.
struct Ceiling {
    name: &'static str,
    bench: &'static str,
    /// What the bench does, for the row's baseline column.
    what: &'static str,
}

const MEDIAN_FIGURES: &[MedianFigure] = &[
    MedianFigure {
        name: "reduce: fused pass 64 Mi f32 vs memory read bandwidth",
        package: "smdebug-reduce",
        target: "reduce",
        filter: "^reduce/(fused_f32_64Mi|read_bandwidth_f32_64Mi)$",
        bench: "reduce/fused_f32_64Mi",
        baseline: Baseline::Bench("reduce/read_bandwidth_f32_64Mi"),
        ceiling: None,
    },
    MedianFigure {
        name: "hook: write a whole trial vs Python smdebug's writer",
        package: "smdebug-hook",
        target: "hook",
        filter: "^hook/write_trial_(large|bare)$",
        bench: "hook/write_trial_large",
        baseline: Baseline::Python("hook_bench_write.py", &[]),
        // Not a figure of ours: how much faster than Python's writer any writer of these
        // files could be here, i.e. whether the goal of 20× is within this machine's reach.
        ceiling: Some(Ceiling {
            name: "hook: ceiling for the whole-trial write (Python smdebug's writer / a bare write of the same files)",
            bench: "hook/write_trial_bare",
            what: "hook/write_trial_bare (fastest sample): the same files from memory, \
                   create + write + rename, two threads, no encoding",
        }),
    },
    // Two benches of a multi-threaded candle step on a 2-core machine: two runs by hand in a
    // row, same code, gave 0.88 and 0.96.
    MedianFigure {
        name: CRITERION_RECORDER,
        package: "smdebug-candle",
        target: "overhead",
        filter: "^candle_overhead/step/hook_interval_500(_recorder_n10)?$",
        bench: "candle_overhead/step/hook_interval_500_recorder_n10",
        baseline: Baseline::Bench("candle_overhead/step/hook_interval_500"),
        ceiling: None,
    },
];

/// Runs.
const MEDIAN_RUNS: usize = 3;

/// Where both writers of the whole-trial row write (the same folder for ours and Python's):
/// a folder on the tmpfs `/dev/shm` when there is one, else `None` (the system's temporary
/// folder). On ext4 without a journal, creating a file within a minute of many deletions
/// makes the inode allocator read the inode table block of every recently deleted inode it
/// skips, and each iteration deletes the previous trial's 600 files: the cost grew during a
/// run and differed between runs (perf: most of the I/O thread's time in
/// `find_inode_bit`/`recently_deleted`), which is the disk's history, not the writers.
fn hook_bench_dir() -> Option<std::path::PathBuf> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return None;
    }
    let dir = shm.join(format!("smdebug-hook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// One run of a [`MedianFigure`].
#[derive(Clone, Copy)]
struct Run {
    /// Our fastest sample, seconds.
    ours: f64,
    /// Bytes per iteration, when the bench reports them.
    bytes: Option<f64>,
    /// The baseline's seconds.
    base: f64,
    /// The ceiling bench's fastest sample, seconds (when the figure has a ceiling).
    ceiling: Option<f64>,
}

/// One run of a [`MedianFigure`]: criterion (fastest sample) and its baseline in the same
/// run, both writing under `dir` when given.
fn one_run(
    f: &MedianFigure,
    python: &std::path::Path,
    quick: bool,
    dir: Option<&std::path::Path>,
) -> anyhow::Result<Run> {
    use anyhow::Context;
    let since = std::time::SystemTime::now();
    let mut cmd = crate::util::cargo();
    cmd.args([
        "bench", "-p", f.package, "--bench", f.target, "--", f.filter,
    ])
    .envs(bench_env(f.target, false));
    if let Some(d) = dir {
        cmd.env("SMDEBUG_HOOK_BENCH_DIR", d);
    }
    if quick {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    crate::util::run(&mut cmd)?;
    let results = read_criterion(&crate::util::root().join("target/criterion"), Some(since))?;
    let ours = results
        .get(f.bench)
        .with_context(|| format!("{} did not run", f.bench))?;
    let ceiling = match &f.ceiling {
        Some(c) => Some(
            results
                .get(c.bench)
                .with_context(|| format!("{} did not run", c.bench))?
                .seconds,
        ),
        None => None,
    };
    let base = match &f.baseline {
        Baseline::Bench(id) => {
            results
                .get(*id)
                .with_context(|| format!("{id} did not run"))?
                .seconds
        }
        Baseline::Python(script, _) => {
            let mut args = vec!["--repeat", PYTHON_REPEAT];
            if let Some(d) = dir.and_then(|d| d.to_str()) {
                args.extend(["--dir", d]);
            }
            python_seconds(python, script, &args)?
        }
        _ => anyhow::bail!("{}: no baseline to run", f.name),
    };
    Ok(Run {
        ours: ours.seconds,
        bytes: ours.bytes,
        base,
        ceiling,
    })
}

/// Replaces the rows of [`MEDIAN_FIGURES`] in `rows` by the median of [`MEDIAN_RUNS`] runs
/// (each with its baseline in the same run, the ratio's median; the row says so and keeps
/// every run's ratio under `runs`). A figure with a [`Ceiling`] adds its row after its own,
/// from the same runs.
pub(crate) fn median_rows(
    rows: &mut Vec<serde_json::Value>,
    python: &std::path::Path,
    quick: bool,
) {
    use serde_json::json;
    for f in MEDIAN_FIGURES {
        crate::util::step(&format!("{}: {MEDIAN_RUNS} runs for the median", f.name));
        let runs: Result<Vec<_>, _> = (0..MEDIAN_RUNS)
            .map(|_| {
                let dir = (f.target == "hook").then(hook_bench_dir).flatten();
                let run = one_run(f, python, quick, dir.as_deref());
                if let Some(d) = &dir {
                    // Empty by now (each side deletes its trials); the folder itself goes too.
                    let _ = std::fs::remove_dir_all(d);
                }
                run
            })
            .collect();
        let place = if f.target == "hook" && Path::new("/dev/shm").is_dir() {
            "; both write to tmpfs (/dev/shm)"
        } else {
            ""
        };
        let row = match &runs {
            Ok(runs) => {
                let (ratios, run) = median(runs, |r| r.ours);
                let (value, unit) = match run.bytes {
                    Some(b) => (b / run.ours / 1e9, "GB/s"),
                    None => (run.ours, "s"),
                };
                let baseline = match &f.baseline {
                    Baseline::Bench(id) => format!("{id}; median of {MEDIAN_RUNS} runs"),
                    Baseline::Python(script, _) => {
                        format!("python {script} (best); median of {MEDIAN_RUNS} runs{place}")
                    }
                    _ => String::new(),
                };
                json!({
                    "name": format!("{} (median of {MEDIAN_RUNS} runs)", f.name),
                    "value": value, "unit": unit, "baseline": baseline,
                    "ratio": ratios[MEDIAN_RUNS / 2],
                    "goal": crate::bench::figures::goal_of(f.name),
                    "seconds": run.ours, "baseline_seconds": run.base, "runs": ratios,
                })
            }
            Err(e) => json!({"name": f.name, "error": format!("median runs: {e:#}")}),
        };
        let at = match rows.iter().position(|r| r["name"] == f.name) {
            Some(i) => {
                rows[i] = row;
                i + 1
            }
            None => {
                eprintln!("warning: no row {} to replace", f.name);
                rows.push(row);
                rows.len()
            }
        };
        let Some(c) = &f.ceiling else {
            continue;
        };
        let row = match &runs {
            Ok(runs) => {
                let (ratios, run) = median(runs, |r| r.ceiling.unwrap_or(f64::NAN));
                let secs = run.ceiling.unwrap_or(f64::NAN);
                let (value, unit) = match run.bytes {
                    Some(b) => (b / secs / 1e9, "GB/s"),
                    None => (secs, "s"),
                };
                let script = match &f.baseline {
                    Baseline::Python(script, _) => format!("python {script} (best) / "),
                    _ => String::new(),
                };
                json!({
                    "name": c.name, "value": value, "unit": unit,
                    "baseline": format!("{script}{}; median of {MEDIAN_RUNS} runs{place}", c.what),
                    "ratio": ratios[MEDIAN_RUNS / 2], "goal": null,
                    "seconds": secs, "baseline_seconds": run.base, "runs": ratios,
                })
            }
            Err(e) => json!({"name": c.name, "error": format!("median runs: {e:#}")}),
        };
        rows.insert(at, row);
    }
}

/// The runs' ratios (baseline / `seconds` of each run), sorted, and the run with the median
/// ratio.
fn median(runs: &[Run], seconds: impl Fn(&Run) -> f64) -> (Vec<f64>, Run) {
    let mut runs = runs.to_vec();
    runs.sort_by(|a, b| (a.base / seconds(a)).total_cmp(&(b.base / seconds(b))));
    let ratios = runs.iter().map(|r| r.base / seconds(r)).collect();
    (ratios, runs[MEDIAN_RUNS / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A median row keeps the goal of the row it replaces, from whichever list that row is in
    /// (the flight recorder's row is in the second list).
    #[test]
    fn every_median_row_keeps_the_goal_of_the_row_it_replaces() {
        for f in MEDIAN_FIGURES {
            let row = crate::bench::figures::FIGURES
                .iter()
                .chain(crate::bench::figures::HEALTH_FIGURES)
                .find(|r| r.name == f.name)
                .unwrap_or_else(|| panic!("{}: no row of that name", f.name));
            assert_eq!(
                crate::bench::figures::goal_of(f.name),
                row.goal,
                "{}",
                f.name
            );
        }
    }

    fn run(ours: f64, base: f64, ceiling: f64) -> Run {
        Run {
            ours,
            bytes: Some(1e9),
            base,
            ceiling: Some(ceiling),
        }
    }

    #[test]
    fn the_median_run_is_chosen_by_its_own_ratio_for_each_row() {
        // Ratios ours: 10, 20, 5; ceiling: 40, 25, 50.
        let runs = [
            run(1.0, 10.0, 0.25),
            run(0.5, 10.0, 0.4),
            run(2.0, 10.0, 0.2),
        ];
        let (ratios, m) = median(&runs, |r| r.ours);
        assert_eq!(ratios, vec![5.0, 10.0, 20.0]);
        assert_eq!(m.ours, 1.0);
        let (ratios, m) = median(&runs, |r| r.ceiling.unwrap());
        assert_eq!(ratios, vec![25.0, 40.0, 50.0]);
        assert_eq!(m.ceiling, Some(0.25));
    }
}
