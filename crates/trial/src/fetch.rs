//! Reading tensor records by index entry: one ranged read per record, grouped per event file
//! (close ranges coalesced and files read concurrently by the storage layer), CRC-checked,
//! decoded, and kept in a memory-bounded cache.

use crate::parallel;
use crate::state::RecordLocation;
use crate::{Result, TensorValue, TrialError};
use futures::stream::{self, StreamExt};
use smdebug_record::{
    decode_exact_record, decode_tensor_event_bytes, masked_crc32c, records, HEADER_LEN,
};
use smdebug_storage::{BlockingStore, Bytes, SyncObject, SyncStorage};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How many event files are read at the same time.
const FILE_CONCURRENCY: usize = 16;

/// Events files up to this size are fetched whole on their first miss: one request costs
/// about what transferring this much does.
const READAHEAD_SMALL_FILE: u64 = 1 << 20;

/// Events files larger than this are never fetched whole.
const READAHEAD_FILE_MAX: u64 = 16 << 20;

/// Local disk: events files up to this size are read whole on their second miss (a read
/// of this many bytes from the page cache costs about what the four system calls of one
/// ranged read of a record cost, a few times over).
const LOCAL_WHOLE_FILE_MAX: u64 = 128 << 10;

/// At most this many files are remembered as touched once (then the memory starts over).
const TOUCHED_LIMIT: usize = 1 << 16;

/// The process's soft limit of open files (Linux: `getrlimit`), else 1024.
fn open_file_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            use rustix::process::{getrlimit, Resource};
            getrlimit(Resource::Nofile)
                .current
                .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
        }
        #[cfg(not(target_os = "linux"))]
        {
            1024
        }
    })
}

/// Local disk: the default of `TrialOptions::open_files`, an eighth of the process's soft
/// limit of open files (other trials, the writer and the user's program need some too),
/// between 32 and 1024.
pub(crate) fn default_open_files() -> usize {
    (open_file_limit() / 8).clamp(32, 1024)
}

/// Events files kept open (or about to be) by every trial of the process together, at most
/// [`process_open_files`]: many trials at once (one per rule in `smdebug rules`) must not
/// use up the process's open files.
static KEPT_OPEN: AtomicUsize = AtomicUsize::new(0);

/// A quarter of the process's limit of open files, at least 32.
fn process_open_files() -> usize {
    (open_file_limit() / 4).max(32)
}

/// Entries kept until `budget` bytes are held, then evicted oldest insertion first.
#[derive(Debug)]
pub(crate) struct Bounded<K, V> {
    pub(crate) budget: usize,
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

    /// The entry of `key`, not cloned.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub fn insert(&mut self, key: K, value: V) {
        self.insert_evicting(key, value, |_| {});
    }

    /// [`Bounded::insert`], handing each key it evicts (or does not keep: larger than the
    /// budget) to `evicted`.
    fn insert_evicting(&mut self, key: K, value: V, mut evicted: impl FnMut(K)) {
        let size = (self.size)(&value);
        if size > self.budget {
            evicted(key);
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
                evicted(old);
            }
        }
    }
}

/// Decoded values by record, each with what its record said, so that a hit is checked
/// against the index entry asking for it as a fresh decode would be; and small events
/// files decoded whole, as one entry each.
///
/// Scan-resistant, as the 2Q policy (Johnson and Shasha, 1994): a record read for the
/// first time goes into a small probation FIFO (1/[`PROBATION_SHARE`] of the budget), which
/// serves repeated reads close together (a rule asking twice within a step); only a record
/// asked for again after it left probation (its key still among the [`Ghosts`]) goes into
/// the main part. A reader that goes once through a trial larger than the cache (every
/// value, tensor by tensor) so keeps at most the probation part, instead of filling the
/// whole budget with values nobody asks for again: on a 1.2 GB trial a full 256 MiB cache
/// cost more in fresh memory (the kernel zeroing new pages) than the cache ever saved.
/// An events file decoded whole (on its second miss, so it was asked for twice already)
/// and what [`fetch_values`] is told to keep ([`Admit::Main`], `prefetch`) go to the main
/// part at once.
#[derive(Debug)]
pub(crate) struct ValueCache {
    pub(crate) budget: usize,
    main: Bounded<CacheKey, CacheEntry>,
    probation: Bounded<CacheKey, CacheEntry>,
    ghosts: Ghosts,
}

/// The probation part's share of the value cache's budget (1/64: 4 MiB of the default
/// 256 MiB, about what stays in the processor's caches). Measured on a one-pass read of
/// every value of a trial of 40 KB values through Python: 1/8 was 10-25 % slower than 1/64
/// or no probation at all, which were within noise of each other.
const PROBATION_SHARE: usize = 64;

