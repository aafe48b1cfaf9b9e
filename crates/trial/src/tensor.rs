//! The `Tensor` handle: one tensor's steps, values, shapes and reductions (docs/src/semantics.md §9).

use crate::error::{Result, TrialError};
use crate::index::state::{RecordLocation, State, StepData, StoredStep, WorkerId, Workers};
use crate::sync::lock;
use crate::trial::Trial;
use crate::values::once::OnceValue;
use crate::values::reductions;
use smdebug_config::Mode;
use smdebug_exceptions::{AnalysisError, StepState};
use smdebug_record::TensorValue;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One tensor of a [`Trial`] (`trial.tensor(name)`). Cheap: a name and a reference.
#[derive(Debug, Clone)]
pub struct Tensor<'t> {
    trial: &'t Trial,
    name: String,
    /// The tensor's number in the trial's bookkeeping, looked up once when the handle is
    /// made (numbers are never reused), so that each query finds its data without
    /// searching the names.
    id: usize,
}

/// The saved reductions of one step: `(op, abs)` → value.
pub type ReductionValues = BTreeMap<(String, bool), Arc<TensorValue>>;

impl Trial {
    /// A handle on one tensor, or `TensorUnavailable` if the trial has never seen it
    /// (refreshing once first).
    pub fn tensor(&self, name: &str) -> Result<Tensor<'_>> {
        let id = match self.has_tensor(name)? {
            true => lock(&self.state).tensors.id_of(name),
            false => None,
        };
        if let Some(id) = id {
            Ok(Tensor::new(self, name, id))
        } else {
            Err(AnalysisError::TensorUnavailable {
                tensor: name.to_owned(),
            }
            .into())
        }
    }
}

impl<'t> Tensor<'t> {
    fn new(trial: &'t Trial, name: &str, id: usize) -> Self {
        Tensor {
            trial,
            name: name.to_owned(),
            id,
        }
    }

    /// The tensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The framework's original name, from the last shape record seen (None if no shape was
    /// saved).
    pub fn original_name(&self) -> Option<String> {
        lock(&self.trial.state)
            .tensors
            .by_id(self.id)
            .and_then(|t| t.original_name.clone())
    }

    /// How many raw values of this tensor the loaded index lists, in every mode: one per
    /// (step, worker) that saved one.
    pub fn value_count(&self) -> usize {
        lock(&self.trial.state)
            .tensors
            .by_id(self.id)
            .map_or(0, |t| {
                t.modes
                    .values()
                    .flat_map(|steps| steps.values())
                    .flat_map(|workers| workers.iter())
                    .filter(|(_, d)| d.location.is_some())
                    .count()
            })
    }

    /// Sorted steps of this tensor in `mode` (global steps for GLOBAL); only complete ones
    /// unless `show_incomplete_steps`.
    pub fn steps(&self, mode: Mode, show_incomplete_steps: bool) -> Result<Vec<i64>> {
        let mut st = lock(&self.trial.state);
        self.trial.maybe_refresh_locked(&mut st)?;
        Ok(self.steps_locked(&st, mode, show_incomplete_steps))
    }

    fn steps_locked(&self, st: &State, mode: Mode, show_incomplete: bool) -> Vec<i64> {
        let Some(data) = st.tensors.by_id(self.id) else {
            return Vec::new();
        };
        // (step as reported, global step, workers that wrote this tensor there)
        let mut all: Vec<(i64, i64, usize)> = Vec::new();
        for (&m, steps) in &data.modes {
            if mode != Mode::Global && m != mode {
                continue;
            }
            // The mode's step map, looked up once for all its steps.
            let to_global = st.mode_to_global.get(&m).filter(|_| m != Mode::Global);
            for (ms, workers) in steps.iter() {
                let g = to_global.and_then(|t| t.get(&ms)).copied().unwrap_or(ms);
                let reported = if mode == Mode::Global { g } else { ms };
                all.push((reported, g, workers.len()));
            }
        }
        all.sort_unstable();
        all.into_iter()
            .filter(|&(_, g, n)| {
                // Python compares a list with an int here (never equal) and, for modes, the
                // mode step with a global step [PY-BUG]; the intended test is used.
                show_incomplete
                    || n == st.num_workers
                    || st.loaded_all_steps
                    || st.last_complete_step >= g
            })
            .map(|(s, _, _)| s)
            .collect()
    }

