//! `smdebug export`: a trial as columnar tables (Parquet, Arrow IPC or CSV) for pandas,
//! polars, DuckDB and SQL engines; see `docs/src/export.md` for the tables' schemas.
//!
//! Several trials, or a prefix holding several, make one dataset in a local folder or under
//! an object-store prefix: each table Hive-partitioned by run, `OUT/TABLE/run=NAME/…` (the
//! trial's name, percent-encoded), so that Spark, DuckDB, polars and pyarrow read each table
//! as one with a `run` column; `OUT/_SUCCESS`, written last, holds a JSON summary of the runs
//! (see `docs/src/fleets.md`).
use crate::fleet::Target;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smdebug_export::{
    export_trial, follow_trial, ExportOptions, Format, Layout, Progress, StepRange, Summary, Table,
    ValuesMode,
};
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Options of `smdebug export`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory or an object-store URL (`s3://bucket/prefix`, …).
    /// Several, or a prefix holding several trials, make a fleet dataset.
    #[arg(required = true, num_args = 1.., value_name = "TRIAL")]
    trials: Vec<String>,
    /// Where the tables go: a local directory or an object-store URL.
    out: String,
    /// File format of the tables.
    #[arg(long, default_value = "parquet", value_parser = ["parquet", "arrow", "csv"])]
    format: String,
    /// Keep tensors whose name this Python regex matches (`re.search`).
    #[arg(long)]
    tensors: Option<String>,
    /// Keep tensors of this collection.
    #[arg(long)]
    collection: Option<String>,
    /// Keep steps of this mode (TRAIN, EVAL, PREDICT, GLOBAL).
    #[arg(long)]
    mode: Option<smdebug_trial::Mode>,
    /// Keep global steps A <= step < B (`A:B`, `A:`, `:B`, or one step `N`).
    #[arg(long)]
    steps: Option<StepRange>,
    /// Keep these workers (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    workers: Vec<String>,
    /// Raw values in the `values` column of `tensors`: none, small (at most 64 elements)
    /// or all.
    #[arg(long, default_value = "none", value_parser = ["none", "small", "all"])]
    values: String,
    /// Table layout: auto (one file per table when it fits, else partitioned), single or
    /// partitioned (`TABLE/step_bucket=B/part-K.EXT`).
    #[arg(long, default_value = "auto", value_parser = ["auto", "single", "partitioned"])]
    layout: String,
    /// Global steps per partition (`step_bucket = step / N`).
    #[arg(long, default_value_t = 1000)]
    bucket_steps: i64,
    /// Rows per row group (record batch).
    #[arg(long, default_value_t = 8192)]
    row_group_rows: usize,
    /// Threads reading and reducing values (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Follow a live trial: export what exists, then append the steps that complete as new
    /// partition files, until the training job ends. A fleet's trials are followed at once
    /// (each into its run's partition), the marker written once every job has ended.
    #[arg(long)]
    follow: bool,
    /// Seconds between polls with `--follow`.
    #[arg(long, default_value_t = 1.0)]
    poll: f64,
    /// Stop at the first unreadable record or index file (else it is skipped, named and
    /// counted); for a fleet, a trial that cannot be exported also fails the command (else
    /// it is named and skipped).
    #[arg(long)]
    strict: bool,
    /// Fleets: trials exported at once (default: the number of cores; with `--follow`, every
    /// trial).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

fn parse<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T> {
    s.parse::<T>().map_err(anyhow::Error::msg)
}

/// The export options the arguments describe.
pub fn options(args: &Args) -> Result<ExportOptions> {
    Ok(ExportOptions {
        format: parse::<Format>(&args.format)?,
        layout: parse::<Layout>(&args.layout)?,
        tensors: args.tensors.clone(),
        collection: args.collection.clone(),
        mode: args.mode,
        steps: args.steps.unwrap_or_default(),
        workers: args.workers.clone(),
        values: parse::<ValuesMode>(&args.values)?,
        bucket_steps: args.bucket_steps,
        row_group_rows: args.row_group_rows,
        threads: args.threads,
        strict: args.strict,
        ..ExportOptions::default()
    })
}

