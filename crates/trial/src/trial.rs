//! The `Trial`: opening a trial, refreshing its index, and the trial-level queries.

use crate::error::{Result, TrialError};
use crate::index::collections::merge_collections;
use crate::index::names::{select, TensorFilter};
use crate::index::range;
use crate::index::refresh::{training_ended, Refresher};
use crate::index::state::{RecordLocation, State};
use crate::options::TrialOptions;
use crate::parallel;
use crate::sync::lock;
use crate::values::ahead::{ReadAhead, Shared};
use crate::values::cache::{value_cache, Admit, ValueCache};
use crate::values::fetch::fetch_values;
use crate::values::file_cache::FileCache;
use crate::values::once::{fetch_once, OnceValue};
use smdebug_config::{python_strip, Collection, CollectionManager, Mode};
use smdebug_exceptions::{AnalysisError, StepState};
use smdebug_index::{classify_key, TrialFile};
use smdebug_record::TensorValue;
use smdebug_storage::{BlockingStore, Location, Storage};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Opens the trial at `path` (a local directory, `s3://bucket/prefix`, `memory://name/prefix`,
/// …) with default options: smdebug's `create_trial(path)`.
///
/// Waits until the collections files of all workers exist (or the job ended without them:
/// `MissingCollectionFiles`), then reads the index once.
pub fn create_trial(path: &str) -> Result<Trial> {
    Trial::open(path, TrialOptions::default())
}

/// A trial being read: the tensors one training job saved, also while it is still writing.
///
/// Every query takes `&self`; the index state sits behind a mutex, so a trial can be shared
/// between threads. Queries refresh the index first (as smdebug's `maybe_refresh`) unless
/// refreshing is switched off ([`Trial::no_refresh`]) or the job has ended and everything was
/// loaded.
#[derive(Debug)]
pub struct Trial {
    name: String,
    path: String,
    store: Arc<BlockingStore>,
    options: TrialOptions,
    /// The steps loaded: `range_steps`, its start moved up by `last_steps`.
    range: (Option<i64>, Option<i64>),
    collections: Mutex<CollectionManager>,
    pub(crate) state: Mutex<State>,
    pub(crate) cache: Arc<Mutex<ValueCache>>,
    readahead: Arc<Mutex<FileCache>>,
    pub(crate) ahead: ReadAhead,
}

impl Trial {
    /// Opens the trial at `path` (see [`create_trial`]).
    ///
    /// As smdebug's `create_trial`, surrounding whitespace (Python's `str.strip()`) is removed
    /// first, and the default name is the text after the last `/` (`os.path.basename`), so
    /// `…/run_1/` is named `""`.
    pub fn open(path: &str, options: TrialOptions) -> Result<Trial> {
        let stripped = python_strip(path);
        let location = Location::parse(stripped)?;
        let storage = location.open_with(&options.storage)?;
        let name = options.name.clone().unwrap_or_else(|| {
            let basename = stripped.rsplit('/').next().unwrap_or_default();
            basename.to_owned()
        });
        Trial::from_storage(storage, stripped, name, options)
    }

    /// Opens a trial over an already opened store (its root is the trial root); `path` is
    /// only used in messages.
    pub fn from_storage(
        storage: Arc<dyn Storage>,
        path: &str,
        name: String,
        options: TrialOptions,
    ) -> Result<Trial> {
        if let Some((begin, end)) = options.range_steps {
            let bad = |m: &str| {
                Err(TrialError::InvalidArgument {
                    message: format!("range_steps {m}"),
                })
            };
            if begin.is_some_and(|b| b < 0) || end.is_some_and(|e| e < 0) {
                return bad("bounds must be >= 0");
            }
            if let (Some(b), Some(e)) = (begin, end) {
                if e <= b {
                    return bad("should be of the form (begin, end) where begin is less than end");
                }
            }
        }
        if options.last_steps == Some(0) {
            return Err(TrialError::InvalidArgument {
                message: "last_steps must be at least 1".into(),
            });
        }
        let store = Arc::new(BlockingStore::new(storage)?);
        let range = options.range_steps.unwrap_or((None, None));
        let cache = Arc::new(Mutex::new(value_cache(options.cache_bytes)));
        let readahead = Arc::new(Mutex::new(FileCache::new(
            options.readahead_bytes,
            options.open_files,
        )));
        let ahead = (options.read_ahead
            && options.cache_bytes > 0
            && store.storage().as_sync().is_some()
            && parallel::cores() >= 2)
            .then(|| Shared {
                store: Arc::clone(&store),
                cache: Arc::clone(&cache),
                files: Arc::clone(&readahead),
            });
        let probation = lock(&cache).probation_budget();
        let mut trial = Trial {
            name,
            path: path.to_owned(),
            range,
            store,
            ahead: ReadAhead::new(ahead, probation),
            cache,
            readahead,
            options,
            collections: Mutex::new(CollectionManager::new()),
            state: Mutex::new(State::new()),
        };
        // Three independent things before the index is read: the collections files, the
        // end marker and where the last steps start. On an object store each is a round trip
        // or two, so they run side by side; on local disk each is a system call or two.
        let last_steps = |trial: &Trial| match trial.options.last_steps {
            Some(n) => range::last_steps(&trial.store, n, range.1).map(Some),
            None => Ok(None),
        };
        let (last, ended) = if trial.store.storage().as_sync().is_some() {
            let last = last_steps(&trial)?;
            trial.load_collections()?;
            (last, trial.has_training_ended()?)
        } else {
            std::thread::scope(|s| -> Result<_> {
                let last = s.spawn(|| last_steps(&trial));
                let ended = s.spawn(|| trial.has_training_ended());
                let collections = trial.load_collections();
                let last = last
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                collections?;
                let ended = ended
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                Ok((last, ended))
            })?
        };
        let mut prelisted = None;
        if let Some(range::LastSteps {
            first: Some(first),
            keys,
        }) = last
        {
            trial.range.0 = Some(trial.range.0.map_or(first, |b| b.max(first)));
            prelisted = Some(keys);
        }
        let mut st = lock(&trial.state);
        trial.refresher().refresh(&mut st, prelisted)?;
        st.ended_at_open = ended;
        drop(st);
        Ok(trial)
    }

    /// The trial's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The location the trial was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The store underneath.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        self.store.storage()
    }

    /// Whether the end-of-training marker (`training_job_end.ts`) exists.
    pub fn has_training_ended(&self) -> Result<bool> {
        training_ended(&self.store)
    }

    fn load_collections(&self) -> Result<()> {
        let start = Instant::now();
        let mut pauses = self.options.poll.pauses();
        let mut wanted = 1usize;
        // The first collections file (in key order) and what it holds: it says how many
        // workers to wait for.
        let mut first: Option<(String, CollectionManager)> = None;
        loop {
            let files = self.collection_files()?;
            if first.is_none() && !files.is_empty() {
                let key = files[0].0.clone();
                let cm = self.read_collections_file(&key)?;
                let n = cm.num_workers().unwrap_or(1).max(1);
                wanted = usize::try_from(n).unwrap_or(usize::MAX);
                first = Some((key, cm));
            }
            let parsed = first.is_some();
            if let Some((first_key, cm)) = first.as_mut().filter(|_| files.len() >= wanted) {
                // Every worker's file counts, not only the first one listed: workers may
                // have saved different tensors (docs/src/semantics.md §8.2).
                let mut cm = std::mem::take(cm);
                for (key, _) in files.iter().filter(|(k, _)| k != first_key) {
                    let other = self.read_collections_file(key)?;
                    merge_collections(&mut cm, &other).map_err(|source| {
                        TrialError::Collections {
                            file: key.clone(),
                            source,
                        }
                    })?;
                }
                *lock(&self.collections) = cm;
                let mut st = lock(&self.state);
                st.num_workers = wanted;
                st.workers = files.into_iter().map(|(_, w)| w).collect();
                return Ok(());
            }
            if self.has_training_ended()? {
                // One more listing: files may have landed together with the marker.
                let files = self.collection_files()?;
                let enough = if parsed {
                    files.len() >= wanted
                } else {
                    !files.is_empty()
                };
                if !enough {
                    return Err(AnalysisError::MissingCollectionFiles.into());
                }
                continue;
            }
            if let Some(limit) = self.options.collections_timeout {
                if start.elapsed() >= limit {
                    return Err(TrialError::Timeout {
                        what: format!("the collections files of {}", self.path),
                        waited: start.elapsed(),
                    });
                }
            }
            std::thread::sleep(pauses.next().unwrap_or(self.options.poll.max));
        }
    }

    fn read_collections_file(&self, key: &str) -> Result<CollectionManager> {
        let bytes = self.store.get(key)?;
        CollectionManager::from_slice(&bytes).map_err(|source| TrialError::Collections {
            file: key.to_owned(),
            source,
        })
    }

    /// `(key, worker)` of every collections file, sorted by key.
    fn collection_files(&self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for key in self.store.list_keys("collections/", None, None)? {
            if let TrialFile::Collections { worker } = classify_key(&key)? {
                out.push((key, worker));
            }
        }
        Ok(out)
    }

    /// Reads the index files that appeared since the last refresh (smdebug's
    /// `refresh_data`): one listing that starts after the last token, then the new files,
    /// read concurrently.
    pub fn refresh_data(&self) -> Result<()> {
        let mut st = lock(&self.state);
        self.refresher().refresh(&mut st, None)
    }

    /// The refresh engine over this trial's store, steps and options.
    fn refresher(&self) -> Refresher<'_> {
        Refresher {
            store: &self.store,
            range: self.range,
            options: &self.options,
        }
    }

    /// The global steps this trial loads, `begin <= s < end` (`range_steps`, with its start
    /// moved up to the first of the `last_steps` found at open).
    pub fn step_range(&self) -> (Option<i64>, Option<i64>) {
        self.range
    }

    /// smdebug's `maybe_refresh`: refresh unless switched off or everything is loaded; when
    /// the end marker is there, refresh twice and mark everything loaded.
    pub fn maybe_refresh(&self) -> Result<()> {
        let mut st = lock(&self.state);
        self.maybe_refresh_locked(&mut st)
    }

    pub(crate) fn maybe_refresh_locked(&self, st: &mut State) -> Result<()> {
        self.refresher().maybe_refresh(st)
    }

    /// Runs `f` with automatic refreshing switched off (smdebug's `no_refresh`); refreshing
    /// is switched on again afterwards, also when `f` fails.
    pub fn no_refresh<R>(&self, f: impl FnOnce(&Trial) -> R) -> R {
        self.with_refresh_flag(false, true, f)
    }

    /// Runs `f` with automatic refreshing switched on (smdebug's `refresh`), restoring the
    /// previous setting afterwards.
    pub fn with_refresh<R>(&self, f: impl FnOnce(&Trial) -> R) -> R {
        let before = lock(&self.state).dynamic_refresh;
        self.with_refresh_flag(true, before, f)
    }

    fn with_refresh_flag<R>(&self, during: bool, after: bool, f: impl FnOnce(&Trial) -> R) -> R {
        struct Restore<'a>(&'a Trial, bool);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                lock(&self.0.state).dynamic_refresh = self.1;
            }
        }
        lock(&self.state).dynamic_refresh = during;
        let _restore = Restore(self, after);
        f(self)
    }

    /// Whether queries refresh the index automatically.
    pub fn dynamic_refresh(&self) -> bool {
        lock(&self.state).dynamic_refresh
    }

    /// Switches automatic refreshing on or off.
    pub fn set_dynamic_refresh(&self, on: bool) {
        lock(&self.state).dynamic_refresh = on;
    }

    /// Names of the tensors saved so far, sorted (`tensor_names()` without filters).
    pub fn tensor_names(&self) -> Result<Vec<String>> {
        self.tensor_names_filtered(&TensorFilter::default())
    }

    /// smdebug's `tensor_names(step=, mode=, regex=, collection=)` (docs/src/semantics.md §8.6).
    pub fn tensor_names_filtered(&self, filter: &TensorFilter) -> Result<Vec<String>> {
        let mut st = lock(&self.state);
        self.maybe_refresh_locked(&mut st)?;
        let mode = filter.mode;
        let base: Vec<String> = match filter.step {
            None if mode == Mode::Global => st.tensors.keys().map(str::to_owned).collect(),
            // Python raises KeyError for a mode never seen [PY-BUG]: no names.
            None => st
                .mode_to_tensors
                .get(&mode)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default(),
            Some(step) => {
                let global = if mode == Mode::Global {
                    step
                } else {
                    st.global_step_currently(mode, step)
                        .ok_or_else(|| TrialError::KeyError {
                            key: step.to_string(),
                            context: "mode step of tensor_names(step=, mode=)",
                        })?
                };
                st.tensors_at_step(global)
            }
        };
        select(base, filter, |c| self.collection(c))
    }

    /// Whether the trial has seen the tensor (refreshing once if not).
    pub fn has_tensor(&self, name: &str) -> Result<bool> {
        let mut st = lock(&self.state);
        if !st.tensors.contains_key(name) {
            self.maybe_refresh_locked(&mut st)?;
        }
        Ok(st.tensors.contains_key(name))
    }

    /// Sorted steps of `mode` (global steps for GLOBAL, mode steps otherwise); only complete
    /// ones unless `show_incomplete_steps`.
    pub fn steps(&self, mode: Mode, show_incomplete_steps: bool) -> Result<Vec<i64>> {
        let mut st = lock(&self.state);
        self.maybe_refresh_locked(&mut st)?;
        Ok(st.steps(mode, show_incomplete_steps))
    }

    /// The modes seen, without GLOBAL, in TRAIN, EVAL, PREDICT order (no refresh).
    pub fn modes(&self) -> Vec<Mode> {
        lock(&self.state).mode_to_global.keys().copied().collect()
    }

    /// `(mode, mode step)` of a global step, refreshing once if unknown.
    pub fn mode_modestep(&self, global_step: i64) -> Result<Option<(Mode, i64)>> {
        let mut st = lock(&self.state);
        self.mode_modestep_locked(&mut st, global_step)
    }

    pub(crate) fn mode_modestep_locked(
        &self,
        st: &mut State,
        global_step: i64,
    ) -> Result<Option<(Mode, i64)>> {
        if let Some(&x) = st.global_to_mode.get(&global_step) {
            return Ok(Some(x));
        }
        self.maybe_refresh_locked(st)?;
        Ok(st.global_to_mode.get(&global_step).copied())
    }

    /// The mode of a global step.
    pub fn mode(&self, global_step: i64) -> Result<Option<Mode>> {
        Ok(self.mode_modestep(global_step)?.map(|x| x.0))
    }

    /// The mode step of a global step.
    pub fn mode_step(&self, global_step: i64) -> Result<Option<i64>> {
        Ok(self.mode_modestep(global_step)?.map(|x| x.1))
    }

    /// The global step of a mode step (GLOBAL: the step itself), refreshing once if unknown.
    pub fn global_step(&self, mode: Mode, mode_step: i64) -> Result<Option<i64>> {
        let mut st = lock(&self.state);
        if let Some(g) = st.global_step_currently(mode, mode_step) {
            return Ok(Some(g));
        }
        self.maybe_refresh_locked(&mut st)?;
        Ok(st.global_step_currently(mode, mode_step))
    }

    /// Sorted worker names (from the collections files).
    pub fn workers(&self) -> Result<Vec<String>> {
        let mut st = lock(&self.state);
        self.maybe_refresh_locked(&mut st)?;
        Ok(st.workers.iter().cloned().collect())
    }

    /// Number of workers (`_meta.num_workers` of the first collections file).
    pub fn num_workers(&self) -> usize {
        lock(&self.state).num_workers
    }

    /// The collections as loaded, by name (no refresh): the union over every worker's
    /// collections file — a tensor belongs to a collection when any worker's file says so;
    /// a collection's other settings are those of the first file in key order. (smdebug
    /// 1.0.34 reads only the first file `os.walk` lists.)
    pub fn collections(&self) -> BTreeMap<String, Collection> {
        lock(&self.collections)
            .collections()
            .map(|c| (c.name.clone(), c.clone()))
            .collect()
    }

    /// The collection of that name; like smdebug, an unknown name creates an empty one.
    pub fn collection(&self, name: &str) -> Collection {
        lock(&self.collections).get_or_create(name).clone()
    }

    /// Whether every step up to the end was loaded (the job ended and was read after that).
    pub fn loaded_all_steps(&self) -> bool {
        lock(&self.state).loaded_all_steps
    }

    /// The greatest global step all workers wrote (or that was declared complete), −1 if none.
    pub fn last_complete_step(&self) -> i64 {
        lock(&self.state).last_complete_step
    }

    /// The key after which the next index listing starts, relative to the trial root.
    pub fn last_index_token(&self) -> Option<String> {
        lock(&self.state).last_index_token.clone()
    }

    /// Index files skipped because they could not be parsed (only with
    /// [`TrialOptions::skip_corrupt_index_files`]): `(global step, error)`.
    pub fn index_errors(&self) -> Vec<(i64, smdebug_index::IndexFileError)> {
        lock(&self.state)
            .index_errors
            .iter()
            .map(|(s, (_, e))| (*s, e.clone()))
            .collect()
    }

    /// docs/src/semantics.md §8.7 (refreshes first).
    pub fn has_passed_step(&self, step: i64, mode: Mode) -> Result<StepState> {
        let mut st = lock(&self.state);
        self.maybe_refresh_locked(&mut st)?;
        Ok(st.has_passed_step(step, mode))
    }

    /// Waits until every step in `steps` is available (smdebug's `wait_for_steps`): a skipped
    /// step is `StepUnavailable`, a step past the end of a finished job `NoMoreData`. Polls
    /// with backoff and waits without limit, as the original; see
    /// [`Trial::wait_for_steps_timeout`].
    pub fn wait_for_steps(&self, steps: &[i64], mode: Mode) -> Result<()> {
        self.wait_inner(steps, mode, None)
    }

    /// [`Trial::wait_for_steps`] giving up with [`TrialError::Timeout`] after `limit`.
    pub fn wait_for_steps_timeout(&self, steps: &[i64], mode: Mode, limit: Duration) -> Result<()> {
        self.wait_inner(steps, mode, Some(limit))
    }

    fn wait_inner(&self, steps: &[i64], mode: Mode, limit: Option<Duration>) -> Result<()> {
        let start = Instant::now();
        self.with_refresh(|t| {
            for &step in steps {
                let mut pauses = t.options.poll.pauses();
                loop {
                    match t.has_passed_step(step, mode)? {
                        StepState::Available => break,
                        StepState::Unavailable => {
                            let st = lock(&t.state);
                            if !st.loaded_all_steps {
                                return Err(AnalysisError::StepUnavailable { step, mode }.into());
                            }
                            let last = st.all_steps(mode).last().copied().unwrap_or(-1);
                            if step < last {
                                return Err(AnalysisError::StepUnavailable { step, mode }.into());
                            }
                            return Err(AnalysisError::NoMoreData {
                                step,
                                mode,
                                last_step: last,
                            }
                            .into());
                        }
                        StepState::NotYetAvailable => {}
                    }
                    if let Some(limit) = limit {
                        if start.elapsed() >= limit {
                            return Err(TrialError::Timeout {
                                what: format!("step {step} of mode {mode}"),
                                waited: start.elapsed(),
                            });
                        }
                    }
                    std::thread::sleep(pauses.next().unwrap_or(t.options.poll.max));
                }
            }
            Ok(())
        })
    }

    /// Reads many records at once (grouped per event file, files read concurrently) and
    /// caches them; used by the bulk queries.
    pub(crate) fn fetch(&self, locs: &[&RecordLocation]) -> Vec<Result<Arc<TensorValue>>> {
        fetch_values(
            &self.store,
            &self.cache,
            &self.readahead,
            locs,
            Admit::Policy,
        )
    }

    /// [`Trial::fetch`], keeping what it reads in the main part of the value cache (not on
    /// probation): for `prefetch`, whose caller asked for the values to be kept.
    pub(crate) fn fetch_to_keep(&self, locs: &[&RecordLocation]) -> Vec<Result<Arc<TensorValue>>> {
        fetch_values(&self.store, &self.cache, &self.readahead, locs, Admit::Main)
    }

    /// One record for a reader that reads it once ([`Tensor::value_once`]).
    pub(crate) fn fetch_once(&self, loc: &RecordLocation) -> Result<OnceValue> {
        fetch_once(&self.store, &self.cache, &self.readahead, loc)
    }

    /// Drops every cached value and every events file read ahead (values already handed
    /// out stay valid). For readers that go through a trial once, tensor by tensor, and want
    /// memory back between tensors.
    pub fn clear_cache(&self) {
        self.clear_values();
        lock(&self.readahead).clear();
    }

    /// Drops every cached value but keeps the events files read ahead.
    pub fn clear_values(&self) {
        lock(&self.cache).clear();
    }

    /// Loads every raw value and saved reduction of every tensor into the cache (bounded by
    /// [`TrialOptions::cache_bytes`]) and returns how many records were read; the first
    /// error stops nothing, it is returned after the rest was read.
    pub fn prefetch_all(&self) -> Result<usize> {
        let locs: Vec<RecordLocation> = {
            let st = lock(&self.state);
            st.tensors
                .iter()
                .flat_map(|(name, t)| t.modes.values().map(move |m| (name, m)))
                .flat_map(|(name, m)| m.values().map(move |ws| (name, ws)))
                .flat_map(|(name, ws)| ws.iter().map(move |(_, d)| (name, d)))
                .flat_map(|(name, d)| st.entry_locations(name, d))
                .collect()
        };
        let refs: Vec<&RecordLocation> = locs.iter().collect();
        let mut first_err = None;
        for r in self.fetch_to_keep(&refs) {
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(refs.len()),
        }
    }
}