/// At most this many keys of records evicted from probation are remembered.
const GHOST_KEYS_MAX: usize = 1 << 16;

/// Keys of the records that left probation unasked, the most recent ones: one of them asked
/// for again goes into the main part. A ghost is a hint, so it is kept as a 64-bit
/// fingerprint in a direct-mapped table (a later key of the same slot replaces it): no key
/// is cloned, nothing grows, and the table (a slot per 256 bytes of the budget, an entry
/// takes 64 at least, and at most [`GHOST_KEYS_MAX`] slots: 512 KiB) is allocated zeroed on
/// the first eviction. A hash set and queue of keys that grew with a one-pass read cost 4-10 %
/// of reading every value of a 1.2 GB trial one call at a time (their regrowth in fresh
/// memory). A fingerprint shared by two keys only sends a record to the main part early.
#[derive(Debug)]
struct Ghosts {
    limit: usize,
    /// Fingerprints by slot; 0 is an empty slot (fingerprints are odd).
    slots: Vec<u64>,
    /// Fixed keys: which ghosts collide is then the same from run to run (the keys are the
    /// trial's own file names and offsets, nothing an attacker picks per process).
    hasher: std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>,
}

impl Ghosts {
    fn new(budget: usize) -> Self {
        Ghosts {
            limit: (budget >> 8).min(GHOST_KEYS_MAX),
            slots: Vec::new(),
            hasher: Default::default(),
        }
    }

    /// The key's fingerprint (odd, so never an empty slot) and slot.
    fn place(&self, key: &CacheKey) -> (u64, usize) {
        use std::hash::BuildHasher;
        // The file's name, not its key's address (`FileKey` hashes the allocation): which
        // ghosts share a slot is then the same in every run.
        let fingerprint = self.hasher.hash_one((&*key.0 .0, key.1)) | 1;
        // The high bits choose the slot, so that it does not depend on the forced low bit.
        let slot = ((fingerprint >> 32) as usize) % self.slots.len().max(1);
        (fingerprint, slot)
    }

    fn push(&mut self, key: CacheKey) {
        if self.limit == 0 {
            return;
        }
        if self.slots.is_empty() {
            self.slots = vec![0; self.limit];
        }
        let (fingerprint, slot) = self.place(&key);
        self.slots[slot] = fingerprint;
    }

    /// Whether `key` is remembered; forgets it.
    fn take(&mut self, key: &CacheKey) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let (fingerprint, slot) = self.place(key);
        let found = self.slots[slot] == fingerprint;
        if found {
            self.slots[slot] = 0;
        }
        found
    }

    fn clear(&mut self) {
        self.slots = Vec::new();
    }

    /// How many keys are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots.iter().filter(|&&f| f != 0).count()
    }
}

/// Where [`fetch_values`] puts the records it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// As the cache's policy has it ([`ValueCache`]): probation first.
    Policy,
    /// The main part at once: the caller asked for the records to be kept (`prefetch`).
    Main,
}

impl ValueCache {
    fn new(budget: usize) -> Self {
        let probation = budget / PROBATION_SHARE;
        ValueCache {
            budget,
            main: Bounded::new(budget - probation, CacheEntry::bytes),
            probation: Bounded::new(probation, CacheEntry::bytes),
            ghosts: Ghosts::new(budget),
        }
    }

    pub fn clear(&mut self) {
        self.main.clear();
        self.probation.clear();
        self.ghosts.clear();
    }

    /// Bytes the probation part holds at most.
    pub fn probation_budget(&self) -> usize {
        self.probation.budget
    }

    fn peek(&self, key: &CacheKey) -> Option<&CacheEntry> {
        self.main.peek(key).or_else(|| self.probation.peek(key))
    }

    /// Keeps `entry` of a record just read, where `admit` and the policy say.
    fn insert(&mut self, key: CacheKey, entry: CacheEntry, admit: Admit) {
        if admit == Admit::Main || self.ghosts.take(&key) {
            self.main.insert(key, entry);
            return;
        }
        let ghosts = &mut self.ghosts;
        self.probation
            .insert_evicting(key, entry, |old| ghosts.push(old));
    }

    /// Bytes held (both parts).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.main.held + self.probation.held
    }
}

/// A record by place: event file and offset, or a whole file ([`WHOLE_FILE`]). Whether
/// the record is the one an index entry names (its step, tag, length, CRC) is checked on
/// every hit ([`Cached::serves`]), so a record listed by a duplicated index file of another
/// step is read and checked again.
pub(crate) type CacheKey = (FileKey, u64);