/// Runs the command; the summary goes to `out`, the progress bar to standard error when it
/// is a terminal.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let options = options(args)?;
    let trial = match crate::fleet::target(&args.trials)? {
        Target::One(path) => path,
        Target::Fleet(trials) => return fleet(args, &trials, options, out),
    };
    let bar = if std::io::stderr().is_terminal() && !args.json {
        ProgressBar::new(0)
    } else {
        ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{bar:30}] {pos}/{len} tensor rows  {per_sec}  {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |p: Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
    };
    let summary = if args.follow {
        let poll = Duration::from_secs_f64(args.poll.max(0.01));
        follow_trial(&trial, &args.out, &options, poll, &mut progress)
    } else {
        export_trial(&trial, &args.out, &options, &mut progress)
    }
    .with_context(|| format!("exporting {trial} to {}", args.out))?;
    bar.finish_and_clear();
    report(&summary, args.json, out)
}

/// The `--json` summary of one export.
fn summary_json(s: &Summary) -> serde_json::Value {
    let skipped = |v: &[smdebug_export::Skipped]| -> Vec<serde_json::Value> {
        v.iter()
            .map(|k| serde_json::json!({"what": k.what, "error": k.message}))
            .collect()
    };
    let tables: serde_json::Map<String, serde_json::Value> = s
        .tables
        .iter()
        .map(|(name, w)| {
            (
                name.to_string(),
                serde_json::json!({"rows": w.rows, "bytes": w.bytes, "files": w.files}),
            )
        })
        .collect();
    serde_json::json!({
        "rows": s.rows(),
        "bytes": s.bytes(),
        "seconds": s.seconds,
        "value_bytes": s.value_bytes,
        "tables": tables,
        "skipped_records": skipped(&s.skipped_records),
        "skipped_index_files": skipped(&s.skipped_index_files),
    })
}

fn report(s: &Summary, json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        writeln!(out, "{}", summary_json(s))?;
        return Ok(());
    }
    for (name, w) in &s.tables {
        writeln!(
            out,
            "{name:<10} {:>10} rows {:>12} bytes {:>4} files",
            w.rows,
            w.bytes,
            w.files.len()
        )?;
    }
    for k in s.skipped_index_files.iter().chain(&s.skipped_records) {
        writeln!(out, "skipped {}: {}", k.what, k.message)?;
    }
    writeln!(
        out,
        "{} rows, {} bytes in {:.2} s ({} skipped records, {} skipped index files)",
        s.rows(),
        s.bytes(),
        s.seconds,
        s.skipped_records.len(),
        s.skipped_index_files.len()
    )?;
    Ok(())
}

/// The name of a fleet dataset's marker, written last; its presence means the export
/// finished.
pub const SUCCESS: &str = "_SUCCESS";

/// The schema of the marker's JSON summary.
pub const FLEET_SCHEMA: &str = "smdebug-fleet-export/v1";

