//! [`LocalStorage`]: the local filesystem backend's store and its settings. What it does is
//! in `local.rs` (the `Storage` and `SyncStorage` operations), `local_write.rs` (puts),
//! `local_list.rs` (listings) and `local_read.rs` (opened objects, positional reads).

use std::io::{self};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Operation, Result, StorageError};
use crate::ranges::ReadOptions;
use crate::retry::LocalRetry;
use crate::stamps::FolderStamps;
use crate::Storage;
use std::sync::Arc;

/// File names ending in this are files being written (ours, and the Python writer's
/// `<name>.tmp`): never listed, and refused as keys of [`Storage::put`].
pub const TEMP_SUFFIX: &str = ".tmp";

/// Objects as files under a root folder; keys are paths relative to it.
///
/// * `put` writes `.<name>.<pid>.<n>.tmp` beside the target, fsyncs it, renames it over the
///   target and fsyncs the folder, so readers never see a partial file and a completed put
///   survives a crash (with [`LocalSync::RenameOnly`], a process crash only).
/// * `list` walks the folders under the prefix (skipping folders that cannot hold a match
///   or that sort entirely before `start_after`), hides `*.tmp` files and returns sorted keys.
///   File names that are not UTF-8 are skipped (they cannot be keys). Symbolic links to
///   files are followed; symbolic links to folders are not (no loops). A folder of plain
///   files that an earlier listing read, unchanged since (its modification time, at least
///   2 s old then), whose names all sort at or before `start_after`, is not read again.
/// * Blocking file system calls run on tokio's blocking pool (`spawn_blocking`), so this
///   must be used inside a tokio runtime (or through [`BlockingStore`](crate::BlockingStore)).
/// * Transient I/O errors are retried as [`LocalRetry`] says.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    pub(crate) root: PathBuf,
    pub(crate) retry: LocalRetry,
    pub(crate) read: ReadOptions,
    pub(crate) sync: LocalSync,
    pub(crate) stamps: FolderStamps,
    /// Counts the times this store (and its clones) looked for or made a change: listings,
    /// `exists`, puts, publishes of staged puts and deletes. An opened object checks that
    /// it still has a name only when this moved since its last check (see [`LocalObject`]).
    pub(crate) looks: Arc<AtomicU64>,
}

/// What a local `put` does before it returns, beyond the atomic rename.
///
/// Both keep the guarantee that readers see no partial file and that a killed process leaves
/// only whole files (the page cache outlives the process). They differ after a power loss or
/// kernel crash: only [`LocalSync::Fsync`] guarantees that a completed put is still there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LocalSync {
    /// fsync the file before the rename and the folder after it (the default).
    #[default]
    Fsync,
    /// Rename only, as Python smdebug's writer does: no wait for the disk on each of the two
    /// files a writer publishes per step, at the cost of durability across power loss.
    RenameOnly,
}

impl LocalStorage {
    /// A store rooted at `root`, which need not exist yet (the first put creates it).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalStorage {
            root: root.into(),
            retry: LocalRetry::default(),
            // Local reads are cheap: only merge ranges that (almost) touch.
            read: ReadOptions {
                coalesce_gap: Some(4096),
                ..ReadOptions::default()
            },
            sync: LocalSync::default(),
            stamps: FolderStamps::default(),
            looks: Arc::default(),
        }
    }

    /// Replaces what `put` does before returning (see [`LocalSync`]).
    pub fn with_sync(mut self, sync: LocalSync) -> Self {
        self.sync = sync;
        self
    }

    /// Replaces the retry policy for transient I/O errors.
    pub fn with_retry(mut self, retry: LocalRetry) -> Self {
        self.retry = retry;
        self
    }

    /// Replaces how [`Storage::get_ranges`] merges and parallelises reads.
    pub fn with_read_options(mut self, read: ReadOptions) -> Self {
        self.read = read;
        self
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Called after each listing, `exists`, put, publish and delete (see `looks`).
    pub(crate) fn looked(&self) {
        self.looks.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn path(&self, key: &str) -> PathBuf {
        // Safe: validate_key rejected everything that could leave the root.
        self.root.join(key)
    }

    pub(crate) fn io_error(&self, op: Operation, key: &str, source: io::Error) -> StorageError {
        if source.kind() == io::ErrorKind::NotFound
            && matches!(op, Operation::Get | Operation::GetRange)
        {
            return StorageError::NotFound {
                op,
                location: self.location(),
                key: key.to_owned(),
            };
        }
        StorageError::Io {
            op,
            location: self.location(),
            key: key.to_owned(),
            source,
        }
    }

    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| StorageError::Runtime {
                reason: format!("local storage task of {} failed: {e}", self.location()),
            })
    }
}

/// Missing, or a path component is a file rather than a folder.
pub(crate) fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}
