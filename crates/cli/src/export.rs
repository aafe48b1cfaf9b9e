//! `smdebug export`: a trial as columnar tables (Parquet, Arrow IPC or CSV) for pandas,
//! polars, DuckDB and SQL engines; see `docs/src/export.md` for the tables' schemas.
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smdebug_export::{
    export_trial, follow_trial, ExportOptions, Format, Layout, Progress, StepRange, Summary,
    ValuesMode,
};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Options of `smdebug export`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory or an object-store URL (`s3://bucket/prefix`, …).
    trial: String,
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
    /// partition files, until the training job ends.
    #[arg(long)]
    follow: bool,
    /// Seconds between polls with `--follow`.
    #[arg(long, default_value_t = 1.0)]
    poll: f64,
    /// Stop at the first unreadable record or index file (else it is skipped, named and
    /// counted).
    #[arg(long)]
    strict: bool,
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
        follow_trial(&args.trial, &args.out, &options, poll, &mut progress)
    } else {
        export_trial(&args.trial, &args.out, &options, &mut progress)
    }
    .with_context(|| format!("exporting {} to {}", args.trial, args.out))?;
    bar.finish_and_clear();
    report(&summary, args.json, out)
}

fn report(s: &Summary, json: bool, out: &mut dyn Write) -> Result<()> {
    let skipped = |v: &[smdebug_export::Skipped]| -> Vec<serde_json::Value> {
        v.iter()
            .map(|k| serde_json::json!({"what": k.what, "error": k.message}))
            .collect()
    };
    if json {
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
        let doc = serde_json::json!({
            "rows": s.rows(),
            "bytes": s.bytes(),
            "seconds": s.seconds,
            "value_bytes": s.value_bytes,
            "tables": tables,
            "skipped_records": skipped(&s.skipped_records),
            "skipped_index_files": skipped(&s.skipped_index_files),
        });
        writeln!(out, "{doc}")?;
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