/// A trial's name as a Hive partition value: every byte but `A-Z a-z 0-9 . _ -` as `%XX`
/// (the escaping Spark, DuckDB, polars and pyarrow undo when they read `run=`).
pub fn partition_value(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One run of a fleet dataset, for the marker.
struct Run {
    name: String,
    location: String,
    rows: serde_json::Map<String, serde_json::Value>,
}

/// Where a fleet dataset goes.
enum Dest {
    /// A local folder: runs are staged in its `_staging/` and renamed into place.
    Local(PathBuf),
    /// An object-store prefix: runs are staged in a local temporary folder and uploaded.
    Store(BlockingStore),
}

impl Dest {
    fn open(out: &str) -> Result<Dest> {
        let location = Location::parse(out).with_context(|| format!("output {out}"))?;
        Ok(match location {
            Location::Local(root) => Dest::Local(root),
            other => {
                Dest::Store(BlockingStore::open(&other).with_context(|| format!("opening {out}"))?)
            }
        })
    }

    /// Where runs are exported before they are placed; a folder only this export uses.
    fn staging(&self) -> PathBuf {
        match self {
            Dest::Local(root) => root.join("_staging"),
            Dest::Store(_) => {
                std::env::temp_dir().join(format!("smdebug-export-staging-{}", std::process::id()))
            }
        }
    }

    /// Removes the marker: the dataset is about to change, and is not a finished export
    /// until the new marker.
    fn remove_marker(&self) -> Result<()> {
        match self {
            Dest::Local(root) => {
                std::fs::create_dir_all(root)
                    .with_context(|| format!("creating {}", root.display()))?;
                let marker = root.join(SUCCESS);
                if marker.exists() {
                    std::fs::remove_file(&marker)
                        .with_context(|| format!("removing {}", marker.display()))?;
                }
            }
            Dest::Store(store) => {
                if store.exists(SUCCESS)? {
                    store.delete(SUCCESS)?;
                }
            }
        }
        Ok(())
    }

    /// Replaces partition `part` (`TABLE/run=RUN`) with `files`: (staged file, its key below
    /// the partition).
    fn place(&self, part: &str, files: &[(PathBuf, String)]) -> Result<()> {
        match self {
            Dest::Local(root) => {
                let dest = root.join(part);
                if dest.exists() {
                    std::fs::remove_dir_all(&dest)
                        .with_context(|| format!("removing {}", dest.display()))?;
                }
                for (from, rest) in files {
                    let to = dest.join(rest);
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent)
                            .with_context(|| format!("creating {}", parent.display()))?;
                    }
                    std::fs::rename(from, &to).with_context(|| {
                        format!("moving {} to {}", from.display(), to.display())
                    })?;
                }
            }
            Dest::Store(store) => {
                let prefix = format!("{part}/");
                for key in store.list_keys(&prefix, None, None)? {
                    store.delete(&key)?;
                }
                for (from, rest) in files {
                    let data = std::fs::read(from)
                        .with_context(|| format!("reading {}", from.display()))?;
                    store.put(&format!("{prefix}{rest}"), Bytes::from(data))?;
                }
            }
        }
        Ok(())
    }

    /// Writes the marker, last.
    fn write_marker(&self, text: String) -> Result<()> {
        match self {
            Dest::Local(root) => {
                let (tmp, marker) = (root.join("_SUCCESS.tmp"), root.join(SUCCESS));
                std::fs::write(&tmp, text)
                    .and_then(|()| std::fs::rename(&tmp, &marker))
                    .with_context(|| format!("writing {}", marker.display()))
            }
            Dest::Store(store) => Ok(store.put(SUCCESS, Bytes::from(text))?),
        }
    }
}