/// An events file's name as the trial's index bookkeeping holds it, compared and hashed
/// by its allocation: every record an index file lists shares its one name, so a lookup
/// neither hashes nor compares the name's bytes. The key holds the name, so the allocation
/// is not reused while the key exists; the same name from another index file (a
/// duplicated one) is another key, which costs a read, never a wrong value.
#[derive(Debug, Clone)]
pub(crate) struct FileKey(Arc<str>);

impl PartialEq for FileKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FileKey {}

impl std::hash::Hash for FileKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.0) as *const u8 as usize).hash(h);
    }
}

/// The offset of a whole file's entry: no record starts there (it has 16 bytes at least).
const WHOLE_FILE: u64 = u64::MAX;

/// What the value cache keeps under one key.
#[derive(Debug, Clone)]
pub(crate) enum CacheEntry {
    /// One record's value.
    One(Cached),
    /// Every record of a file decoded whole: one entry per file, so that serving its
    /// records costs one lookup each and caching them one insert.
    File(Arc<DecodedFile>),
}

/// The records of an events file decoded whole ([`decode_all`]), in file order.
#[derive(Debug)]
pub(crate) struct DecodedFile {
    /// Each record's offset, ascending (apart, so that finding one touches little memory).
    offsets: Box<[u64]>,
    records: Box<[Cached]>,
}

impl DecodedFile {
    /// The record at `offset`. Records of one file are mostly of similar size (every step
    /// saves the same tensors), so the position is guessed from the offset and the guess
    /// corrected by a few steps; a binary search when that does not find it.
    fn find(&self, offset: u64) -> Option<&Cached> {
        let offsets = &self.offsets;
        let (&last, n) = (offsets.last()?, offsets.len());
        let guess = (u128::from(offset) * n as u128 / (u128::from(last) + 1)) as usize;
        let mut k = guess.min(n - 1);
        for _ in 0..4 {
            match offsets[k].cmp(&offset) {
                std::cmp::Ordering::Equal => return Some(&self.records[k]),
                std::cmp::Ordering::Less if k + 1 < n => k += 1,
                std::cmp::Ordering::Greater if k > 0 => k -= 1,
                _ => return None,
            }
        }
        let k = offsets.binary_search(&offset).ok()?;
        Some(&self.records[k])
    }

    fn bytes(&self) -> usize {
        self.records.iter().map(|c| c.bytes() + 8).sum()
    }
}

impl CacheEntry {
    fn bytes(&self) -> usize {
        match self {
            CacheEntry::One(c) => c.bytes(),
            CacheEntry::File(all) => all.bytes(),
        }
    }
}

/// The cached value of `loc`, if the cache holds its record as `loc` describes it.
pub(crate) fn cached(cache: &ValueCache, loc: &RecordLocation) -> Option<Arc<TensorValue>> {
    let file = FileKey(Arc::clone(&loc.event_file));
    let hit = match cache.peek(&(file.clone(), loc.start)) {
        Some(CacheEntry::One(c)) => Some(c),
        _ => match cache.peek(&(file, WHOLE_FILE)) {
            Some(CacheEntry::File(all)) => all.find(loc.start),
            _ => None,
        },
    };
    hit.filter(|c| c.serves(loc)).map(|c| Arc::clone(&c.value))
}

fn cache_key(loc: &RecordLocation) -> CacheKey {
    (FileKey(Arc::clone(&loc.event_file)), loc.start)
}

/// One decoded record in the cache.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    value: Arc<TensorValue>,
    /// The record's tag, global step and whole length.
    tag: Arc<str>,
    step: i64,
    length: u64,
    /// The masked CRC32C of its payload, when it was computed or checked.
    crc: Option<u32>,
}

impl Cached {
    /// A value decoded for (and checked against) `loc` by [`decode_value`].
    fn checked(loc: &RecordLocation, value: Arc<TensorValue>) -> Self {
        Cached {
            value,
            tag: Arc::from(loc.tag.as_str()),
            step: loc.step,
            length: loc.length,
            crc: loc.payload_crc32c,
        }
    }

    fn bytes(&self) -> usize {
        value_bytes(&self.value) + self.tag.len() + 64
    }

    /// Whether this record is what `loc` asks for, as [`decode_value`] would check it.
    fn serves(&self, loc: &RecordLocation) -> bool {
        self.step == loc.step
            && self.length == loc.length
            && *self.tag == *loc.tag
            && (loc.payload_crc32c.is_none() || self.crc == loc.payload_crc32c)
    }
}

