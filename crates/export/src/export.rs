//! The export itself: which rows a trial has, reading and reducing their values on a few
//! threads, step bucket by step bucket, and handing the rows to the table writers.

use smdebug_config::Mode;
use smdebug_record::{decode_exact_record, decode_tensor_event};
use smdebug_storage::{BlockingStore, Bytes, Location};
use smdebug_trial::{
    AnalysisError, RecordLocation, Tensor, TensorFilter, Trial, TrialError, TrialOptions,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::options::{ExportOptions, ValuesMode, SMALL_VALUE_ELEMENTS};
use crate::pipeline::for_each_ordered;
use crate::sink::{BatchSink, SinkSettings, TableWriter, Target, Written};
use crate::stats::{scalar_f64, values_f64, Statistics};
use crate::table::{ReductionRow, RowKey, Rows, ScalarRow, StatsSource, StepRow, Table, TensorRow};
use crate::{ExportError, Result};

/// Something the export skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// What was skipped (a tensor at a step of a worker, or an index file's step).
    pub what: String,
    /// Why (the error, which names the file and offset).
    pub message: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Per table: rows, bytes and files written.
    pub tables: BTreeMap<&'static str, Written>,
    /// Records that could not be read (their rows are missing).
    pub skipped_records: Vec<Skipped>,
    /// Index files that could not be parsed (their steps are missing).
    pub skipped_index_files: Vec<Skipped>,
    /// Bytes of raw values read and reduced.
    pub value_bytes: u64,
    /// Wall-clock seconds the export took.
    pub seconds: f64,
}

impl Summary {
    /// Rows written to all tables.
    pub fn rows(&self) -> u64 {
        self.tables.values().map(|w| w.rows).sum()
    }

    /// Bytes written to all tables.
    pub fn bytes(&self) -> u64 {
        self.tables.values().map(|w| w.bytes).sum()
    }
}

/// How far an export is: `(tensor, step, worker)` entries done out of those known so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Entries done.
    pub done: u64,
    /// Entries known (grows while `--follow` finds new steps).
    pub total: u64,
}

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
/// empty: an empty one loads everything and exports nothing, as before).
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
/// [`Table::schema`]`(false)` (list columns as Arrow lists, whatever `options.format`);
/// `options.layout` and `options.part_bytes` do not apply. An error of `on_batch` stops the
/// export and is returned. The summary's tables count rows; they have no bytes or files.
pub fn export_batches(
    trial: &Trial,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
    on_batch: &mut BatchSink<'_>,
) -> Result<Summary> {
    let options = ExportOptions {
        format: crate::Format::Arrow,
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
    if options.layout == crate::Layout::Single {
        return Err(ExportError::InvalidOption(
            "following a trial appends part files: the single-file layout cannot be used".into(),
        ));
    }
    options.layout = crate::Layout::Partitioned;
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

/// The tensors of a trial and which of them are exported.
struct Plan<'t> {
    names: Vec<Arc<str>>,
    /// A handle per name (made once: a handle costs a lookup and a copy of the name).
    tensors: Vec<Tensor<'t>>,
    /// Whether the tensor's rows are exported (else it only counts towards `steps`).
    selected: Vec<bool>,
    scalar: Vec<bool>,
    collections: Vec<Arc<[String]>>,
    /// Global steps of each tensor in the step range, ascending.
    steps: Vec<Vec<i64>>,
}

impl Plan<'_> {
    fn all_steps(&self) -> BTreeSet<i64> {
        self.steps.iter().flatten().copied().collect()
    }

    /// How many rows of `tensors` the selected tensors can have at `steps` (an upper bound
    /// for the progress bar: workers and modes are not known before reading).
    fn entries(&self, steps: &[i64]) -> u64 {
        let set: BTreeSet<i64> = steps.iter().copied().collect();
        self.steps
            .iter()
            .zip(&self.selected)
            .filter(|(_, s)| **s)
            .map(|(st, _)| st.iter().filter(|s| set.contains(s)).count() as u64)
            .sum()
    }
}

/// Per (step, worker): the step's mode and mode step, and its first record (lowest offset).
type FirstRecords = BTreeMap<(i64, Arc<str>), (Mode, i64, Option<RecordLocation>)>;

