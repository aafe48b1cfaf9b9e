//! Reading tensor records by index entry: one ranged read per record, grouped per event file
//! (close ranges coalesced and files read concurrently by the storage layer), CRC-checked,
//! decoded, and kept in a memory-bounded cache.

use crate::parallel;
use crate::state::RecordLocation;
use crate::{Result, TrialError, Value};
use futures::stream::{self, StreamExt};
use smdebug_record::{decode_exact_record, decode_tensor_event_bytes, HEADER_LEN};
use smdebug_storage::{BlockingStore, Bytes};
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// How many event files are read at the same time.
const FILE_CONCURRENCY: usize = 16;

/// Decoded values, least recently inserted evicted first once `budget` bytes are held.
#[derive(Debug)]
pub(crate) struct ValueCache {
    budget: usize,
    held: usize,
    map: HashMap<CacheKey, Arc<Value>>,
    order: VecDeque<CacheKey>,
}

/// A record as the index names it: event file, offset and the step the index file is for
/// (so a record listed by a duplicated index file is checked again, not served from cache).
type CacheKey = (Arc<str>, u64, i64);

fn cache_key(loc: &RecordLocation) -> CacheKey {
    (Arc::clone(&loc.event_file), loc.start, loc.step)
}

/// Approximate heap size of a value.
pub(crate) fn value_bytes(v: &Value) -> usize {
    match v {
        Value::Str(a) => a.iter().map(|s| s.len() + 24).sum(),
        other => other.len() * other.dtype().item_size().unwrap_or(8),
    }
}

impl ValueCache {
    pub fn new(budget: usize) -> Self {
        ValueCache {
            budget,
            held: 0,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.held = 0;
    }

    pub fn get(&self, loc: &RecordLocation) -> Option<Arc<Value>> {
        self.map.get(&cache_key(loc)).cloned()
    }

    pub fn insert(&mut self, loc: &RecordLocation, value: Arc<Value>) {
        let size = value_bytes(&value);
        if size > self.budget {
            return;
        }
        let key = cache_key(loc);
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
                self.held -= value_bytes(&v);
            }
        }
    }
}

/// Decodes one record's bytes as the index entry `loc` describes it.
pub(crate) fn decode_value(loc: &RecordLocation, bytes: &Bytes) -> Result<Value> {
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
    locs: &[&RecordLocation],
) -> Vec<Result<Arc<Value>>> {
    let mut out: Vec<Option<Result<Arc<Value>>>> = Vec::with_capacity(locs.len());
    let mut by_file: HashMap<Arc<str>, Vec<usize>> = HashMap::new();
    {
        let cache = lock(cache);
        for (i, loc) in locs.iter().enumerate() {
            match cache.get(loc) {
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
    type Job = (Arc<str>, Vec<usize>, Vec<Range<u64>>);
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
        None => {
            let requests: Vec<(Arc<str>, Vec<Range<u64>>)> = jobs
                .iter()
                .map(|(file, _, ranges)| (Arc::clone(file), ranges.clone()))
                .collect();
            store.block_on(async move {
                stream::iter(requests)
                    .map(|(file, ranges)| {
                        let storage = Arc::clone(&storage);
                        async move { storage.get_ranges(&file, &ranges).await }
                    })
                    .buffered(FILE_CONCURRENCY)
                    .collect()
                    .await
            })
        }
    };
    let decoded = jobs
        .iter()
        .zip(reads)
        .flat_map(|((_, idx, _), read)| file_results(locs, idx, read));
    store_results(store, cache, locs, out, decoded)
}

/// Bytes of records below which one thread does everything (a thread start costs more).
const PARALLEL_MIN_BYTES: u64 = 1 << 20;

/// The values of one file's records (`idx` into `locs`) from the grouped read of their
/// ranges. A missing file makes each value unavailable; any other failed grouped read (one
/// range past a truncated file's end fails the whole group) gives `None`, for a retry record
/// by record, so that only the damaged records fail.
fn file_results(
    locs: &[&RecordLocation],
    idx: &[usize],
    read: smdebug_storage::Result<Vec<Bytes>>,
) -> Vec<(usize, Option<Result<Arc<Value>>>)> {
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
        Err(_) => idx.iter().map(|&i| (i, None)).collect(),
    }
}

/// Retries what `file_results` left open, caches the values and fills `out` in order.
fn store_results(
    store: &BlockingStore,
    cache: &Mutex<ValueCache>,
    locs: &[&RecordLocation],
    mut out: Vec<Option<Result<Arc<Value>>>>,
    decoded: impl Iterator<Item = (usize, Option<Result<Arc<Value>>>)>,
) -> Vec<Result<Arc<Value>>> {
    let mut cache = lock(cache);
    for (i, r) in decoded {
        let r = r.unwrap_or_else(|| single_read(store, locs[i]).map(Arc::new));
        if let Ok(v) = &r {
            cache.insert(locs[i], Arc::clone(v));
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
fn single_read(store: &BlockingStore, loc: &RecordLocation) -> Result<Value> {
    let range = loc.start..loc.start.saturating_add(loc.length);
    let bytes = store.get_range(&loc.event_file, range)?;
    decode_value(loc, &bytes)
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every update is a single
    // insert), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
