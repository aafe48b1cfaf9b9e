//! The value cache: decoded values by record, and its admission policy (probation first,
//! the main part for what is asked for again).

use crate::bounded::Bounded;
use crate::index::state::RecordLocation;
use smdebug_record::TensorValue;
use std::sync::Arc;

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
/// whole budget with values nobody asks for again: filling the whole budget costs fresh
/// memory (the kernel zeroing new pages), which such a reader never gets back in hits.
/// An events file decoded whole (on its second miss, so it was asked for twice already)
/// and what `fetch_values` is told to keep ([`Admit::Main`], `prefetch`) go to the main
/// part at once.
#[derive(Debug)]
pub(crate) struct ValueCache {
    pub(crate) budget: usize,
    main: Bounded<CacheKey, CacheEntry>,
    probation: Bounded<CacheKey, CacheEntry>,
    ghosts: Ghosts,
}

/// The probation part's share of the value cache's budget (1/64: 4 MiB of the default
/// 256 MiB, about what stays in the processor's caches): a larger part makes a one-pass
/// read slower, by as much as it holds in memory that leaves the processor's caches.
const PROBATION_SHARE: usize = 64;

/// At most this many keys of records evicted from probation are remembered.
const GHOST_KEYS_MAX: usize = 1 << 16;

/// Keys of the records that left probation unasked, the most recent ones: one of them asked
/// for again goes into the main part. A ghost is a hint, so it is kept as a 64-bit
/// fingerprint in a direct-mapped table (a later key of the same slot replaces it): no key
/// is cloned, nothing grows, and the table (a slot per 256 bytes of the budget, an entry
/// takes 64 at least, and at most [`GHOST_KEYS_MAX`] slots: 512 KiB) is allocated zeroed on
/// the first eviction: a set of keys would grow with a one-pass read, and its regrowth in
/// fresh memory costs that read time. A fingerprint shared by two keys only sends a record
/// to the main part early.
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

/// Where `fetch_values` puts the records it reads.
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
    pub(crate) fn insert(&mut self, key: CacheKey, entry: CacheEntry, admit: Admit) {
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
pub(crate) struct FileKey(pub(crate) Arc<str>);

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
pub(crate) const WHOLE_FILE: u64 = u64::MAX;

/// What the value cache keeps under one key.
#[derive(Debug, Clone)]
pub(crate) enum CacheEntry {
    /// One record's value.
    One(Cached),
    /// Every record of a file decoded whole: one entry per file, so that serving its
    /// records costs one lookup each and caching them one insert.
    File(Arc<DecodedFile>),
}

/// The records of an events file decoded whole (`decode_all`), in file order.
#[derive(Debug)]
pub(crate) struct DecodedFile {
    /// Each record's offset, ascending (apart, so that finding one touches little memory).
    pub(crate) offsets: Box<[u64]>,
    pub(crate) records: Box<[Cached]>,
}

impl DecodedFile {
    /// The record at `offset`. Records of one file are mostly of similar size (every step
    /// saves the same tensors), so the position is guessed from the offset and the guess
    /// corrected by a few steps; a binary search when that does not find it.
    pub(crate) fn find(&self, offset: u64) -> Option<&Cached> {
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

pub(crate) fn cache_key(loc: &RecordLocation) -> CacheKey {
    (FileKey(Arc::clone(&loc.event_file)), loc.start)
}

/// One decoded record in the cache.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub(crate) value: Arc<TensorValue>,
    /// The record's tag, global step and whole length.
    pub(crate) tag: Arc<str>,
    pub(crate) step: i64,
    pub(crate) length: u64,
    /// The masked CRC32C of its payload, when it was computed or checked.
    pub(crate) crc: Option<u32>,
}

impl Cached {
    /// A value decoded for (and checked against) `loc` by `decode_value`.
    pub(crate) fn checked(loc: &RecordLocation, value: Arc<TensorValue>) -> Self {
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

    /// Whether this record is what `loc` asks for, as `decode_value` would check it.
    pub(crate) fn serves(&self, loc: &RecordLocation) -> bool {
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
