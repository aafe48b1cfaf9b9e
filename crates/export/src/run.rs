//! One export run: the plan of a trial's entries, step bucket by step bucket, read on a few
//! threads and handed in order to the table writers.

use crate::consumer::Sink;
use crate::entry::{Ctx, FirstRecords, Plan, Unit};
use crate::error::{ExportError, Result};
use crate::options::ExportOptions;
use crate::sink::{SinkSettings, TableWriter, Target};
use crate::summary::{Progress, Skipped, Summary};
use crate::table::{RowKey, Rows, StepRow, Table};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Bytes};
use smdebug_trial::parallel::for_each_ordered;
use smdebug_trial::{TensorFilter, Trial, TrialError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

/// One export of a trial to one output: what the reading threads share, what the consuming
/// thread changes, and where the export is.
pub(crate) struct Run<'t, 'b> {
    ctx: Ctx<'t>,
    sink: Sink<'b>,
    /// Entries known so far (the progress bar's length).
    pub(crate) total: u64,
    start: Instant,
    last_bucket: i64,
    threads: usize,
    index_files_seen: BTreeSet<i64>,
}

/// Entries a thread reads and reduces before handing them over: a hand-over costs about
/// as much as reading a small tensor.
const UNITS_PER_HANDOVER: usize = 32;

/// Entries between two progress reports (a report costs a redraw on a terminal).
const PROGRESS_EVERY: u64 = 256;

impl<'t, 'b> Run<'t, 'b> {
    pub(crate) fn new(
        trial: &'t Trial,
        out: Target<'b>,
        options: &ExportOptions,
    ) -> Result<Run<'t, 'b>> {
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
            partition: options.partition.clone(),
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
    pub(crate) fn check_index_files(&mut self) -> Result<()> {
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

    pub(crate) fn plan(&self) -> Result<Plan<'t>> {
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
    pub(crate) fn export_steps(
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
            "smdebug-export",
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
            "smdebug-export",
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
    pub(crate) fn sync(&mut self) -> Result<()> {
        let bucket = self.last_bucket;
        for w in self.sink.writers.values_mut() {
            w.sync(&mut self.sink.out, bucket)?;
        }
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<Summary> {
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