/// One `(tensor, step, worker)` entry to export.
struct Unit {
    tensor: usize,
    step: i64,
    worker: Arc<str>,
}

/// What one entry yields.
#[derive(Default)]
struct Outcome {
    /// The step's mode and mode step, and the first record's location (for `steps`).
    step_info: Option<(Mode, i64, Option<RecordLocation>)>,
    tensor: Option<TensorRow>,
    reductions: Vec<ReductionRow>,
    scalar: Option<ScalarRow>,
    skipped: Vec<Skipped>,
    /// What could not be read without losing the row (a scalar's wall time).
    notes: Vec<Skipped>,
    value_bytes: u64,
}

/// What the reading threads share.
struct Ctx<'t> {
    trial: &'t Trial,
    trial_name: Arc<str>,
    options: ExportOptions,
    /// Reads records' wall times through the trial's store.
    records: BlockingStore,
}

/// What the consuming thread alone changes: the table writers and the running totals.
struct Sink<'b> {
    strict: bool,
    out: Target<'b>,
    writers: BTreeMap<Table, TableWriter>,
    summary: Summary,
    done: u64,
    total: u64,
    /// Bytes of the `values` lists among the waiting `tensors` rows.
    waiting_values: usize,
}

struct Run<'t, 'b> {
    ctx: Ctx<'t>,
    sink: Sink<'b>,
    /// Entries known so far (the progress bar's length).
    total: u64,
    start: Instant,
    last_bucket: i64,
    threads: usize,
    index_files_seen: BTreeSet<i64>,
}

/// Entries a thread reads and reduces before handing them over: a hand-over costs about
/// as much as reading a small tensor.
const UNITS_PER_HANDOVER: usize = 32;

/// The `tensors` rows waiting with values (`--values all`) are written as a row group once
/// their values take this many bytes, so that memory stays bounded however large the values.
const ROW_GROUP_VALUE_BYTES: usize = 8 << 20;

/// Entries between two progress reports (a report costs a redraw on a terminal).
const PROGRESS_EVERY: u64 = 256;

impl<'t, 'b> Run<'t, 'b> {
    fn new(trial: &'t Trial, out: Target<'b>, options: &ExportOptions) -> Result<Run<'t, 'b>> {
        if options.bucket_steps <= 0 {
            return Err(ExportError::InvalidOption(
                "bucket_steps must be positive".into(),
            ));
        }
        let records = BlockingStore::new(trial.storage().clone()).map_err(TrialError::from)?;
        let settings = SinkSettings {
            format: options.format,
            layout: options.layout,
            row_group_rows: options.row_group_rows.max(1),
            part_bytes: options.part_bytes.max(1),
        };
        let writers = Table::ALL
            .iter()
            .map(|&t| (t, TableWriter::new(t, settings.clone(), "")))
            .collect();
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        Ok(Run {
            ctx: Ctx {
                trial,
                trial_name: trial.name().into(),
                options: options.clone(),
                records,
            },
            sink: Sink {
                strict: options.strict,
                out,
                writers,
                summary: Summary::default(),
                done: 0,
                total: 0,
                waiting_values: 0,
            },
            total: 0,
            start: Instant::now(),
            last_bucket: 0,
            threads,
            index_files_seen: BTreeSet::new(),
        })
    }

    /// Reports index files the trial skipped; fatal with `strict`.
    fn check_index_files(&mut self) -> Result<()> {
        for (step, e) in self.ctx.trial.index_errors() {
            if self.ctx.options.strict {
                return Err(ExportError::BadIndexFile {
                    step,
                    message: e.to_string(),
                });
            }
            if self.index_files_seen.insert(step) {
                self.sink.summary.skipped_index_files.push(Skipped {
                    what: format!("index file of step {step}"),
                    message: e.to_string(),
                });
            }
        }
        Ok(())
    }

