//! What local listings remember of the folders they read, so that a poll of an unchanged
//! folder costs a `stat` instead of a directory read.
//!
//! A trial reader lists `index/` again and again after a token, the last key it has read.
//! The folder holding the token is read whole each time, though every key in it may sort
//! before the token: on ext4 a read of a folder of a few hundred files costs hundreds of
//! microseconds. For a folder that held only plain files, a listing remembers its
//! modification time and its greatest name; while the time is unchanged, no name was added,
//! removed or renamed there, so a listing after a key at or past that greatest name skips it.
//!
//! A folder is remembered only when its modification time was at least [`SETTLED`] older
//! than the listing that read it: a change in the same clock tick as an earlier one leaves
//! the time as it was, and a tick is far shorter than that on every file system.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How much older than a listing a folder's modification time must be to be remembered.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// At most this many folders are remembered (then the memory starts afresh).
const LIMIT: usize = 100_000;

/// A folder's identity and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    mtime: SystemTime,
    inode: u64,
}

impl Version {
    /// The version `meta` (of a folder) describes; `None` where the platform gives no time.
    pub(crate) fn of(meta: &Metadata) -> Option<Version> {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Version {
            mtime: meta.modified().ok()?,
            inode,
        })
    }

    /// Whether a listing that started at `listed_at` may remember this version.
    pub(crate) fn settled(&self, listed_at: SystemTime) -> bool {
        listed_at
            .duration_since(self.mtime)
            .is_ok_and(|age| age >= SETTLED)
    }
}

/// Folders of plain files read by earlier listings: version and greatest name. Shared by
/// the clones of one store.
#[derive(Debug, Clone, Default)]
pub(crate) struct FolderStamps(Arc<Mutex<HashMap<PathBuf, (Version, String)>>>);

impl FolderStamps {
    /// The greatest name in `dir` as a listing saw it, if `dir` is still at `version`.
    pub(crate) fn last_name(&self, dir: &Path, version: &Version) -> Option<String> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(dir)
            .filter(|(v, _)| v == version)
            .map(|(_, last)| last.clone())
    }

    /// Remembers what a listing saw of `dir` (`None`: nothing worth keeping).
    pub(crate) fn remember(&self, dir: &Path, seen: Option<(Version, String)>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match seen {
            Some(stamp) => {
                if map.len() >= LIMIT {
                    map.clear();
                }
                map.insert(dir.to_owned(), stamp);
            }
            None => {
                map.remove(dir);
            }
        }
    }
}
