//! The `Trial`: opening a trial, refreshing its index, and the trial-level queries.

use crate::ahead::{ReadAhead, Shared};
use crate::collections::merge_collections;
use crate::fetch::{fetch_values, lock, value_cache, Admit, FileCache, ValueCache};
use crate::once::{fetch_once, OnceValue};
use crate::parallel;
use crate::range;
use crate::state::{RecordLocation, State};
use crate::tensor::Tensor;
use crate::{Result, TensorValue, TrialError};
use futures::stream::{self, StreamExt};
use smdebug_config::{python_strip, Collection, CollectionManager, Mode, PyRegex};
use smdebug_exceptions::{AnalysisError, StepState};
use smdebug_index::{
    classify_key, IndexFile, IndexFileError, TrialFile, END_OF_JOB_FILE, INDEX_DIR,
};

/// An index file as read: storage error, or parse result.
type ParsedIndex = smdebug_storage::Result<std::result::Result<IndexFile, IndexFileError>>;

/// An index file to read: its key, global step and worker.
type IndexFileName = (String, i64, String);
use smdebug_storage::{BlockingStore, Location, Storage, StorageOptions};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a trial waits for files that are not there yet: exponential backoff between polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollPolicy {
    /// First pause.
    pub initial: Duration,
    /// Longest pause.
    pub max: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(500),
        }
    }
}

impl PollPolicy {
    fn pauses(&self) -> impl Iterator<Item = Duration> + '_ {
        std::iter::successors(Some(self.initial), move |d| {
            Some((*d * 2).min(self.max).max(Duration::from_millis(1)))
        })
    }
}

/// Settings of [`Trial::open`].
#[derive(Debug, Clone)]
pub struct TrialOptions {
    /// The trial's name (default: the last path component of the location, as smdebug).
    pub name: Option<String>,
    /// Only index files whose step `s` has `begin <= s < end` are loaded (smdebug's
    /// `range_steps`). Index keys sort by step, so the listings start at the range's first
    /// key and stop at its end: opening a range costs what the range holds, not what the
    /// trial holds.
    pub range_steps: Option<(Option<i64>, Option<i64>)>,
    /// Only the last `n` steps (of those before the end of `range_steps`, if any) that have
    /// an index file when the trial is opened, and the steps after them that appear later.
    /// Found without listing the older index folders (see `docs/src/scale.md`).
    pub last_steps: Option<usize>,
    /// Bytes of decoded values kept in memory (0 disables the cache). A value read once
    /// is kept in a probation part of 1/64 of this; only one asked for again after it
    /// left probation, an events file decoded whole, or what `prefetch` reads is kept in
    /// the rest, so that a one-pass scan does not fill the cache (see the crate README,
    /// "Caching").
    pub cache_bytes: usize,
    /// Object stores: bytes of whole events files kept in memory after reading them
    /// ahead (0 reads only the records asked for, on local disk too). An events file of at
    /// most 16 MiB is fetched whole on its second miss, or its first when it is at most
    /// 1 MiB, so that its other records cost no request; the oldest files are dropped past
    /// this budget. Local disk keeps no file bytes: a file of at most 128 KiB is read whole
    /// on its second miss and decoded at once into the value cache (`cache_bytes`).
    pub readahead_bytes: usize,
    /// `SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW` (default from the environment, else 1000).
    pub incomplete_step_window: i64,
    /// Pauses between polls while waiting for collections files or steps.
    pub poll: PollPolicy,
    /// How long to wait for the collections files; `None` waits until the job ends, as
    /// smdebug does.
    pub collections_timeout: Option<Duration>,
    /// Index files read at the same time during a refresh.
    pub index_concurrency: usize,
    /// Storage settings (retries, timeouts, range coalescing).
    pub storage: StorageOptions,
    /// What a refresh does with an index file it cannot parse. `false` (smdebug's
    /// behaviour): the refresh fails with the file's error. `true`: the file is skipped and
    /// its error kept; queries of that step then fail with it (see
    /// [`Trial::index_errors`]), and every other step stays readable.
    pub skip_corrupt_index_files: bool,
    /// Local disk: how many events files the trial keeps open between reads, so that a
    /// record read costs one positional read rather than an open, a read and a close
    /// (0 keeps none). Default: an eighth of the process's limit of open files, between 32
    /// and 1024 (on Linux from `/proc/self/limits`, else 128). All trials of a process
    /// together keep at most a quarter of that limit open.
    pub open_files: usize,
    /// Local disk, two cores or more: when `value` calls walk one tensor's steps forward,
    /// a background thread reads and decodes the next records into the value cache while
    /// the caller works on the current one (see the crate README, "Reading ahead").
    /// Default: on.
    pub read_ahead: bool,
}

