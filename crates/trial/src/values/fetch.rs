//! Reading tensor records by index entry: one ranged read per record, grouped per event file
//! (close ranges coalesced and files read concurrently by the storage layer), CRC-checked,
//! decoded, and kept in a memory-bounded cache.

use crate::error::{Result, TrialError};
use crate::index::state::RecordLocation;
use crate::parallel;
use crate::sync::lock;
use crate::values::cache::{
    cache_key, cached, Admit, CacheEntry, Cached, DecodedFile, FileKey, ValueCache, WHOLE_FILE,
};
use crate::values::decode::{decode_all, decode_value};
use crate::values::file_cache::FileCache;
use crate::values::open_files::{read_open, Slot};
use futures::stream::{self, StreamExt};
use smdebug_record::TensorValue;
use smdebug_storage::{BlockingStore, Bytes};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// How many event files are read at the same time.
const FILE_CONCURRENCY: usize = 16;

/// The parts of a file read ahead, if it holds every range.
fn slice_ranges(whole: &Bytes, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
    let len = whole.len() as u64;
    ranges
        .iter()
        .map(|r| {
            (r.start <= r.end && r.end <= len)
                .then(|| whole.slice(r.start as usize..r.end as usize))
        })
        .collect()
}

/// Reads and decodes `locs` (cache first), returning one result per location in order.
pub(crate) fn fetch_values(
    store: &BlockingStore,
    cache: &Mutex<ValueCache>,
    readahead: &Mutex<FileCache>,
    locs: &[&RecordLocation],
    admit: Admit,
) -> Vec<Result<Arc<TensorValue>>> {
    let mut out: Vec<Option<Result<Arc<TensorValue>>>> = Vec::with_capacity(locs.len());
    let mut by_file: HashMap<Arc<str>, Vec<usize>> = HashMap::new();
    let cache_budget;
    {
        let cache = lock(cache);
        cache_budget = cache.budget;
        for (i, loc) in locs.iter().enumerate() {
            match cached(&cache, loc) {
                Some(v) => out.push(Some(Ok(v))),
                None => {
                    out.push(None);
                    by_file
                        .entry(Arc::clone(&loc.event_file))
                        .or_default()
                        .push(i);
                }
            }
        }
    }
    if by_file.is_empty() {
        return out.into_iter().flatten().collect();
    }
    let storage = Arc::clone(store.storage());
    let jobs: Vec<Job> = by_file
        .into_iter()
        .map(|(file, idx)| {
            let ranges = idx
                .iter()
                .map(|&i| locs[i].start..locs[i].start.saturating_add(locs[i].length))
                .collect();
            (file, idx, ranges)
        })
        .collect();
    // One result per file: its ranges as read (or the read's error), in job order.
    let reads: Vec<smdebug_storage::Result<Vec<Bytes>>> = match storage.as_sync() {
        // Local disk: read and decode on this thread and helpers, one file at a time each.
        Some(sync) => {
            let bytes: u64 = jobs
                .iter()
                .flat_map(|(_, idx, _)| idx)
                .map(|&i| locs[i].length)
                .sum();
            let threads = if bytes < PARALLEL_MIN_BYTES {
                1
            } else {
                usize::MAX
            };
            let plans = local_plans(readahead, locs, &jobs, cache_budget);
            let read = |(j, whole, slot): &LocalPlan| {
                let (file, idx, ranges) = &jobs[*j];
                let mut handle = match slot {
                    Slot::Held(h) => Some(Arc::clone(h)),
                    Slot::Reserved | Slot::Closed => None,
                };
                let mut get = |rs: &[Range<u64>]| read_open(sync, file, &mut handle, rs);
                let (all, results) = match whole {
                    Some(end) => read_whole_sync(&mut get, locs, &jobs[*j], *end),
                    None => (None, file_results(locs, idx, get(ranges))),
                };
                // A file with no place is closed now, not when the whole call ends.
                if matches!(slot, Slot::Closed) {
                    handle = None;
                }
                (all, results, handle)
            };
            let decoded = parallel::map(&plans, threads, "smdebug-trial-read", read);
            let mut results = Vec::with_capacity(locs.len());
            let mut others = Vec::new();
            let mut handles = Vec::with_capacity(plans.len());
            for ((j, _, slot), (all, r, handle)) in plans.iter().zip(decoded) {
                results.extend(r);
                handles.push((&jobs[*j].0, slot, handle));
                if let Some(all) = all.filter(|a| !a.offsets.is_empty()) {
                    others.push((Arc::clone(&jobs[*j].0), all));
                }
            }
            {
                let mut files = lock(readahead);
                for (file, slot, handle) in handles {
                    files.open.keep(file, slot, handle);
                }
            }
            let out = store_results(store, cache, locs, out, results.into_iter(), admit);
            // The file's other records, for the calls that ask for them next: the main
            // part at once, the file was asked for twice already.
            let mut cache = lock(cache);
            for (file, all) in others {
                let key = (FileKey(file), WHOLE_FILE);
                cache.insert(key, CacheEntry::File(Arc::new(all)), Admit::Main);
            }
            return out;
        }
        None => object_reads(store, readahead, locs, &jobs),
    };
    let decoded = jobs
        .iter()
        .zip(reads)
        .flat_map(|((_, idx, _), read)| file_results(locs, idx, read));
    store_results(store, cache, locs, out, decoded, admit)
}

