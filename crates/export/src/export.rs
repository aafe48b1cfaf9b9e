//! The export's entry points: exporting a trial once or following it while the job writes,
//! to files or as record batches.

use crate::error::{ExportError, Result};
use crate::options::{ExportOptions, Format, Layout};
use crate::run::Run;
use crate::sink::{BatchSink, Target};
use crate::summary::{Progress, Summary};
use smdebug_storage::{BlockingStore, Location};
use smdebug_trial::{Trial, TrialOptions};
use std::collections::BTreeSet;
use std::time::Duration;

/// Opens the trial at `trial_path` with settings for one pass over every value (a small
/// value cache, corrupt index files skipped and reported) and exports it to `out`.
pub fn export_trial(
    trial_path: &str,
    out: &str,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let trial = Trial::open(trial_path, ranged(trial_options(), options))?;
    export(&trial, out, options, progress)
}

/// The value cache of an export's trial. Each value is read once, but the reader decodes
/// a small events file whole on its second miss and keeps it as one cache entry
/// (smdebug-trial's whole-file read), so the next records of that file, which the step-major
/// order asks for next, cost no file access. Bounded: a few MB, whatever the trial's size.
const EXPORT_CACHE_BYTES: usize = 16 << 20;

/// The trial options [`export_trial`] and [`follow_trial`] open a trial with: a value cache
/// of a few MB (each value is read once, but the whole-file reads of small events files
/// keep a file's records there for the next entries).
pub fn trial_options() -> TrialOptions {
    TrialOptions {
        cache_bytes: EXPORT_CACHE_BYTES,
        skip_corrupt_index_files: true,
        ..TrialOptions::default()
    }
}

/// `trial` loading only the index files of the exported steps (when the range is not
/// empty: an empty one loads everything and exports nothing).
fn ranged(trial: TrialOptions, options: &ExportOptions) -> TrialOptions {
    let range = options.steps;
    let empty = matches!((range.start, range.end), (Some(a), Some(b)) if b <= a);
    let negative = range.start.is_some_and(|a| a < 0) || range.end.is_some_and(|b| b < 0);
    TrialOptions {
        range_steps: if empty || negative {
            None
        } else {
            range.to_range_steps()
        },
        ..trial
    }
}

/// Exports everything `trial` holds now to `out` (a local folder or an object-store URL).
pub fn export(
    trial: &Trial,
    out: &str,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let target = Target::Store(open_output(out)?);
    export_to(trial, target, options, progress)
}

/// Exports everything `trial` holds now as Arrow record batches, without files: each
/// table's rows are handed to `on_batch` as record batches of at most
/// [`ExportOptions::row_group_rows`] rows, the same batches the file writers encode, table
/// by table in the order they are made (a table's batches in row order). The schemas are
/// [`Table::schema`](crate::Table::schema)`(false)` (list columns as Arrow lists, whatever
/// `options.format`); `options.layout` and `options.part_bytes` do not apply. An error of
/// `on_batch` stops the export and is returned. The summary's tables count rows; they have
/// no bytes or files.
pub fn export_batches(
    trial: &Trial,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
    on_batch: &mut BatchSink<'_>,
) -> Result<Summary> {
    let options = ExportOptions {
        format: Format::Arrow,
        ..options.clone()
    };
    export_to(trial, Target::Batches(on_batch), &options, progress)
}

fn open_output(out: &str) -> Result<BlockingStore> {
    let location = Location::parse(out.trim()).map_err(|source| ExportError::Output {
        location: out.into(),
        source,
    })?;
    BlockingStore::open(&location).map_err(|source| ExportError::Output {
        location: out.into(),
        source,
    })
}

fn export_to(
    trial: &Trial,
    target: Target<'_>,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let mut run = Run::new(trial, target, options)?;
    trial.no_refresh(|_| -> Result<()> {
        run.check_index_files()?;
        let plan = run.plan()?;
        let steps: Vec<i64> = plan.all_steps().into_iter().collect();
        run.total = plan.entries(&steps);
        run.export_steps(&plan, &steps, progress)
    })?;
    run.finish()
}

/// Opens the trial at `trial_path` (waiting for it to appear) and follows it: see [`follow`].
pub fn follow_trial(
    trial_path: &str,
    out: &str,
    options: &ExportOptions,
    poll: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let trial = Trial::open(trial_path, ranged(trial_options(), options))?;
    follow(&trial, out, options, poll, progress)
}

/// Exports what `trial` holds, then, every `poll`, the steps that became complete since
/// (each round as new part files of the partitioned layout), until the training job has
/// ended and its last steps are written. Each step is exported exactly once.
pub fn follow(
    trial: &Trial,
    out: &str,
    options: &ExportOptions,
    poll: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let mut options = options.clone();
    if options.layout == Layout::Single {
        return Err(ExportError::InvalidOption(
            "following a trial appends part files: the single-file layout cannot be used".into(),
        ));
    }
    options.layout = Layout::Partitioned;
    let mut run = Run::new(trial, Target::Store(open_output(out)?), &options)?;
    let mut done: BTreeSet<i64> = BTreeSet::new();
    loop {
        let ended = trial.has_training_ended()?;
        trial.refresh_data()?;
        let round = trial.no_refresh(|_| -> Result<bool> {
            run.check_index_files()?;
            let plan = run.plan()?;
            let last = trial.last_complete_step();
            let ready: Vec<i64> = plan
                .all_steps()
                .into_iter()
                .filter(|s| !done.contains(s) && (ended || *s <= last))
                .collect();
            if ready.is_empty() {
                return Ok(false);
            }
            run.total += plan.entries(&ready);
            run.export_steps(&plan, &ready, progress)?;
            done.extend(ready);
            Ok(true)
        })?;
        if round {
            run.sync()?;
        }
        if ended {
            break;
        }
        std::thread::sleep(poll);
    }
    run.finish()
}