    /// `_get_step_dict`: the (mode, mode step) this query refers to, when present.
    fn resolve(&self, st: &mut State, step: i64, mode: Mode) -> Result<Option<(Mode, i64)>> {
        let Some(data) = st.tensors.by_id(self.id) else {
            return Ok(None);
        };
        if mode == Mode::Global && data.step_dict(Mode::Global, step).is_some() {
            return Ok(Some((Mode::Global, step)));
        }
        let (m, s) = if mode == Mode::Global {
            match self.trial.mode_modestep_locked(st, step)? {
                Some(x) => x,
                None => return Ok(None),
            }
        } else {
            (mode, step)
        };
        let present = st
            .tensors
            .by_id(self.id)
            .and_then(|d| d.step_dict(m, s))
            .is_some();
        Ok(present.then_some((m, s)))
    }

    fn current<T>(
        &self,
        st: &mut State,
        step: i64,
        mode: Mode,
        worker: Option<&str>,
        take: &impl Fn(&State, &StoredStep) -> T,
    ) -> Result<Option<T>> {
        let Some((m, s)) = self.resolve(st, step, mode)? else {
            return Ok(None);
        };
        let st: &State = st;
        let Some(workers) = st.tensors.by_id(self.id).and_then(|d| d.step_dict(m, s)) else {
            return Ok(None);
        };
        let found = chosen_worker(st, workers, worker.map(|w| st.find_worker(w)));
        match (found, worker) {
            (Some((_, d)), _) => Ok(Some(take(st, d))),
            (None, Some(w)) => Err(AnalysisError::InvalidWorker {
                worker: w.to_owned(),
            }
            .into()),
            (None, None) => Ok(None),
        }
    }

    /// `_step`: the step's data, refreshing and classifying the step when it is missing.
    fn step(&self, step: i64, mode: Mode, worker: Option<&str>) -> Result<StepData> {
        self.step_with(step, mode, worker, &|st, d| st.step_data(&self.name, d))
    }

    /// [`Tensor::step`], taking only what `take` takes of the entry (a value needs its
    /// record's location, not a copy of the whole entry).
    fn step_with<T>(
        &self,
        step: i64,
        mode: Mode,
        worker: Option<&str>,
        take: &impl Fn(&State, &StoredStep) -> T,
    ) -> Result<T> {
        let mut st = lock(&self.trial.state);
        if let Some(d) = self.current(&mut st, step, mode, worker, take)? {
            return Ok(d);
        }
        self.trial.maybe_refresh_locked(&mut st)?;
        self.trial.maybe_refresh_locked(&mut st)?;
        let global = if mode == Mode::Global {
            Some(step)
        } else {
            st.global_step_currently(mode, step)
        };
        if let Some((_, e)) = global.and_then(|g| st.index_errors.get(&g)) {
            return Err(e.clone().into());
        }
        match st.has_passed_step(step, mode) {
            StepState::Available => match self.current(&mut st, step, mode, worker, take)? {
                Some(d) => Ok(d),
                None => Err(TrialError::tensor_unavailable_for_step(
                    &self.name, step, mode, false,
                )),
            },
            StepState::Unavailable => Err(AnalysisError::StepUnavailable { step, mode }.into()),
            // Python tries to raise NoMoreData here with wrong arguments and fails with
            // TypeError [PY-BUG].
            StepState::NotYetAvailable if st.loaded_all_steps => Err(AnalysisError::NoMoreData {
                step,
                mode,
                last_step: st.steps(mode, false).last().copied().unwrap_or(-1),
            }
            .into()),
            StepState::NotYetAvailable => {
                Err(AnalysisError::StepNotYetAvailable { step, mode }.into())
            }
        }
    }