/// The records of one events file: the file, indices into the locations, their ranges.
type Job = (Arc<str>, Vec<usize>, Vec<Range<u64>>);

/// How to read one job's events file from local disk: the job's number, whether to read
/// the file whole and up to which end, and what to do with its handle.
type LocalPlan = (usize, Option<u64>, Slot);

/// For each job (by its number), whether to read its events file whole from local disk, up
/// to which end (see [`FileCache::local_whole`]), and its open handle; a file whose decoded
/// records would take more than a quarter of the value cache is never read whole.
fn local_plans(
    readahead: &Mutex<FileCache>,
    locs: &[&RecordLocation],
    jobs: &[Job],
    cache_budget: usize,
) -> Vec<LocalPlan> {
    let mut files = lock(readahead);
    jobs.iter()
        .enumerate()
        .map(|(j, (file, idx, _))| {
            let end = idx
                .iter()
                .map(|&i| locs[i].event_file_end)
                .max()
                .unwrap_or(0);
            let whole = files.reads_whole(file, end, cache_budget).then_some(end);
            (j, whole, files.open.plan(file))
        })
        .collect()
}

/// A local events file read whole up to `end` in one read and decoded in one pass
/// ([`decode_all`]): the job's records as [`file_results`] gives them, and every record of
/// the file (to cache). A record the pass did not give as its index entry describes it is
/// decoded on its own from the same bytes, with that decode's error; a failed or short
/// whole read falls back to reading the job's ranges alone, so that its errors are theirs.
fn read_whole_sync<G>(
    get: &mut G,
    locs: &[&RecordLocation],
    (_, idx, ranges): &Job,
    end: u64,
) -> (Option<DecodedFile>, FileResults)
where
    G: FnMut(&[Range<u64>]) -> smdebug_storage::Result<Vec<Bytes>>,
{
    let whole = get(std::slice::from_ref(&(0..end)))
        .ok()
        .and_then(|mut w| w.pop())
        .filter(|w| slice_ranges(w, ranges).is_some());
    let Some(whole) = whole else {
        return (None, file_results(locs, idx, get(ranges)));
    };
    let all = decode_all(&whole);
    let asked = idx
        .iter()
        .zip(ranges)
        .map(|(&i, r)| {
            let loc = locs[i];
            let found = all.find(loc.start).filter(|c| c.serves(loc));
            let value = match found {
                Some(c) => Ok(Arc::clone(&c.value)),
                None => {
                    let bytes = whole.slice(r.start as usize..r.end as usize);
                    decode_value(loc, &bytes).map(Arc::new)
                }
            };
            (i, Some(value))
        })
        .collect();
    (Some(all), asked)
}

