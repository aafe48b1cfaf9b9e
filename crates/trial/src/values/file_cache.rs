//! What a trial remembers of its events files between reads: whole files read ahead from an
//! object store, the files touched once, and the local files kept open.

use crate::bounded::Bounded;
use crate::values::open_files::OpenFiles;
use smdebug_storage::Bytes;
use std::collections::HashSet;
use std::sync::Arc;

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

/// Whole events files read ahead from an object store, and the files touched once.
///
/// Analyses go tensor by tensor over steps, or step by step over tensors; either way most
/// records of a step's events file are wanted sooner or later. A file is fetched whole on
/// its second miss (on its first when it is small), so that the rest of its records cost no
/// request, while a reader that wants one record per file pays one ranged request per file.
#[derive(Debug)]
pub(crate) struct FileCache {
    pub(crate) files: Bounded<Arc<str>, Bytes>,
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
    pub(crate) fn fetch_whole(&mut self, file: &Arc<str>, end: u64) -> bool {
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