    fn fetch_one(&self, loc: &RecordLocation) -> Result<Arc<TensorValue>> {
        self.trial.fetch(&[loc]).pop().unwrap_or_else(|| {
            Err(TrialError::tensor_unavailable_for_step(
                loc.tag.as_str(),
                loc.mode_step,
                loc.mode,
                false,
            ))
        })
    }

    /// The raw value at `step` (a mode step unless `mode` is GLOBAL) of `worker` (default:
    /// the alphabetically first worker that has the step).
    pub fn value(&self, step: i64, mode: Mode, worker: Option<&str>) -> Result<Arc<TensorValue>> {
        let (location, has_reductions) = self.step_with(step, mode, worker, &|st, d| {
            let location = d.location.as_ref().map(|r| st.location(r, &self.name));
            (location, d.reductions.is_some())
        })?;
        match &location {
            Some(loc) => {
                let claim = self.trial.ahead.claim(self.id, worker, loc);
                if let Some(after) = claim.next_job_after {
                    let records = self.walk_after(loc, worker, after);
                    self.trial.ahead.send(claim, records);
                }
                self.fetch_one(loc)
            }
            None => Err(TrialError::tensor_unavailable_for_step(
                &self.name,
                step,
                mode,
                has_reductions,
            )),
        }
    }

    /// The records `value` would read at the steps of `loc`'s mode after mode step `after`
    /// (for `worker`, or the alphabetically first worker of each step), as many as a
    /// read-ahead job takes: for the trial's read-ahead thread.
    fn walk_after(
        &self,
        loc: &RecordLocation,
        worker: Option<&str>,
        after: i64,
    ) -> Vec<RecordLocation> {
        let n = self.trial.ahead.job_records(loc.length);
        let st = lock(&self.trial.state);
        let Some(steps) = st
            .tensors
            .by_id(self.id)
            .and_then(|d| d.modes.get(&loc.mode))
        else {
            return Vec::new();
        };
        let wanted = worker.map(|w| st.find_worker(w));
        steps
            .after(after)
            .filter_map(|(_, workers)| {
                let (_, d) = chosen_worker(&st, workers, wanted)?;
                d.location.as_ref().map(|r| st.location(r, &self.name))
            })
            .take(n)
            .collect()
    }

    /// The raw value at `step` as [`value`](Self::value) finds it, for a reader that reads
    /// each value once and wants a summary of it (statistics, the dtype and shape): a record
    /// the trial has not cached is read on its own and its elements left as the record holds
    /// them ([`OnceValue::Encoded`]: no array allocated, no element copied), and it is not
    /// put into the value cache. Cached values, and the small events files the trial reads
    /// whole, come decoded ([`OnceValue::Decoded`]). The same checks and errors as `value`.
    pub fn value_once(&self, step: i64, mode: Mode, worker: Option<&str>) -> Result<OnceValue> {
        let (location, has_reductions) = self.step_with(step, mode, worker, &|st, d| {
            let location = d.location.as_ref().map(|r| st.location(r, &self.name));
            (location, d.reductions.is_some())
        })?;
        match &location {
            Some(loc) => self.trial.fetch_once(loc),
            None => Err(TrialError::tensor_unavailable_for_step(
                &self.name,
                step,
                mode,
                has_reductions,
            )),
        }
    }

    /// The saved shape, else the shape of the value; `ShapeUnavailableForStep` when there
    /// is neither.
    pub fn shape(&self, step: i64, mode: Mode, worker: Option<&str>) -> Result<Vec<u64>> {
        let d = self.step(step, mode, worker)?;
        if let Some(shape) = d.shape {
            return Ok(shape);
        }
        match self.value(step, mode, worker) {
            Ok(v) => Ok(v.shape().iter().map(|&x| x as u64).collect()),
            Err(TrialError::Analysis(AnalysisError::TensorUnavailableForStep { .. })) => {
                Err(AnalysisError::ShapeUnavailableForStep {
                    tensor: self.name.clone(),
                    step,
                    mode,
                }
                .into())
            }
            Err(e) => Err(e),
        }
    }

