//! Local events files kept open between reads, bounded per trial and per process.

use smdebug_storage::{Bytes, SyncObject, SyncStorage};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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
/// soon as they are read.
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
    pub(crate) fn new(limit: usize) -> Self {
        OpenFiles {
            map: HashMap::new(),
            slots: Vec::new(),
            reserved: 0,
            limit,
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }

    pub(crate) fn clear(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