/// A value cache of `budget` bytes.
pub(crate) fn value_cache(budget: usize) -> ValueCache {
    ValueCache::new(budget)
}

/// Approximate heap size of a value.
pub(crate) fn value_bytes(v: &TensorValue) -> usize {
    match v {
        TensorValue::Str(a) => a.iter().map(|s| s.len() + 24).sum(),
        other => other.len() * other.dtype().item_size().unwrap_or(8),
    }
}

/// Every tensor record of the first bytes of an events file read whole, decoded in one
/// pass while the bytes are hot: `(offset, record)` in file order. Payload CRCs are
/// computed here, so that a hit is checked against the index's `payload_crc32c` later. A
/// record that does not decode as a tensor event (the file-version event at offset 0) is
/// left out; the first framing error ends the pass (what follows is read record by record,
/// with that record's own error).
pub(crate) fn decode_all(whole: &Bytes) -> DecodedFile {
    let mut offsets = Vec::new();
    let mut out = Vec::new();
    for rec in records(whole) {
        let Ok(rec) = rec else { break };
        let start = rec.offset as usize + HEADER_LEN;
        let payload = whole.slice(start..start + rec.payload.len());
        let Ok(event) = decode_tensor_event_bytes(payload) else {
            continue;
        };
        offsets.push(rec.offset);
        out.push(Cached {
            value: Arc::new(event.tensor),
            tag: Arc::from(event.tag),
            step: event.step,
            length: rec.len(),
            crc: Some(masked_crc32c(rec.payload)),
        });
    }
    DecodedFile {
        offsets: offsets.into(),
        records: out.into(),
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
    pub(crate) open: OpenFiles,
}

impl FileCache {
    pub fn new(budget: usize, open_files: usize) -> Self {
        FileCache {
            files: Bounded::new(budget, Bytes::len),
            touched: HashSet::new(),
            open: OpenFiles::new(open_files),
        }
    }

    pub fn clear(&mut self) {
        self.files.clear();
        self.touched.clear();
        self.open.clear();
    }

    /// Whether a read of the local events file `file` (records up to `end`) reads it whole
    /// into a value cache of `cache_budget` bytes: [`FileCache::local_whole`], for files
    /// that fit a quarter of the cache (one file must not push out the rest).
    pub(crate) fn reads_whole(&mut self, file: &Arc<str>, end: u64, cache_budget: usize) -> bool {
        let room = u64::try_from(cache_budget / 4).unwrap_or(u64::MAX);
        end <= room && self.local_whole(file, end)
    }

    /// Local disk: whether to read `file` (whose listed records end at `end`) whole now.
    /// A small file is read whole on its second miss: a reader that wants one record per
    /// file (one tensor over its steps) pays one small read per file, and one that wants
    /// all of them (every value, step by step or tensor by tensor) pays two reads per
    /// file instead of one per record. Past [`LOCAL_WHOLE_FILE_MAX`] a whole read costs
    /// more than the system calls it saves.
    fn local_whole(&mut self, file: &Arc<str>, end: u64) -> bool {
        let budget = u64::try_from(self.files.budget).unwrap_or(u64::MAX);
        if end > LOCAL_WHOLE_FILE_MAX.min(budget) {
            return false;
        }
        if self.touched.contains(file) {
            return true;
        }
        if self.touched.len() >= TOUCHED_LIMIT {
            self.touched.clear();
        }
        self.touched.insert(Arc::clone(file));
        false
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

/// Local events files kept open ([`SyncStorage::open_sync`]), at most `limit` per trial
/// and [`process_open_files`] for the whole process; past the trial's limit a file chosen
/// at random is closed. Not the least recently used: the common scan (one tensor over every
/// step, then the next tensor) visits the files in the same cycle each time, and with more
/// files than the limit a least-recently-used set would have closed each file just before
/// it is wanted again; a random choice keeps some of them.
///
/// A place is reserved before a file is opened ([`OpenFiles::plan`]), so a call that reads
/// thousands of files holds at most twice `limit` of them open until it ends (the handles
/// held when it started, and those opened into reserved places): the others are closed as
/// soon as they are read, as before there were handles.
///
/// Reading one record of each of many files then costs a positional read per record, not
/// a path lookup, an open and a close as well. Sound because an events file never changes
/// once an index file lists it (the value cache relies on that too); a file removed or
/// replaced since is noticed by the handle ([`smdebug_storage::StorageError::Replaced`])
/// and opened again.
#[derive(Debug)]
pub(crate) struct OpenFiles {
    /// Each file's handle and its place in `slots`.
    map: HashMap<Arc<str>, (Arc<dyn SyncObject>, usize)>,
    slots: Vec<Arc<str>>,
    /// Places reserved for files being opened by calls in progress.
    reserved: usize,
    limit: usize,
    /// xorshift state for the choice of the file to close.
    seed: u64,
}

/// What a read may do with its events file's handle ([`OpenFiles::plan`]).
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// The file's handle, kept open.
    Held(Arc<dyn SyncObject>),
    /// A place reserved: keep the handle the read opens.
    Reserved,
    /// No place: close the file after the read.
    Closed,
}

impl OpenFiles {
    fn new(limit: usize) -> Self {
        OpenFiles {
            map: HashMap::new(),
            slots: Vec::new(),
            reserved: 0,
            limit,
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn clear(&mut self) {
        KEPT_OPEN.fetch_sub(self.map.len(), Ordering::Relaxed);
        self.map.clear();
        self.slots.clear();
    }

    /// What a read of `file` may do with its handle: use the one held, keep the one it
    /// opens (a place is reserved now; when the trial's places are full a random file is
    /// closed for it), or close the file after reading it.
    pub(crate) fn plan(&mut self, file: &Arc<str>) -> Slot {
        if let Some((h, _)) = self.map.get(file) {
            return Slot::Held(Arc::clone(h));
        }
        if self.limit == 0 {
            return Slot::Closed;
        }
        if self.slots.len() + self.reserved >= self.limit {
            if self.slots.is_empty() {
                return Slot::Closed;
            }
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 7;
            self.seed ^= self.seed << 17;
            let slot = (self.seed % self.slots.len() as u64) as usize;
            let closed = Arc::clone(&self.slots[slot]);
            self.remove(&closed);
        }
        if KEPT_OPEN.fetch_add(1, Ordering::Relaxed) >= process_open_files() {
            KEPT_OPEN.fetch_sub(1, Ordering::Relaxed);
            return Slot::Closed;
        }
        self.reserved += 1;
        Slot::Reserved
    }

    fn remove(&mut self, file: &Arc<str>) {
        if let Some((_, slot)) = self.map.remove(file) {
            KEPT_OPEN.fetch_sub(1, Ordering::Relaxed);
            self.slots.swap_remove(slot);
            if let Some(moved) = self.slots.get(slot) {
                if let Some(entry) = self.map.get_mut(moved) {
                    entry.1 = slot;
                }
            }
        }
    }

    /// After a read planned as `slot`: keeps `handle` as `file`'s (in its reserved place, or
    /// in place of the one held), or forgets the file's handle when `None` (it could not
    /// be opened again); a handle with no place is dropped, which closes the file.
    pub(crate) fn keep(
        &mut self,
        file: &Arc<str>,
        slot: &Slot,
        handle: Option<Arc<dyn SyncObject>>,
    ) {
        let reserved = matches!(slot, Slot::Reserved);
        if reserved {
            // The reservation becomes the entry below, or is given back.
            self.reserved = self.reserved.saturating_sub(1);
            KEPT_OPEN.fetch_sub(1, Ordering::Relaxed);
        }
        let Some(handle) = handle else {
            self.remove(file);
            return;
        };
        if let Some(held) = self.map.get_mut(file) {
            held.0 = handle;
            return;
        }
        if reserved {
            KEPT_OPEN.fetch_add(1, Ordering::Relaxed);
            self.slots.push(Arc::clone(file));
            self.map
                .insert(Arc::clone(file), (handle, self.slots.len() - 1));
        }
    }
}

impl Drop for OpenFiles {
    fn drop(&mut self) {
        KEPT_OPEN.fetch_sub(self.map.len() + self.reserved, Ordering::Relaxed);
    }
}

/// Reads `ranges` of the local events file `file` through `handle`, opening the file when
/// there is no handle or the file was replaced since the handle was opened; `handle` is
/// left as the handle to keep (`None` when the file could not be opened).
pub(crate) fn read_open(
    sync: &dyn SyncStorage,
    file: &str,
    handle: &mut Option<Arc<dyn SyncObject>>,
    ranges: &[Range<u64>],
) -> smdebug_storage::Result<Vec<Bytes>> {
    if let Some(h) = handle {
        match h.get_ranges(ranges) {
            Err(e) if e.is_replaced() => *handle = None,
            read => return read,
        }
    }
    let h = sync.open_sync(file)?;
    let read = h.get_ranges(ranges);
    *handle = Some(h);
    read
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
    // The payload as a slice of the read buffer, so the values are not copied twice.
    let event = decode_tensor_event_bytes(record_payload(loc, bytes)?).map_err(|e| {
        e.with_file(loc.event_file.to_string())
            .with_offset(loc.start)
    })?;
    check_event(loc, event.tag, event.step)?;
    Ok(event.tensor)
}

/// The payload of the record `bytes` holds, its framing and (when the index has it) its
/// payload CRC checked as the index entry `loc` describes it: a slice of `bytes`.
pub(crate) fn record_payload(loc: &RecordLocation, bytes: &Bytes) -> Result<Bytes> {
    let file = || loc.event_file.to_string();
    let record = decode_exact_record(bytes, loc.start).map_err(|e| e.with_file(file()))?;
    if let Some(crc) = loc.payload_crc32c {
        record
            .verify_payload_crc32c(crc)
            .map_err(|e| e.with_file(file()))?;
    }
    Ok(bytes.slice(HEADER_LEN..HEADER_LEN + record.payload.len()))
}

/// Whether a record's event (its `tag` and global `step`) is the one `loc` names.
pub(crate) fn check_event(loc: &RecordLocation, tag: String, step: i64) -> Result<()> {
    let file = || loc.event_file.to_string();
    if tag != loc.tag {
        return Err(TrialError::WrongRecord {
            file: file(),
            offset: loc.start,
            expected: loc.tag.clone(),
            found: tag,
        });
    }
    if step != loc.step {
        return Err(TrialError::WrongStep {
            file: file(),
            offset: loc.start,
            index_file: loc.index_file.to_string(),
            expected: loc.step,
            found: step,
        });
    }
    Ok(())
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

/// Bytes of records to read below which one thread does everything (a thread start costs
/// more). Measured on 2 cores at 20 files of one 40 KB record each: helpers at 256 KiB made
/// the call 3× slower on a busy machine (a helper waits to be scheduled, the call waits to
/// join it), so the bound stays high.
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data (every update is a single
    // insert), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(offsets: &[u64]) -> DecodedFile {
        let records = offsets
            .iter()
            .map(|&o| Cached {
                value: Arc::new(TensorValue::Float32(ndarray::ArrayD::from_elem(
                    ndarray::IxDyn(&[1]),
                    o as f32,
                ))),
                tag: Arc::from("t"),
                step: 0,
                length: 16,
                crc: None,
            })
            .collect();
        DecodedFile {
            offsets: offsets.into(),
            records,
        }
    }

    fn found(f: &DecodedFile, offset: u64) -> Option<f32> {
        f.find(offset).map(|c| match &*c.value {
            TensorValue::Float32(a) => a[[0]],
            _ => unreachable!("test values are f32"),
        })
    }

    #[test]
    fn finds_every_record_whatever_the_sizes_and_nothing_else() {
        // Even sizes (the guess is right), uneven ones (it is corrected or a binary search
        // takes over), one record, none.
        let even: Vec<u64> = (0..250).map(|k| 24 + k * 148).collect();
        let mut uneven = vec![24u64, 40, 41, 5000, 5001, 5002, 90_000, 90_016];
        uneven.extend((0..100).map(|k| 100_000 + k * 7));
        for offsets in [even, uneven, vec![0], vec![]] {
            let f = file(&offsets);
            for &o in &offsets {
                assert_eq!(found(&f, o), Some(o as f32), "offset {o} of {offsets:?}");
                for miss in [o + 1, o.saturating_sub(1)] {
                    if !offsets.contains(&miss) {
                        assert_eq!(found(&f, miss), None, "{miss} is no record's offset");
                    }
                }
            }
            assert_eq!(found(&f, u64::MAX - 1), None);
        }
    }

    #[test]
    fn open_files_are_bounded_and_each_kept_handle_is_its_files() {
        use smdebug_storage::{LocalStorage, SyncStorage};
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStorage::new(dir.path());
        let limit = 16;
        let names: Vec<Arc<str>> = (0..limit * 3)
            .map(|k| Arc::from(format!("events/{k}")))
            .collect();
        let byte = |name: &str| name[7..].parse::<u8>().unwrap();
        for name in &names {
            store.put_sync(name, Bytes::from(vec![byte(name)])).unwrap();
        }
        let check = |open: &OpenFiles| {
            assert_eq!(open.reserved, 0);
            assert_eq!(open.map.len(), open.slots.len());
            assert!(open.map.len() <= limit);
            for (slot, name) in open.slots.iter().enumerate() {
                let (h, at) = &open.map[name];
                assert_eq!(*at, slot);
                assert_eq!(h.key(), &**name);
                let first = h.get_ranges(std::slice::from_ref(&(0..1))).unwrap();
                assert_eq!(first[0], vec![byte(name)]);
            }
        };
        // One call over files[range]: every file planned first, then read and kept, as
        // `fetch_values` does; how many were held open already.
        let call = |open: &mut OpenFiles, files: &[Arc<str>]| {
            let slots: Vec<Slot> = files.iter().map(|f| open.plan(f)).collect();
            let places = slots.iter().filter(|s| !matches!(s, Slot::Closed)).count();
            // Handles held at the start and closed for a reserved place stay open until the
            // call ends: twice the limit at most.
            assert!(places <= 2 * limit, "{places} files open during one call");
            let mut held = 0;
            for (f, slot) in files.iter().zip(&slots) {
                let handle = match slot {
                    Slot::Held(h) => {
                        held += 1;
                        Arc::clone(h)
                    }
                    _ => store.open_sync(f).unwrap(),
                };
                let handle = (!matches!(slot, Slot::Closed)).then_some(handle);
                open.keep(f, slot, handle);
            }
            held
        };
        let mut open = OpenFiles::new(limit);
        // Fewer files than the limit: every one stays open.
        assert_eq!(call(&mut open, &names[..limit]), 0);
        assert_eq!(call(&mut open, &names[..limit]), limit);
        check(&open);
        // Calls over three times as many: never more than the limit open, and the next
        // call finds some of its files still open (a least-recently-used set would find
        // none in this cycle).
        let mut held = 0;
        for _ in 0..3 {
            held += call(&mut open, &names);
            check(&open);
        }
        assert_eq!(open.map.len(), limit);
        assert!(held > 0, "random replacement keeps some files of a cycle");
        // One file at a time over the cycle: the same bounds.
        for name in names.iter().cycle().take(names.len() * 2) {
            call(&mut open, std::slice::from_ref(name));
        }
        check(&open);
        // Forgetting a file (it could not be opened again) keeps the places consistent.
        let forget = Arc::clone(&open.slots[3]);
        let slot = open.plan(&forget);
        assert!(matches!(slot, Slot::Held(_)));
        open.keep(&forget, &slot, None);
        assert!(matches!(
            open.plan(&names[0]),
            Slot::Held(_) | Slot::Reserved
        ));
        open.reserved = 0;
        check(&open);
        assert!(!open.map.contains_key(&forget));
        open.clear();
        assert!(open.map.is_empty() && open.slots.is_empty());
        // No open files at all.
        let mut none = OpenFiles::new(0);
        assert_eq!(call(&mut none, &names[..4]), 0);
        assert!(matches!(none.plan(&names[0]), Slot::Closed));
    }

    /// One record's entry of `bytes` bytes of values (plus the entry's overhead).
    fn entry(bytes: usize) -> CacheEntry {
        CacheEntry::One(Cached {
            value: Arc::new(TensorValue::Float32(ndarray::ArrayD::zeros(
                ndarray::IxDyn(&[bytes / 4]),
            ))),
            tag: Arc::from("t"),
            step: 0,
            length: 16,
            crc: None,
        })
    }

    #[test]
    fn a_one_pass_scan_keeps_only_the_probation_part() {
        let budget = 1 << 20;
        let mut cache = ValueCache::new(budget);
        let file = FileKey(Arc::from("events/a"));
        let key = |k: u64| (file.clone(), k);
        // Ten times the budget, each record once.
        for k in 0..2560 {
            cache.insert(key(k), entry(4096), Admit::Policy);
            assert!(
                cache.held() <= budget / PROBATION_SHARE,
                "{} held",
                cache.held()
            );
        }
        assert_eq!(
            cache.main.held, 0,
            "nothing read once reaches the main part"
        );
        // The last records are still there for a read close after the first.
        assert!(cache.peek(&key(2559)).is_some());
        assert!(cache.peek(&key(0)).is_none());
    }

    #[test]
    fn a_record_asked_for_again_after_probation_is_kept_in_the_main_part() {
        let budget = 1 << 20;
        let mut cache = ValueCache::new(budget);
        let file = FileKey(Arc::from("events/a"));
        let key = |k: u64| (file.clone(), k);
        // A working set of half the budget, read three times over: the first pass misses
        // everything, the second misses (its keys are ghosts now) and keeps it, the third
        // is served whole.
        let set = 0..128u64;
        let mut misses = [0; 3];
        for pass in &mut misses {
            for k in set.clone() {
                if cache.peek(&key(k)).is_none() {
                    *pass += 1;
                    cache.insert(key(k), entry(4096), Admit::Policy);
                }
            }
        }
        assert_eq!(misses[0], 128);
        assert!(misses[1] > 64, "{misses:?}");
        // Served whole but for the few keys whose ghosts shared a slot (128 keys in 4,096
        // slots: about two such pairs).
        assert!(misses[2] <= 8, "{misses:?}");
        assert!(cache.held() <= budget);
        // A scan of another ten budgets does not push what the main part keeps out (the
        // set's last records, served from probation, would go there on their next miss).
        let kept: Vec<u64> = set
            .clone()
            .filter(|&k| cache.main.peek(&key(k)).is_some())
            .collect();
        assert!(kept.len() > 64, "{} kept", kept.len());
        for k in 1000..3560 {
            cache.insert(key(k), entry(4096), Admit::Policy);
        }
        assert!(kept.iter().all(|&k| cache.peek(&key(k)).is_some()));
        // What the caller asked to keep (prefetch) goes to the main part at once; the
        // main part stays within its budget, oldest out first.
        for k in 5000..5300 {
            cache.insert(key(k), entry(4096), Admit::Main);
        }
        assert!(cache.peek(&key(5299)).is_some());
        assert!(cache.peek(&key(0)).is_none());
        assert!(cache.held() <= budget);
        cache.clear();
        assert_eq!(cache.held(), 0);
        assert_eq!(cache.ghosts.len(), 0);
    }

    #[test]
    fn ghost_keys_are_bounded() {
        let budget = 1 << 20;
        let mut cache = ValueCache::new(budget);
        let file = FileKey(Arc::from("events/a"));
        for k in 0..100_000u64 {
            cache.insert((file.clone(), k), entry(64), Admit::Policy);
        }
        assert_eq!(cache.ghosts.slots.len(), budget >> 8);
        let remembered = cache.ghosts.len();
        assert!(remembered <= budget >> 8);
        // Most of the latest evictions are remembered (a later key may take an earlier
        // one's slot).
        assert!(remembered > (budget >> 8) / 2, "{remembered}");
        let recent = (99_000..99_500u64)
            .filter(|&k| cache.ghosts.take(&(file.clone(), k)))
            .count();
        assert!(
            recent > 250,
            "{recent} of the last 500 evictions remembered"
        );
        // At most GHOST_KEYS_MAX slots, whatever the budget.
        let mut big = Ghosts::new(1 << 40);
        big.push((file.clone(), 1));
        assert_eq!(big.slots.len(), GHOST_KEYS_MAX);
        assert!(big.take(&(file.clone(), 1)));
        assert!(!big.take(&(file.clone(), 1)));
        // No cache, no ghosts.
        let mut none = ValueCache::new(0);
        none.insert((file.clone(), 0), entry(64), Admit::Policy);
        assert!(none.peek(&(file, 0)).is_none());
        assert_eq!(none.ghosts.len(), 0);
        assert!(none.ghosts.slots.is_empty());
    }

    #[test]
    fn a_cached_record_serves_only_the_entry_it_is() {
        let loc = RecordLocation {
            event_file: Arc::from("events/000000000001/000000000001_worker_0.tfevents"),
            start: 24,
            length: 60,
            event_file_end: 84,
            payload_crc32c: Some(7),
            tag: "a".into(),
            index_file: Arc::from("index/000000000/000000000001_worker_0.json"),
            step: 1,
            mode: smdebug_config::Mode::Train,
            mode_step: 1,
        };
        let value = Arc::new(TensorValue::Float32(ndarray::ArrayD::zeros(
            ndarray::IxDyn(&[1]),
        )));
        let c = Cached {
            value,
            tag: Arc::from("a"),
            step: 1,
            length: 60,
            crc: Some(7),
        };
        assert!(c.serves(&loc));
        let no_crc = RecordLocation {
            payload_crc32c: None,
            ..loc.clone()
        };
        assert!(c.serves(&no_crc), "no CRC in the index: none to check");
        for other in [
            RecordLocation {
                step: 2,
                ..loc.clone()
            },
            RecordLocation {
                length: 61,
                ..loc.clone()
            },
            RecordLocation {
                tag: "b".into(),
                ..loc.clone()
            },
            RecordLocation {
                payload_crc32c: Some(8),
                ..loc.clone()
            },
        ] {
            assert!(!c.serves(&other), "{other:?}");
        }
        let unchecked = Cached { crc: None, ..c };
        assert!(
            !unchecked.serves(&loc),
            "a CRC the index has was not checked"
        );
    }
}