    /// The reduction `op` (`min max mean std variance sum prod l1 l2`, of absolute values
    /// if `abs`): the saved one if there is one, else computed from the raw value with
    /// numpy's semantics.
    pub fn reduction_value(
        &self,
        step: i64,
        op: &str,
        mode: Mode,
        worker: Option<&str>,
        abs: bool,
    ) -> Result<Arc<TensorValue>> {
        let d = self.step(step, mode, worker)?;
        if let Some(Some(loc)) = d.reductions.get(&(op.to_owned(), abs)) {
            return self.fetch_one(loc);
        }
        let Some(loc) = &d.location else {
            return Err(TrialError::tensor_unavailable_for_step(
                op, step, mode, false,
            ));
        };
        let value = self.fetch_one(loc)?;
        reductions::compute(&self.name, &value, op, abs).map(Arc::new)
    }

    /// The saved reductions of a step (never computed ones).
    pub fn reduction_values(
        &self,
        step: i64,
        mode: Mode,
        worker: Option<&str>,
    ) -> Result<ReductionValues> {
        let d = self.step(step, mode, worker)?;
        let saved: Vec<&RecordLocation> = d.reductions.values().flatten().collect();
        // Read them together: one grouped request for the step's event file.
        let _ = self.trial.fetch(&saved);
        let mut out = BTreeMap::new();
        for (op, abs) in d.reductions.keys() {
            let v = self.reduction_value(step, op, mode, worker, *abs)?;
            out.insert((op.clone(), *abs), v);
        }
        Ok(out)
    }

    /// `{step: value}` over the complete steps of `mode`, read together.
    pub fn values(
        &self,
        mode: Mode,
        worker: Option<&str>,
    ) -> Result<BTreeMap<i64, Arc<TensorValue>>> {
        let steps = self.steps(mode, false)?;
        let mut locs = Vec::with_capacity(steps.len());
        for &s in &steps {
            let d = self.step(s, mode, worker)?;
            match d.location {
                Some(loc) => locs.push(loc),
                None => {
                    return Err(TrialError::tensor_unavailable_for_step(
                        &self.name,
                        s,
                        mode,
                        !d.reductions.is_empty(),
                    ))
                }
            }
        }
        let refs: Vec<&RecordLocation> = locs.iter().collect();
        let mut out = BTreeMap::new();
        for (s, v) in steps.into_iter().zip(self.trial.fetch(&refs)) {
            out.insert(s, v?);
        }
        Ok(out)
    }

    /// Where the records one worker saved of this tensor at `step` are, as the index files
    /// say: the raw value's first (when one was saved), then each saved reduction's in
    /// `(op, abs)` order. For readers that need more of a record than its value (its wall
    /// time, its size); errors as [`Tensor::value`] when the step is missing.
    pub fn step_record_locations(
        &self,
        step: i64,
        mode: Mode,
        worker: Option<&str>,
    ) -> Result<Vec<RecordLocation>> {
        let d = self.step(step, mode, worker)?;
        Ok(d.location
            .into_iter()
            .chain(d.reductions.into_values().flatten())
            .collect())
    }