/// Several trials into one dataset under `args.out`: each trial exported on its own into a
/// staging folder (`OUT/_staging/RUN/` for a local `OUT`), then its files moved (renamed,
/// or uploaded to an object store) to `OUT/TABLE/run=RUN/…`; with `--follow`, each trial
/// followed straight into `OUT/TABLE/run=RUN/…`. The marker last.
fn fleet(
    args: &Args,
    trials: &[smdebug_fleet::TrialRef],
    mut options: ExportOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let dest = Dest::open(&args.out)?;
    // Every run has the same partition depth, so that readers see one table.
    if options.layout == Layout::Auto {
        options.layout = Layout::Partitioned;
    }
    dest.remove_marker()?;
    let staging = dest.staging();
    let runs = Mutex::new(Vec::new());
    let failed = Mutex::new(Vec::new());
    let fleet_args = crate::fleet::FleetArgs {
        // A trial followed holds its worker until its job ends: every trial gets one.
        jobs: args.jobs.or(args.follow.then_some(trials.len())),
        strict: args.strict,
    };
    let poll = Duration::from_secs_f64(args.poll.max(0.01));
    crate::fleet::sections(trials, &fleet_args, args.json, out, |t, section| {
        let exported = if args.follow {
            follow_run(&dest, &args.out, t, &options, poll)
        } else {
            export_run(&dest, &staging, t, &options)
        };
        match exported {
            Ok(summary) => {
                let rows = summary
                    .tables
                    .iter()
                    .map(|(table, w)| (table.to_string(), w.rows.into()))
                    .collect();
                runs.lock().unwrap_or_else(|p| p.into_inner()).push(Run {
                    name: t.name.clone(),
                    location: t.location.clone(),
                    rows,
                });
                if args.json {
                    let line = crate::fleet::json_line(&t.name, summary_json(&summary));
                    writeln!(section, "{line}")?;
                } else {
                    report(&summary, false, section)?;
                }
                Ok(false)
            }
            Err(e) => {
                failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(serde_json::json!({"trial": t.name, "error": format!("{e:#}")}));
                Err(e)
            }
        }
    })?;
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    let mut runs = runs.into_inner().unwrap_or_else(|p| p.into_inner());
    runs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort_by(|a, b| a["trial"].as_str().cmp(&b["trial"].as_str()));
    let mut totals = serde_json::Map::new();
    for r in &runs {
        for (table, rows) in &r.rows {
            let total = totals.entry(table.clone()).or_insert(0u64.into());
            *total = (total.as_u64().unwrap_or(0) + rows.as_u64().unwrap_or(0)).into();
        }
    }
    let doc = serde_json::json!({
        "schema": FLEET_SCHEMA,
        "schema_version": smdebug_export::SCHEMA_VERSION,
        "format": args.format,
        "partitioning": "hive",
        "runs": runs.iter().map(|r| serde_json::json!({
            "run": r.name,
            "partition": format!("run={}", partition_value(&r.name)),
            "location": r.location,
            "rows": r.rows,
        })).collect::<Vec<_>>(),
        "skipped": failed,
        "rows": totals,
    });
    dest.write_marker(format!("{doc:#}\n"))
}

/// Follows trial `t` into `out`'s partitions `TABLE/run=RUN/…` (removing what an earlier
/// export left there first) until its job ends.
fn follow_run(
    dest: &Dest,
    out: &str,
    t: &smdebug_fleet::TrialRef,
    options: &ExportOptions,
    poll: Duration,
) -> Result<Summary> {
    let run = format!("run={}", partition_value(&t.name));
    for table in Table::ALL {
        dest.place(&format!("{}/{run}", table.name()), &[])?;
    }
    let options = ExportOptions {
        partition: Some(run),
        ..options.clone()
    };
    follow_trial(&t.location, out, &options, poll, &mut |_| {})
        .with_context(|| format!("following {}", t.location))
}

/// Exports trial `t` into `staging/RUN` and moves its files to `OUT/TABLE/run=RUN/…`
/// (a table of the single layout becomes `run=RUN/part-00000.EXT`), replacing what an
/// earlier export left for the run.
fn export_run(
    dest: &Dest,
    staging: &Path,
    t: &smdebug_fleet::TrialRef,
    options: &ExportOptions,
) -> Result<Summary> {
    let run = partition_value(&t.name);
    let stage = staging.join(&run);
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    let stage_url = stage.to_str().context("a non-UTF-8 output folder")?;
    let summary = export_trial(&t.location, stage_url, options, &mut |_| {})
        .with_context(|| format!("exporting {}", t.location))?;
    for (table, w) in &summary.tables {
        let files: Vec<(PathBuf, String)> = w
            .files
            .iter()
            .map(|key| {
                let rest = match key.strip_prefix(&format!("{table}/")) {
                    Some(rest) => rest.to_owned(),
                    None => format!("part-00000.{}", options.format.extension()),
                };
                (stage.join(key), rest)
            })
            .collect();
        dest.place(&format!("{table}/run={run}"), &files)?;
    }
    std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_are_escaped_for_hive() {
        assert_eq!(
            partition_value("job-1/debug_out.v2"),
            "job-1%2Fdebug_out.v2"
        );
        assert_eq!(partition_value("a=b c%"), "a%3Db%20c%25");
    }
}