/// The object-store reads of `jobs` (one result per job, in order): from files read ahead
/// where possible, else concurrently, each file whole or by its ranges as [`FileCache`]
/// decides. A whole-file read that fails or comes back short falls back to the ranges.
fn object_reads(
    store: &BlockingStore,
    readahead: &Mutex<FileCache>,
    locs: &[&RecordLocation],
    jobs: &[Job],
) -> Vec<smdebug_storage::Result<Vec<Bytes>>> {
    let mut reads: Vec<Option<smdebug_storage::Result<Vec<Bytes>>>> =
        jobs.iter().map(|_| None).collect();
    let mut requests = Vec::new();
    {
        let mut files = lock(readahead);
        for (j, (file, idx, ranges)) in jobs.iter().enumerate() {
            if let Some(parts) = files.files.get(file).and_then(|w| slice_ranges(&w, ranges)) {
                reads[j] = Some(Ok(parts));
                continue;
            }
            let end = idx
                .iter()
                .map(|&i| locs[i].event_file_end)
                .max()
                .unwrap_or(0);
            let whole = files.fetch_whole(file, end).then_some(end);
            requests.push((j, Arc::clone(file), ranges.clone(), whole));
        }
    }
    let storage = Arc::clone(store.storage());
    let asked: Vec<usize> = requests.iter().map(|r| r.0).collect();
    let fetched = store.block_on(async move {
        stream::iter(requests)
            .map(|(j, file, ranges, whole)| {
                let storage = Arc::clone(&storage);
                async move {
                    if let Some(end) = whole {
                        match storage.get_range(&file, 0..end).await {
                            Ok(w) => {
                                if let Some(parts) = slice_ranges(&w, &ranges) {
                                    return (j, Some(w), Ok(parts));
                                }
                            }
                            // Retried already; asking again would only wait as long again.
                            Err(e) if !e.is_range_error() && !e.is_not_found() => {
                                return (j, None, Err(e));
                            }
                            Err(_) => {}
                        }
                    }
                    (j, None, storage.get_ranges(&file, &ranges).await)
                }
            })
            .buffered(FILE_CONCURRENCY)
            .collect::<Vec<_>>()
            .await
    });
    // Without a runtime no request ran: each fails with that.
    let fetched = fetched.unwrap_or_else(|e| {
        let fail = |j| (j, None, Err(e.duplicate()));
        asked.into_iter().map(fail).collect()
    });
    let mut files = lock(readahead);
    for (j, whole, read) in fetched {
        if let Some(w) = whole {
            files.files.insert(Arc::clone(&jobs[j].0), w);
        }
        reads[j] = Some(read);
    }
    // Every job was served from a file read ahead or by exactly one request.
    reads.into_iter().flatten().collect()
}

/// Bytes of records to read below which one thread does everything (a thread start costs
/// more). High, because on a busy machine a helper waits to be scheduled and the call waits
/// to join it, which costs more than decoding a few small records here.
const PARALLEL_MIN_BYTES: u64 = 1 << 20;

/// What [`file_results`] gives: per location (by number), its value, or `None` for a
/// retry on its own.
type FileResults = Vec<(usize, Option<Result<Arc<TensorValue>>>)>;

/// The values of one file's records (`idx` into `locs`) from the grouped read of their
/// ranges. A missing file makes each value unavailable; a range error (one range past a
/// truncated file's end fails the whole group) gives `None`, for a retry record by record,
/// so that only the damaged records fail; any other error fails every record at once.
fn file_results(
    locs: &[&RecordLocation],
    idx: &[usize],
    read: smdebug_storage::Result<Vec<Bytes>>,
) -> FileResults {
    match read {
        Ok(parts) => idx
            .iter()
            .zip(parts)
            .map(|(&i, bytes)| (i, Some(decode_value(locs[i], &bytes).map(Arc::new))))
            .collect(),
        Err(e) if e.is_not_found() => idx
            .iter()
            .map(|&i| {
                let l = locs[i];
                let err =
                    TrialError::tensor_unavailable_for_step(&l.tag, l.mode_step, l.mode, false);
                (i, Some(Err(err)))
            })
            .collect(),
        // One range past a truncated file's end fails the group: read each on its own.
        Err(e) if e.is_range_error() => idx.iter().map(|&i| (i, None)).collect(),
        // Anything else was retried with backoff already (the store's bounded retries):
        // every record of the group fails with it, at once.
        Err(e) => idx
            .iter()
            .map(|&i| (i, Some(Err(TrialError::Storage(e.duplicate())))))
            .collect(),
    }
}

/// Retries what `file_results` left open, caches the values and fills `out` in order.
fn store_results(
    store: &BlockingStore,
    cache: &Mutex<ValueCache>,
    locs: &[&RecordLocation],
    mut out: Vec<Option<Result<Arc<TensorValue>>>>,
    decoded: impl Iterator<Item = (usize, Option<Result<Arc<TensorValue>>>)>,
    admit: Admit,
) -> Vec<Result<Arc<TensorValue>>> {
    let mut cache = lock(cache);
    for (i, r) in decoded {
        let r = r.unwrap_or_else(|| single_read(store, locs[i]).map(Arc::new));
        if let Ok(v) = &r {
            let c = Cached::checked(locs[i], Arc::clone(v));
            cache.insert(cache_key(locs[i]), CacheEntry::One(c), admit);
        }
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|o| {
            o.unwrap_or_else(|| {
                Err(TrialError::InvalidArgument {
                    message: "internal: a record was not fetched".into(),
                })
            })
        })
        .collect()
}

/// Reads one record on its own.
fn single_read(store: &BlockingStore, loc: &RecordLocation) -> Result<TensorValue> {
    let range = loc.start..loc.start.saturating_add(loc.length);
    let bytes = store.get_range(&loc.event_file, range)?;
    decode_value(loc, &bytes)
}