impl Default for TrialOptions {
    fn default() -> Self {
        TrialOptions {
            name: None,
            range_steps: None,
            last_steps: None,
            cache_bytes: 256 << 20,
            readahead_bytes: 64 << 20,
            incomplete_step_window: std::env::var("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(1000),
            poll: PollPolicy::default(),
            collections_timeout: None,
            index_concurrency: 32,
            storage: StorageOptions::default(),
            skip_corrupt_index_files: false,
            open_files: crate::fetch::default_open_files(),
            read_ahead: true,
        }
    }
}

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
        // or two, so they run side by side; on local disk each takes microseconds.
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
        trial.refresh_with(&mut st, prelisted)?;
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
        Ok(self.store.exists(END_OF_JOB_FILE)?)
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
        self.refresh_locked(&mut st)
    }

    fn refresh_locked(&self, st: &mut State) -> Result<()> {
        self.refresh_with(st, None)
    }

    /// A refresh; `prelisted`: the keys of a listing made for it already (sorted, from the
    /// range's start on), which it takes instead of listing.
    fn refresh_with(&self, st: &mut State, prelisted: Option<Vec<String>>) -> Result<()> {
        let prefix = format!("{INDEX_DIR}/");
        // Start after the token or the range's first key, whichever is later; stop at the
        // range's end.
        let (range_start, range_end) = range::listing_bounds(self.range);
        let start_after = match (st.last_index_token.as_deref(), range_start.as_deref()) {
            (Some(t), Some(r)) => Some(t.max(r).to_owned()),
            (t, r) => t.or(r).map(str::to_owned),
        };
        let start_after = start_after.as_deref();
        let (listed, failed) = if self.store.storage().as_sync().is_some() {
            let listed = match prelisted {
                Some(keys) => keys,
                None => self
                    .store
                    .list_keys(&prefix, start_after, range_end.as_deref())?,
            };
            self.refresh_local(st, listed)?
        } else {
            self.refresh_object(st, &prefix, start_after, range_end.as_deref(), prelisted)
        };
        if let Some(e) = failed {
            return Err(e);
        }
        // smdebug moves the token only through `_update_last_index_token` (to the last
        // complete step, or half a window ahead); a listing merely triggers the update.
        if listed > 0 || st.last_index_token.is_some() {
            st.update_last_index_token(self.options.incomplete_step_window);
            st.forget_read_before_token();
        }
        Ok(())
    }

    /// One refresh on local disk, given its listing (names only: no `stat` per file): the
    /// new index files parsed on several threads and registered in key order while the next
    /// ones are parsed. Returns how many objects were listed and the first error of a file.
    fn refresh_local(
        &self,
        st: &mut State,
        listed: Vec<String>,
    ) -> Result<(usize, Option<TrialError>)> {
        let count = listed.len();
        // The keys move out of the listing, the rest of each name is parsed once: a large
        // trial's listing is not held twice.
        let mut keys = Vec::new();
        let mut names = Vec::new();
        for key in listed {
            let TrialFile::Index(name) = classify_key(&key)? else {
                continue;
            };
            if st.has_read(&key) || !self.in_range(name.step) {
                continue;
            }
            names.push((name.step, name.worker().into_owned()));
            keys.push(key);
        }
        let mut next = keys.iter().zip(names);
        let mut failed = None;
        self.read_index_files(&keys, |parsed| {
            let Some((key, (step, worker))) = next.next() else {
                return;
            };
            if failed.is_none() {
                failed = self.register_parsed(st, key, step, &worker, parsed).err();
            }
        });
        Ok((count, failed))
    }

    /// One refresh on an object store: the listing runs a page ahead
    /// ([`Storage::list_pages`](smdebug_storage::Storage::list_pages)) and the GETs of a
    /// page's index files start as soon as the page arrives, at most
    /// [`TrialOptions::index_concurrency`] at a time; files are registered in key order.
    /// Returns how many objects were listed and the first error (of the listing or of a file;
    /// the files before it stay registered, the ones after it are read again next time).
    /// `prelisted` keys (see [`Trial::refresh_with`]) stand for the listing.
    fn refresh_object(
        &self,
        st: &mut State,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
        prelisted: Option<Vec<String>>,
    ) -> (usize, Option<TrialError>) {
        type Item = Result<(IndexFileName, ParsedIndex)>;
        let storage = Arc::clone(self.store.storage());
        let pages = match prelisted {
            Some(keys) => {
                let page = keys
                    .into_iter()
                    .map(|key| smdebug_storage::ObjectMeta { key, size: 0 })
                    .collect();
                stream::iter([Ok(page)]).boxed()
            }
            None => Arc::clone(&storage).list_pages(
                prefix.to_owned(),
                start_after.map(str::to_owned),
                end.map(str::to_owned),
            ),
        };
        let listed = std::sync::atomic::AtomicUsize::new(0);
        let concurrency = self.options.index_concurrency.max(1);
        let state: &State = st;
        let items: Vec<Item> = self.store.block_on(async {
            pages
                .flat_map(|page| {
                    let page: Vec<smdebug_storage::Result<smdebug_storage::ObjectMeta>> = match page
                    {
                        Ok(objs) => objs.into_iter().map(Ok).collect(),
                        Err(e) => vec![Err(e)],
                    };
                    stream::iter(page)
                })
                .filter_map(|obj| {
                    let wanted = match obj {
                        Err(e) => Some(Err(TrialError::from(e))),
                        Ok(obj) => {
                            listed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            match classify_key(&obj.key) {
                                Err(e) => Some(Err(TrialError::from(e))),
                                Ok(TrialFile::Index(name))
                                    if !state.has_read(&obj.key) && self.in_range(name.step) =>
                                {
                                    Some(Ok((obj.key, name.step, name.worker().into_owned())))
                                }
                                Ok(_) => None,
                            }
                        }
                    };
                    futures::future::ready(wanted)
                })
                .map(|file| {
                    let storage = Arc::clone(&storage);
                    async move {
                        let file = file?;
                        let parsed = storage
                            .get(&file.0)
                            .await
                            .map(|b| IndexFile::parse(&file.0, &b));
                        Ok((file, parsed))
                    }
                })
                .buffered(concurrency)
                .collect()
                .await
        });
        let mut failed = None;
        for item in items {
            let result = item.and_then(|((key, step, worker), parsed)| {
                self.register_parsed(st, &key, step, &worker, parsed)
            });
            if let Err(e) = result {
                failed = Some(e);
                break;
            }
        }
        (listed.into_inner(), failed)
    }

    /// Registers one index file as read: `Err` when the refresh must stop with it.
    fn register_parsed(
        &self,
        st: &mut State,
        key: &str,
        step: i64,
        worker: &str,
        parsed: ParsedIndex,
    ) -> Result<()> {
        let parsed = match parsed {
            Ok(p) => p,
            // Listed, then removed before it could be read: it is not part of the trial.
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        match parsed {
            Ok(index) => st.register_index_file(key, step, worker, index),
            Err(e) if self.options.skip_corrupt_index_files => {
                st.index_errors.insert(step, (key.to_owned(), e));
            }
            Err(e) => return Err(e.into()),
        }
        st.remember_read(key);
        Ok(())
    }

    /// Reads and parses index files from local disk and hands each to `consume`, in the
    /// order given, on up to `available_parallelism` threads (parsing is most of the work of
    /// opening a large trial), registering each file while the next ones are parsed.
    fn read_index_files(&self, keys: &[String], consume: impl FnMut(ParsedIndex)) {
        let storage = Arc::clone(self.store.storage());
        let Some(sync) = storage.as_sync() else {
            // Only local disk comes here (see `refresh_locked`); other stores read through
            // `refresh_object`.
            let mut consume = consume;
            for k in keys {
                consume(self.store.get(k).map(|b| IndexFile::parse(k, &b)));
            }
            return;
        };
        // One thread per 16 files at most: a thread start costs about what parsing a few
        // small index files does.
        let parse = |k: &String| sync.get_sync(k).map(|b| IndexFile::parse(k, &b));
        parallel::for_each_ordered(keys, keys.len() / 16, "smdebug-trial-index", parse, consume);
    }

    fn in_range(&self, step: i64) -> bool {
        let (begin, end) = self.range;
        begin.is_none_or(|b| step >= b) && end.is_none_or(|e| step < e)
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
        if st.loaded_all_steps || !st.dynamic_refresh {
            return Ok(());
        }
        if st.ended_at_open {
            // The open saw the end marker and listed after it: that listing was the first of
            // the two final refreshes, this one is the second (the marker never goes away).
            self.refresh_locked(st)?;
            st.ended_at_open = false;
            st.loaded_all_steps = true;
            if let Some((&last, _)) = st.global_to_mode.iter().next_back() {
                st.last_complete_step = last;
            }
            return Ok(());
        }
        let ended = self.has_training_ended()?;
        self.refresh_locked(st)?;
        if ended {
            // smdebug sleeps SMDEBUG_TRAINING_END_DELAY_REFRESH seconds before this second
            // refresh; storage here is strongly consistent, so it runs at once.
            self.refresh_locked(st)?;
            st.loaded_all_steps = true;
            if let Some((&last, _)) = st.global_to_mode.iter().next_back() {
                st.last_complete_step = last;
            }
        }
        Ok(())
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
        let keep: Option<Vec<PyRegex>> = match (&filter.regex, &filter.collection) {
            (Some(_), Some(_)) => {
                return Err(TrialError::ValueError {
                    message: "Only one of `regex` or `collection` can be passed to this method"
                        .into(),
                })
            }
            (None, None) => return Ok(base),
            (Some(rx), None) => Some(compile(rx)?),
            (None, Some(_)) => None,
        };
        let mut out = Vec::new();
        if let Some(regexes) = keep {
            for name in base {
                if matches_any(&regexes, &name)? {
                    out.push(name);
                }
            }
        } else if let Some(coll) = &filter.collection {
            let coll = self.collection(coll);
            let regexes = compile(coll.include_regex())?;
            for name in base {
                if coll.tensor_names.contains(&name) || matches_any(&regexes, &name)? {
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

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

/// The filters of [`Trial::tensor_names_filtered`].
#[derive(Debug, Clone)]
pub struct TensorFilter {
    /// Names at this step only (a mode step unless `mode` is GLOBAL).
    pub step: Option<i64>,
    /// The mode (GLOBAL: all).
    pub mode: Mode,
    /// Keep names matched (`re.search`) by any of these Python regexes.
    pub regex: Option<Vec<String>>,
    /// Keep names in this collection (listed, or matched by its regexes).
    pub collection: Option<String>,
}

impl Default for TensorFilter {
    fn default() -> Self {
        TensorFilter {
            step: None,
            mode: Mode::Global,
            regex: None,
            collection: None,
        }
    }
}

fn compile(patterns: &[String]) -> Result<Vec<PyRegex>> {
    patterns
        .iter()
        .map(|p| {
            PyRegex::new(p).map_err(|source| TrialError::Collections {
                file: "(regex argument)".into(),
                source,
            })
        })
        .collect()
}

fn matches_any(regexes: &[PyRegex], name: &str) -> Result<bool> {
    for r in regexes {
        if r.search(name).map_err(|source| TrialError::Collections {
            file: "(regex argument)".into(),
            source,
        })? {
            return Ok(true);
        }
    }
    Ok(false)
}
