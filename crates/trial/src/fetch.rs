//! Reading tensor records by index entry: one ranged read per record, grouped per event file
//! (close ranges coalesced and files read concurrently by the storage layer), CRC-checked,
//! decoded, and kept in a memory-bounded cache.

use crate::parallel;
use crate::state::RecordLocation;
use crate::{Result, TensorValue, TrialError};
use futures::stream::{self, StreamExt};
use smdebug_record::{decode_exact_record, decode_tensor_event_bytes, HEADER_LEN};
use smdebug_storage::{BlockingStore, Bytes};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// How many event files are read at the same time.
const FILE_CONCURRENCY: usize = 16;

/// Events files up to this size are fetched whole on their first miss: one request costs
/// about what transferring this much does.
const READAHEAD_SMALL_FILE: u64 = 1 << 20;

/// Events files larger than this are never fetched whole.
const READAHEAD_FILE_MAX: u64 = 16 << 20;

/// At most this many files are remembered as touched once (then the memory starts over).
const TOUCHED_LIMIT: usize = 1 << 16;

/// Entries kept until `budget` bytes are held, then evicted oldest insertion first.
#[derive(Debug)]
pub(crate) struct Bounded<K, V> {
    budget: usize,
    held: usize,
    size: fn(&V) -> usize,
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    pub fn new(budget: usize, size: fn(&V) -> usize) -> Self {
        Bounded {
            budget,
            held: 0,
            size,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.held = 0;
    }

    pub fn get<Q: std::hash::Hash + Eq + ?Sized>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.get(key).cloned()
    }

    pub fn insert(&mut self, key: K, value: V) {
        let size = (self.size)(&value);
        if size > self.budget {
            return;
        }
        if self.map.insert(key.clone(), value).is_some() {
            return;
        }
        self.order.push_back(key);
        self.held += size;
        while self.held > self.budget {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(v) = self.map.remove(&old) {
                self.held -= (self.size)(&v);
            }
        }
    }
}

/// Decoded values by record.
pub(crate) type ValueCache = Bounded<CacheKey, Arc<TensorValue>>;

/// A record as the index names it: event file, offset and the step the index file is for
/// (so a record listed by a duplicated index file is checked again, not served from cache).
pub(crate) type CacheKey = (Arc<str>, u64, i64);

fn cache_key(loc: &RecordLocation) -> CacheKey {
    (Arc::clone(&loc.event_file), loc.start, loc.step)
}

/// A value cache of `budget` bytes.
pub(crate) fn value_cache(budget: usize) -> ValueCache {
    Bounded::new(budget, |v| value_bytes(v))
}

/// Approximate heap size of a value.
pub(crate) fn value_bytes(v: &TensorValue) -> usize {
    match v {
        TensorValue::Str(a) => a.iter().map(|s| s.len() + 24).sum(),
        other => other.len() * other.dtype().item_size().unwrap_or(8),
    }
}

/// Whole events files read ahead from an object store, and the files touched once.
///
/// Analyses go tensor by tensor over steps, or step by step over tensors; either way most
/// records of a step's events file are wanted sooner or later. A file is fetched whole on
/// its second miss (on its first when it is small), so that the rest of its records cost no
/// request, while a reader that wants one record per file pays one ranged request per file.
#[derive(Debug)]
pub(crate) struct FileCache {
    files: Bounded<Arc<str>, Bytes>,
    touched: HashSet<Arc<str>>,
}

impl FileCache {
    pub fn new(budget: usize) -> Self {
        FileCache {
            files: Bounded::new(budget, Bytes::len),
            touched: HashSet::new(),
        }
    }

    pub fn clear(&mut self) {
        self.files.clear();
        self.touched.clear();
    }

    /// Whether to fetch `file` (whose listed records end at `end`) whole now; remembers
    /// the touch.
    fn fetch_whole(&mut self, file: &Arc<str>, end: u64) -> bool {
        let budget = u64::try_from(self.files.budget).unwrap_or(u64::MAX);
        if end > READAHEAD_FILE_MAX.min(budget) {
            return false;
        }
        if end <= READAHEAD_SMALL_FILE || self.touched.contains(file) {
            return true;
        }
        if self.touched.len() >= TOUCHED_LIMIT {
            self.touched.clear();
        }
        self.touched.insert(Arc::clone(file));
        false
    }
}

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

