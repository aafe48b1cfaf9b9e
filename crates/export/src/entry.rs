//! One `(tensor, step, worker)` entry of an export: which entries a trial has, and the rows
//! one entry yields, read and reduced on the reading threads.

use crate::options::{ExportOptions, ValuesMode, SMALL_VALUE_ELEMENTS};
use crate::stats::{scalar_f64, values_f64, Statistics};
use crate::summary::Skipped;
use crate::table::{ReductionRow, RowKey, ScalarRow, StatsSource, TensorRow};
use smdebug_config::Mode;
use smdebug_record::{decode_exact_record, decode_tensor_event};
use smdebug_storage::{BlockingStore, Bytes};
use smdebug_trial::{AnalysisError, RecordLocation, Tensor, Trial, TrialError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The tensors of a trial and which of them are exported.
pub(crate) struct Plan<'t> {
    pub(crate) names: Vec<Arc<str>>,
    /// A handle per name (made once: a handle costs a lookup and a copy of the name).
    pub(crate) tensors: Vec<Tensor<'t>>,
    /// Whether the tensor's rows are exported (else it only counts towards `steps`).
    pub(crate) selected: Vec<bool>,
    pub(crate) scalar: Vec<bool>,
    pub(crate) collections: Vec<Arc<[String]>>,
    /// Global steps of each tensor in the step range, ascending.
    pub(crate) steps: Vec<Vec<i64>>,
}

impl Plan<'_> {
    pub(crate) fn all_steps(&self) -> BTreeSet<i64> {
        self.steps.iter().flatten().copied().collect()
    }

    /// How many rows of `tensors` the selected tensors can have at `steps` (an upper bound
    /// for the progress bar: workers and modes are not known before reading).
    pub(crate) fn entries(&self, steps: &[i64]) -> u64 {
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
pub(crate) type FirstRecords = BTreeMap<(i64, Arc<str>), (Mode, i64, Option<RecordLocation>)>;

/// One `(tensor, step, worker)` entry to export.
pub(crate) struct Unit {
    pub(crate) tensor: usize,
    pub(crate) step: i64,
    pub(crate) worker: Arc<str>,
}

/// What one entry yields.
#[derive(Default)]
pub(crate) struct Outcome {
    /// The step's mode and mode step, and the first record's location (for `steps`).
    pub(crate) step_info: Option<(Mode, i64, Option<RecordLocation>)>,
    pub(crate) tensor: Option<TensorRow>,
    pub(crate) reductions: Vec<ReductionRow>,
    pub(crate) scalar: Option<ScalarRow>,
    pub(crate) skipped: Vec<Skipped>,
    /// What could not be read without losing the row (a scalar's wall time).
    pub(crate) notes: Vec<Skipped>,
    pub(crate) value_bytes: u64,
}

/// What the reading threads share.
pub(crate) struct Ctx<'t> {
    pub(crate) trial: &'t Trial,
    pub(crate) trial_name: Arc<str>,
    pub(crate) options: ExportOptions,
    /// Reads records' wall times through the trial's store.
    pub(crate) records: BlockingStore,
}

impl Ctx<'_> {
    /// The wall time of a record, read from its event file.
    pub(crate) fn wall_time(&self, loc: &RecordLocation) -> std::result::Result<f64, String> {
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
    pub(crate) fn unit(&self, plan: &Plan<'_>, u: &Unit) -> Outcome {
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