    fn plan(&self) -> Result<Plan<'t>> {
        let trial = self.ctx.trial;
        let options = &self.ctx.options;
        let names = trial.tensor_names()?;
        let selected: BTreeSet<String> = if options.tensors.is_none()
            && options.collection.is_none()
        {
            names.iter().cloned().collect()
        } else {
            let mut keep: BTreeSet<String> = names.iter().cloned().collect();
            if let Some(rx) = &options.tensors {
                let f = TensorFilter {
                    regex: Some(vec![rx.clone()]),
                    ..TensorFilter::default()
                };
                let m: BTreeSet<String> = trial.tensor_names_filtered(&f)?.into_iter().collect();
                keep.retain(|n| m.contains(n));
            }
            if let Some(c) = &options.collection {
                let f = TensorFilter {
                    collection: Some(c.clone()),
                    ..TensorFilter::default()
                };
                let m: BTreeSet<String> = trial.tensor_names_filtered(&f)?.into_iter().collect();
                keep.retain(|n| m.contains(n));
            }
            keep
        };
        let mut member: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in trial.collections().keys() {
            let f = TensorFilter {
                collection: Some(c.clone()),
                ..TensorFilter::default()
            };
            for n in trial.tensor_names_filtered(&f)? {
                member.entry(n).or_default().push(c.clone());
            }
        }
        let mut plan = Plan {
            names: Vec::with_capacity(names.len()),
            tensors: Vec::with_capacity(names.len()),
            selected: Vec::with_capacity(names.len()),
            scalar: Vec::with_capacity(names.len()),
            collections: Vec::with_capacity(names.len()),
            steps: Vec::with_capacity(names.len()),
        };
        for n in names {
            let colls = member.remove(&n).unwrap_or_default();
            let scalar =
                n.starts_with("scalar/") || colls.iter().any(|c| c == "losses" || c == "scalars");
            let tensor = trial.tensor(&n)?;
            let mut steps = tensor.steps(Mode::Global, true)?;
            steps.retain(|&s| options.steps.contains(s));
            plan.selected.push(selected.contains(&n));
            plan.scalar.push(scalar);
            plan.collections.push(colls.into());
            plan.steps.push(steps);
            plan.tensors.push(tensor);
            plan.names.push(n.into());
        }
        Ok(plan)
    }

    /// Exports the rows of `steps` (ascending), bucket by bucket.
    fn export_steps(
        &mut self,
        plan: &Plan<'_>,
        steps: &[i64],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<()> {
        self.sink.total = self.total;
        let width = self.ctx.options.bucket_steps;
        let mut i = 0;
        while i < steps.len() {
            let bucket = steps[i].div_euclid(width);
            let j = i + steps[i..].partition_point(|s| s.div_euclid(width) == bucket);
            self.export_bucket(plan, &steps[i..j], bucket, progress)?;
            i = j;
        }
        Ok(())
    }

    fn export_bucket(
        &mut self,
        plan: &Plan<'_>,
        steps: &[i64],
        bucket: i64,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<()> {
        let Run {
            ctx, sink, threads, ..
        } = self;
        let (ctx, threads) = (&*ctx, *threads);
        let options = &ctx.options;
        let (lo, hi) = (steps[0], steps[steps.len() - 1]);
        // Workers of each step over all tensors (for `complete`), and the units to export.
        let mut step_workers: BTreeMap<i64, BTreeSet<Arc<str>>> = BTreeMap::new();
        let mut units = Vec::new();
        for (t, tensor) in plan.tensors.iter().enumerate() {
            let ts = &plan.steps[t];
            let from = ts.partition_point(|&s| s < lo);
            let to = ts.partition_point(|&s| s <= hi);
            for &g in &ts[from..to] {
                if steps.binary_search(&g).is_err() {
                    continue;
                }
                let seen = step_workers.entry(g).or_default();
                for w in tensor.workers(g, Mode::Global)? {
                    let w: Arc<str> = match seen.get(w.as_str()) {
                        Some(known) => known.clone(),
                        None => {
                            let w: Arc<str> = w.into();
                            seen.insert(w.clone());
                            w
                        }
                    };
                    if !options.workers.is_empty() && !options.workers.iter().any(|x| **x == *w) {
                        continue;
                    }
                    units.push(Unit {
                        tensor: t,
                        step: g,
                        worker: w,
                    });
                }
            }
        }
        // Step by step, worker by worker: the entries that follow each other are records of
        // the same events file, which a reader can then fetch together (a file read whole,
        // a grouped ranged read, an object store's read-ahead) instead of once per tensor.
        units.sort_unstable_by(|a, b| {
            (a.step, &a.worker, a.tensor).cmp(&(b.step, &b.worker, b.tensor))
        });
        // The first record of each (step, worker), for `steps`.
        let mut firsts = FirstRecords::new();
        let row_group = options.row_group_rows.max(1);
        let mut since_report = 0;
        for_each_ordered(
            &units,
            threads,
            UNITS_PER_HANDOVER,
            |u| ctx.unit(plan, u),
            |u, o| -> Result<()> {
                sink.take_outcome(u, o, &mut firsts, plan.selected[u.tensor])?;
                sink.flush_full(bucket, row_group)?;
                since_report += 1;
                if since_report >= PROGRESS_EVERY {
                    since_report = 0;
                    sink.report(progress);
                }
                Ok(())
            },
        )?;
        sink.report(progress);
        let num_workers = ctx.trial.num_workers();
        // The steps' wall times: one small read each, spread over the threads too.
        let firsts: Vec<_> = firsts.into_iter().collect();
        let mut walls = Vec::with_capacity(firsts.len());
        for_each_ordered(
            &firsts,
            threads,
            UNITS_PER_HANDOVER,
            |(_, (_, _, first))| first.as_ref().map(|loc| ctx.wall_time(loc)),
            |_, wall| -> Result<()> {
                walls.push(wall);
                Ok(())
            },
        )?;
        for (((g, w), (mode, mode_step, _)), wall) in firsts.into_iter().zip(walls) {
            let wall_time = wall.and_then(|r| match r {
                Ok(t) => Some(t),
                Err(message) => {
                    sink.summary.skipped_records.push(Skipped {
                        what: format!("first record of step {g} of worker {w}"),
                        message,
                    });
                    None
                }
            });
            let complete = step_workers.get(&g).map_or(0, BTreeSet::len) >= num_workers;
            let key = RowKey {
                trial: ctx.trial_name.clone(),
                worker: w,
                mode: mode.name(),
                mode_step,
                step: g,
            };
            if let Rows::Steps(r) = sink.writer(Table::Steps).rows() {
                r.push(StepRow {
                    key,
                    complete,
                    wall_time,
                });
            }
        }
        // A bucket's rows all go into its own files: write them before the next bucket's.
        sink.flush_all(bucket, true)?;
        self.last_bucket = bucket;
        Ok(())
    }

    /// Writes out every waiting row and closes open files (after a `--follow` round).
    fn sync(&mut self) -> Result<()> {
        let bucket = self.last_bucket;
        for w in self.sink.writers.values_mut() {
            w.sync(&mut self.sink.out, bucket)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Summary> {
        let bucket = self.last_bucket;
        let sink = &mut self.sink;
        for (t, w) in std::mem::take(&mut sink.writers) {
            let written = w.finish(&mut sink.out, bucket)?;
            sink.summary.tables.insert(t.name(), written);
        }
        // Spark's marker of a complete dataset: written last, so its presence means every
        // file above is in place.
        if let Target::Store(out) = &sink.out {
            out.put("_SUCCESS", Bytes::new())
                .map_err(|source| ExportError::Write {
                    key: "_SUCCESS".into(),
                    source,
                })?;
        }
        let mut summary = std::mem::take(&mut sink.summary);
        summary.seconds = self.start.elapsed().as_secs_f64();
        Ok(summary)
    }
}

impl Sink<'_> {
    fn writer(&mut self, t: Table) -> &mut TableWriter {
        self.writers.get_mut(&t).expect("a writer per table")
    }

    fn report(&self, progress: &mut dyn FnMut(Progress)) {
        progress(Progress {
            done: self.done,
            total: self.total.max(self.done),
        });
    }

    fn flush_all(&mut self, bucket: i64, force: bool) -> Result<()> {
        if force {
            self.waiting_values = 0;
        }
        for w in self.writers.values_mut() {
            w.flush(&mut self.out, bucket, force)?;
        }
        Ok(())
    }

    /// Writes the tables that have a row group's worth of rows waiting, and the `tensors`
    /// rows early when their values reach [`ROW_GROUP_VALUE_BYTES`].
    fn flush_full(&mut self, bucket: i64, row_group: usize) -> Result<()> {
        if self.waiting_values >= ROW_GROUP_VALUE_BYTES {
            self.waiting_values = 0;
            self.writers
                .get_mut(&Table::Tensors)
                .expect("a writer per table")
                .flush_group(&mut self.out, bucket)?;
        }
        for w in self.writers.values_mut() {
            if w.waiting() >= row_group {
                w.flush(&mut self.out, bucket, false)?;
            }
        }
        Ok(())
    }

    fn take_outcome(
        &mut self,
        u: &Unit,
        o: Outcome,
        firsts: &mut FirstRecords,
        selected: bool,
    ) -> Result<()> {
        if selected {
            self.done += 1;
        }
        if let Some(s) = o.skipped.first() {
            if self.strict {
                return Err(ExportError::BadRecord {
                    what: s.what.clone(),
                    step: u.step,
                    worker: u.worker.to_string(),
                    message: s.message.clone(),
                });
            }
        }
        self.summary.skipped_records.extend(o.skipped);
        self.summary.skipped_records.extend(o.notes);
        self.summary.value_bytes += o.value_bytes;
        if let Some((mode, ms, loc)) = o.step_info {
            let e = firsts
                .entry((u.step, u.worker.clone()))
                .or_insert((mode, ms, None));
            if let Some(loc) = loc {
                if e.2.as_ref().is_none_or(|f| loc.start < f.start) {
                    e.2 = Some(loc);
                }
            }
        }
        if let Some(r) = o.tensor {
            self.waiting_values += r.values.as_ref().map_or(0, |v| v.len() * 8);
            if let Rows::Tensors(rows) = self.writer(Table::Tensors).rows() {
                rows.push(r);
            }
        }
        if !o.reductions.is_empty() {
            if let Rows::Reductions(rows) = self.writer(Table::Reductions).rows() {
                rows.extend(o.reductions);
            }
        }
        if let Some(r) = o.scalar {
            if let Rows::Scalars(rows) = self.writer(Table::Scalars).rows() {
                rows.push(r);
            }
        }
        Ok(())
    }
}

impl Ctx<'_> {
    /// The wall time of a record, read from its event file.
    fn wall_time(&self, loc: &RecordLocation) -> std::result::Result<f64, String> {
        let bytes: Bytes = self
            .records
            .get_range(&loc.event_file, loc.start..loc.start + loc.length)
            .map_err(|e| e.to_string())?;
        let rec = decode_exact_record(&bytes, loc.start)
            .map_err(|e| format!("{}: {e}", loc.event_file))?;
        let event =
            decode_tensor_event(rec.payload).map_err(|e| format!("{}: {e}", loc.event_file))?;
        Ok(event.wall_time)
    }

    /// Everything one `(tensor, step, worker)` entry contributes to the tables.
    fn unit(&self, plan: &Plan<'_>, u: &Unit) -> Outcome {
        let mut o = Outcome::default();
        let name = &plan.names[u.tensor];
        let worker = Some(&*u.worker);
        let skip = |o: &mut Outcome, what: &str, e: &dyn std::fmt::Display| {
            o.skipped.push(Skipped {
                what: format!(
                    "{what} of tensor {name:?} at step {} of worker {}",
                    u.step, u.worker
                ),
                message: e.to_string(),
            });
        };
        let tensor = &plan.tensors[u.tensor];
        let locs = match tensor.step_record_locations(u.step, Mode::Global, worker) {
            Ok(l) => l,
            Err(e) => {
                skip(&mut o, "index entry", &e);
                return o;
            }
        };
        let (mode, mode_step) = match locs.first() {
            Some(l) => (l.mode, l.mode_step),
            None => self
                .trial
                .mode_modestep(u.step)
                .ok()
                .flatten()
                .unwrap_or((Mode::Global, u.step)),
        };
        if self.options.mode.is_some_and(|m| m != mode) {
            return o;
        }
        o.step_info = Some((
            mode,
            mode_step,
            locs.iter().min_by_key(|l| l.start).cloned(),
        ));
        if !plan.selected[u.tensor] {
            return o;
        }
        let key = RowKey {
            trial: self.trial_name.clone(),
            worker: u.worker.clone(),
            mode: mode.name(),
            mode_step,
            step: u.step,
        };
        // Read once: statistics straight from the record's bytes, nothing cached.
        let value = match tensor.value_once(u.step, Mode::Global, worker) {
            Ok(v) => Some(v),
            Err(TrialError::Analysis(AnalysisError::TensorUnavailableForStep { .. })) => None,
            Err(e) => {
                skip(&mut o, "raw value", &e);
                return o;
            }
        };
        let saved = if locs.len() > usize::from(value.is_some()) {
            match tensor.reduction_values(u.step, Mode::Global, worker) {
                Ok(r) => r,
                Err(e) => {
                    skip(&mut o, "saved reductions", &e);
                    Default::default()
                }
            }
        } else {
            Default::default()
        };
        let mut row = TensorRow {
            key: key.clone(),
            tensor: name.clone(),
            collections: plan.collections[u.tensor].clone(),
            dtype: None,
            shape: None,
            element_count: None,
            source: StatsSource::None,
            stats: Statistics::default(),
            counts: false,
            values: None,
        };
        for ((op, abs), v) in &saved {
            o.reductions.push(ReductionRow {
                key: key.clone(),
                tensor: name.clone(),
                reduction: op.clone(),
                abs: *abs,
                dtype: v.dtype().name(),
                value: scalar_f64(v),
            });
        }
        match &value {
            Some(v) => {
                o.value_bytes += (v.len() * v.dtype().item_size().unwrap_or(0)) as u64;
                row.dtype = Some(v.dtype().name());
                row.shape = Some(v.shape().iter().map(|&d| d as i64).collect());
                row.element_count = Some(v.len() as i64);
                if let Some(s) = v.finite_stats() {
                    row.stats = Statistics::from(s);
                    row.counts = true;
                    row.source = StatsSource::Value;
                }
                let keep = match self.options.values {
                    ValuesMode::None => false,
                    ValuesMode::Small => v.len() <= SMALL_VALUE_ELEMENTS,
                    ValuesMode::All => true,
                };
                // The elements, for the values column or a scalar's row.
                let wanted = keep || (plan.scalar[u.tensor] && v.len() == 1);
                let decoded = match wanted.then(|| v.value()) {
                    Some(Ok(d)) => Some(d),
                    Some(Err(e)) => {
                        skip(&mut o, "raw value", &e);
                        None
                    }
                    None => None,
                };
                if keep {
                    row.values = decoded.as_deref().and_then(values_f64);
                }
                if plan.scalar[u.tensor] {
                    if let Some(x) = decoded.as_deref().and_then(scalar_f64) {
                        // The value's record is the first of the entry's.
                        let wall_time = match locs.first().map(|l| self.wall_time(l)) {
                            Some(Ok(t)) => Some(t),
                            failed => {
                                o.notes.push(Skipped {
                                    what: format!(
                                        "wall time of {name} at step {} of worker {}",
                                        u.step, u.worker
                                    ),
                                    message: match failed {
                                        Some(Err(message)) => message,
                                        _ => "no record".to_string(),
                                    },
                                });
                                None
                            }
                        };
                        o.scalar = Some(ScalarRow {
                            key: key.clone(),
                            name: name.clone(),
                            wall_time,
                            value: x,
                        });
                    }
                }
            }
            None => {
                if let Ok(shape) = tensor.shape(u.step, Mode::Global, worker) {
                    row.element_count = Some(shape.iter().map(|&d| d as i64).product());
                    row.shape = Some(shape.into_iter().map(|d| d as i64).collect());
                }
                if !saved.is_empty() {
                    row.source = StatsSource::Reductions;
                    let get = |op: &str| {
                        saved
                            .get(&(op.to_owned(), false))
                            .and_then(|v| scalar_f64(v))
                    };
                    row.stats.min = get("min");
                    row.stats.max = get("max");
                    row.stats.mean = get("mean");
                    row.stats.std = get("std");
                    row.stats.l1 = get("l1");
                    row.stats.l2 = get("l2");
                }
            }
        }
        o.tensor = Some(row);
        o
    }
}