/// Decodes one record's bytes as the index entry `loc` describes it.
pub(crate) fn decode_value(loc: &RecordLocation, bytes: &Bytes) -> Result<TensorValue> {
    let file = || loc.event_file.to_string();
    let record = decode_exact_record(bytes, loc.start).map_err(|e| e.with_file(file()))?;
    if let Some(crc) = loc.payload_crc32c {
        record
            .verify_payload_crc32c(crc)
            .map_err(|e| e.with_file(file()))?;
    }
    // The payload as a slice of the read buffer, so the values are not copied twice.
    let payload = bytes.slice(HEADER_LEN..HEADER_LEN + record.payload.len());
    let event = decode_tensor_event_bytes(payload)
        .map_err(|e| e.with_file(file()).with_offset(loc.start))?;
    if event.tag != loc.tag {
        return Err(TrialError::WrongRecord {
            file: file(),
            offset: loc.start,
            expected: loc.tag.clone(),
            found: event.tag,
        });
    }
    if event.step != loc.step {
        return Err(TrialError::WrongStep {
            file: file(),
            offset: loc.start,
            index_file: loc.index_file.to_string(),
            expected: loc.step,
            found: event.step,
        });
    }
    Ok(event.tensor)
}

/// Reads and decodes `locs` (cache first), returning one result per location in order.
pub(crate) fn fetch_values(
    store: &BlockingStore,
    cache: &Mutex<ValueCache>,
    readahead: &Mutex<FileCache>,
    locs: &[&RecordLocation],
) -> Vec<Result<Arc<TensorValue>>> {
    let mut out: Vec<Option<Result<Arc<TensorValue>>>> = Vec::with_capacity(locs.len());
    let mut by_file: HashMap<Arc<str>, Vec<usize>> = HashMap::new();
    {
        let cache = lock(cache);
        for (i, loc) in locs.iter().enumerate() {
            match cache.get(&cache_key(loc)) {
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
            let bytes: u64 = locs.iter().map(|l| l.length).sum();
            let threads = if bytes < PARALLEL_MIN_BYTES {
                1
            } else {
                usize::MAX
            };
            let decoded = parallel::map(
                &jobs,
                threads,
                "smdebug-trial-read",
                |(file, idx, ranges)| file_results(locs, idx, sync.get_ranges_sync(file, ranges)),
            );
            return store_results(store, cache, locs, out, decoded.into_iter().flatten());
        }
        None => object_reads(store, readahead, locs, &jobs),
    };
    let decoded = jobs
        .iter()
        .zip(reads)
        .flat_map(|((_, idx, _), read)| file_results(locs, idx, read));
    store_results(store, cache, locs, out, decoded)
}

/// The records of one events file: the file, indices into the locations, their ranges.
type Job = (Arc<str>, Vec<usize>, Vec<Range<u64>>);

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
    let fetched: Vec<_> = store.block_on(async move {
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
            .collect()
            .await
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

/// Bytes of records below which one thread does everything (a thread start costs more).
const PARALLEL_MIN_BYTES: u64 = 1 << 20;

/// The values of one file's records (`idx` into `locs`) from the grouped read of their
/// ranges. A missing file makes each value unavailable; a range error (one range past a
/// truncated file's end fails the whole group) gives `None`, for a retry record by record,
/// so that only the damaged records fail; any other error fails every record at once.
fn file_results(
    locs: &[&RecordLocation],
    idx: &[usize],
    read: smdebug_storage::Result<Vec<Bytes>>,
) -> Vec<(usize, Option<Result<Arc<TensorValue>>>)> {
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
) -> Vec<Result<Arc<TensorValue>>> {
    let mut cache = lock(cache);
    for (i, r) in decoded {
        let r = r.unwrap_or_else(|| single_read(store, locs[i]).map(Arc::new));
        if let Ok(v) = &r {
            cache.insert(cache_key(locs[i]), Arc::clone(v));
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every update is a single
    // insert), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
