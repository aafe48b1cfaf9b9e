//! The refresh engine: finding and reading the index files that appeared since the last
//! refresh, on local disk (parsed on several threads) or on an object store (listing and
//! reading overlapped), and smdebug's `maybe_refresh` around it.

use crate::error::{Result, TrialError};
use crate::index::range;
use crate::index::state::State;
use crate::options::TrialOptions;
use crate::parallel;
use futures::stream::{self, StreamExt};
use smdebug_index::{
    classify_key, IndexFile, IndexFileError, TrialFile, END_OF_JOB_FILE, INDEX_DIR,
};
use smdebug_storage::BlockingStore;
use std::sync::Arc;

/// An index file as read: storage error, or parse result.
type ParsedIndex = smdebug_storage::Result<std::result::Result<IndexFile, IndexFileError>>;

/// An index file to read: its key, global step and worker.
type IndexFileName = (String, i64, String);

/// Whether the end-of-training marker (`training_job_end.ts`) exists in `store`.
pub(crate) fn training_ended(store: &BlockingStore) -> Result<bool> {
    Ok(store.exists(END_OF_JOB_FILE)?)
}

/// What a refresh reads through and by: the trial's store, the steps it loads and its
/// options.
pub(crate) struct Refresher<'a> {
    pub(crate) store: &'a BlockingStore,
    /// The steps loaded, `begin <= s < end`.
    pub(crate) range: (Option<i64>, Option<i64>),
    pub(crate) options: &'a TrialOptions,
}

impl Refresher<'_> {
    /// A refresh; `prelisted`: the keys of a listing made for it already (sorted, from the
    /// range's start on), which it takes instead of listing.
    pub(crate) fn refresh(&self, st: &mut State, prelisted: Option<Vec<String>>) -> Result<()> {
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
    /// `prelisted` keys (see [`Refresher::refresh`]) stand for the listing.
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
        let items = self.store.block_on(async {
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
                .collect::<Vec<Item>>()
                .await
        });
        let items = match items {
            Ok(items) => items,
            Err(e) => return (0, Some(e.into())),
        };
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
    fn read_index_files(&self, keys: &[String], mut consume: impl FnMut(ParsedIndex)) {
        let storage = Arc::clone(self.store.storage());
        let Some(sync) = storage.as_sync() else {
            // Only local disk comes here (see `refresh`); other stores read through
            // `refresh_object`.
            for k in keys {
                consume(self.store.get(k).map(|b| IndexFile::parse(k, &b)));
            }
            return;
        };
        // One thread per 16 files at most: a thread start costs about what parsing a few
        // small index files does.
        let parse = |k: &String| sync.get_sync(k).map(|b| IndexFile::parse(k, &b));
        let threads = parallel::cores().min(keys.len() / 16);
        let consume = |_: &String, parsed| {
            consume(parsed);
            Ok::<(), std::convert::Infallible>(())
        };
        let Ok(()) =
            parallel::for_each_ordered(keys, threads, 1, "smdebug-trial-index", parse, consume);
    }

    fn in_range(&self, step: i64) -> bool {
        let (begin, end) = self.range;
        begin.is_none_or(|b| step >= b) && end.is_none_or(|e| step < e)
    }

    /// smdebug's `maybe_refresh`: refresh unless switched off or everything is loaded; when
    /// the end marker is there, refresh twice and mark everything loaded.
    pub(crate) fn maybe_refresh(&self, st: &mut State) -> Result<()> {
        if st.loaded_all_steps || !st.dynamic_refresh {
            return Ok(());
        }
        if st.ended_at_open {
            // The open saw the end marker and listed after it: that listing was the first of
            // the two final refreshes, this one is the second (the marker never goes away).
            self.refresh(st, None)?;
            st.ended_at_open = false;
            st.loaded_all_steps = true;
            if let Some((&last, _)) = st.global_to_mode.iter().next_back() {
                st.last_complete_step = last;
            }
            return Ok(());
        }
        let ended = training_ended(self.store)?;
        self.refresh(st, None)?;
        if ended {
            // smdebug sleeps SMDEBUG_TRAINING_END_DELAY_REFRESH seconds before this second
            // refresh; storage here is strongly consistent, so it runs at once.
            self.refresh(st, None)?;
            st.loaded_all_steps = true;
            if let Some((&last, _)) = st.global_to_mode.iter().next_back() {
                st.last_complete_step = last;
            }
        }
        Ok(())
    }
}