    /// Workers that saved this tensor at the step, in the order they were first seen;
    /// `TensorUnavailableForStep` when none did.
    pub fn workers(&self, step: i64, mode: Mode) -> Result<Vec<String>> {
        let mut st = lock(&self.trial.state);
        let Some((m, s)) = self.resolve(&mut st, step, mode)? else {
            return Err(TrialError::tensor_unavailable_for_step(
                &self.name, step, mode, false,
            ));
        };
        Ok(st
            .tensors
            .by_id(self.id)
            .and_then(|d| d.step_dict(m, s))
            .map(|ws| {
                ws.iter()
                    .map(|(w, _)| st.worker_name(*w).to_owned())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The complete steps up to and including `step`, the last `n` of them (all when `n`
    /// is `None` or 0).
    pub fn prev_steps(&self, step: i64, n: Option<usize>, mode: Mode) -> Result<Vec<i64>> {
        let steps = self.steps(mode, false)?;
        let end = steps.partition_point(|&s| s <= step);
        let prev = &steps[..end];
        Ok(match n {
            Some(n) if n > 0 => prev[prev.len().saturating_sub(n)..].to_vec(),
            _ => prev.to_vec(),
        })
    }

    /// Locations of every record this tensor has (raw values and saved reductions).
    pub(crate) fn record_locations(&self) -> Vec<RecordLocation> {
        let st = lock(&self.trial.state);
        st.tensors
            .by_id(self.id)
            .map(|t| {
                t.modes
                    .values()
                    .flat_map(|m| m.values())
                    .flat_map(|ws| ws.iter())
                    .flat_map(|(_, d)| st.entry_locations(&self.name, d))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Reads every record of this tensor into the trial's cache in one grouped pass.
    pub fn prefetch(&self) {
        let locs = self.record_locations();
        let refs: Vec<&RecordLocation> = locs.iter().collect();
        let _ = self.trial.fetch_to_keep(&refs);
    }
}

/// The entry of the worker a query names (`wanted`: `Some` of its id, `Some(None)` when the
/// trial has no such worker), or of the alphabetically first worker when it names none.
fn chosen_worker<'a>(
    st: &State,
    workers: &'a Workers,
    wanted: Option<Option<WorkerId>>,
) -> Option<&'a (WorkerId, StoredStep)> {
    match wanted {
        Some(id) => workers.iter().find(|(x, _)| Some(*x) == id),
        None => workers
            .iter()
            .min_by(|a, b| st.worker_name(a.0).cmp(st.worker_name(b.0))),
    }
}

/// Reading ahead ([`crate::values::ahead`]) as `value` calls walking a tensor start it.
#[cfg(test)]
mod read_ahead_tests {
    use crate::options::TrialOptions;
    use crate::parallel;
    use crate::sync::lock;
    use crate::trial::Trial;
    use smdebug_config::Mode;
    use smdebug_record::TensorValue;
    use smdebug_storage::{BlockingStore, Location};
    use std::time::{Duration, Instant};

    /// 20 steps of one 57.6 KB tensor: records read one by one.
    fn trial(dir: &std::path::Path, read_ahead: bool) -> Trial {
        let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
        smdebug_synth::steps::write_train_trial(&store, 20, |step| {
            let v = ndarray::ArrayD::from_elem(ndarray::IxDyn(&[120, 120]), step as f32);
            vec![("w", TensorValue::Float32(v))]
        })
        .unwrap();
        let options = TrialOptions {
            read_ahead,
            ..TrialOptions::default()
        };
        Trial::open(dir.to_str().unwrap(), options).unwrap()
    }

    /// Values cached, counted in records of this trial's size.
    fn cached_records(t: &Trial) -> usize {
        lock(&t.cache).held() / (120 * 120 * 4)
    }

    #[test]
    fn two_calls_forward_start_the_thread_on_the_next_records() {
        let dir = tempfile::tempdir().unwrap();
        let t = trial(dir.path(), true);
        let w = t.tensor("w").unwrap();
        for s in 0..2 {
            assert_eq!(w.value(s, Mode::Global, None).unwrap().len(), 120 * 120);
        }
        if parallel::cores() < 2 {
            // One core: no thread, nothing read but what was asked for.
            assert!(!t.ahead.is_on());
            assert_eq!(cached_records(&t), 2);
            return;
        }
        // The thread reads two of every three of the next records into the cache.
        let start = Instant::now();
        while cached_records(&t) < 4 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(cached_records(&t) >= 4, "{} cached", cached_records(&t));
        // Walking elsewhere (backwards is not a walk) starts nothing more.
        let before = cached_records(&t);
        assert_eq!(w.value(1, Mode::Global, None).unwrap().len(), 120 * 120);
        std::thread::sleep(Duration::from_millis(50));
        assert!(cached_records(&t) <= before + 1);
    }

    #[test]
    fn switched_off_only_what_was_asked_for_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let t = trial(dir.path(), false);
        let w = t.tensor("w").unwrap();
        for s in 0..5 {
            w.value(s, Mode::Global, None).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.ahead.is_on());
        assert_eq!(cached_records(&t), 5);
    }
}
