//! The local filesystem backend.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::{Operation, Result, StorageError};
use crate::key::{invalid, prefix_dir, validate_key, validate_prefix};
use crate::ranges::{check_ranges, first_out_of_bounds, plan, ReadOptions};
use crate::retry::LocalRetry;
use crate::stamps::{FolderStamps, Version};
use crate::{ObjectMeta, StagedPut, Storage, SyncObject, SyncStorage};
use std::sync::{Arc, Mutex};

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
    root: PathBuf,
    retry: LocalRetry,
    read: ReadOptions,
    sync: LocalSync,
    stamps: FolderStamps,
    /// Counts the times this store (and its clones) looked for or made a change: listings,
    /// `exists`, puts, publishes of staged puts and deletes. An opened object checks that
    /// it still has a name only when this moved since its last check (see [`LocalObject`]).
    looks: Arc<AtomicU64>,
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
    /// Rename only, as Python smdebug's writer does: many times faster for a writer that
    /// publishes two files per step, at the cost of durability across power loss.
    RenameOnly,
}

/// Makes temporary names unique among the puts of this process (the pid separates processes).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

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
    fn looked(&self) {
        self.looks.fetch_add(1, Ordering::Release);
    }

    fn path(&self, key: &str) -> PathBuf {
        // Safe: validate_key rejected everything that could leave the root.
        self.root.join(key)
    }

    fn io_error(&self, op: Operation, key: &str, source: io::Error) -> StorageError {
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

    async fn blocking<T: Send + 'static>(
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

#[async_trait]
impl Storage for LocalStorage {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    async fn list(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let (me, p, s) = (
            self.clone(),
            prefix.to_owned(),
            start_after.map(str::to_owned),
        );
        self.blocking(move || me.list_sync(&p, s.as_deref()))
            .await?
    }

    async fn list_until(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let (me, p, s, e) = (
            self.clone(),
            prefix.to_owned(),
            start_after.map(str::to_owned),
            end.map(str::to_owned),
        );
        self.blocking(move || me.list_until_sync(&p, s.as_deref(), e.as_deref()))
            .await?
    }

    async fn list_keys(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        let (me, p, s, e) = (
            self.clone(),
            prefix.to_owned(),
            start_after.map(str::to_owned),
            end.map(str::to_owned),
        );
        self.blocking(move || me.list_keys_sync(&p, s.as_deref(), e.as_deref()))
            .await?
    }

    async fn list_folders(&self, dir: &str) -> Result<Vec<String>> {
        let (me, d) = (self.clone(), dir.to_owned());
        self.blocking(move || me.list_folders_sync(&d)).await?
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.get_sync(&k)).await?
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.get_range_sync(&k, range)).await?
    }

    async fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        validate_key(key)?;
        let (me, k, r) = (self.clone(), key.to_owned(), ranges.to_vec());
        self.blocking(move || me.get_ranges_sync(&k, &r)).await?
    }

    async fn put(&self, key: &str, data: Bytes) -> Result<()> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.put_sync(&k, data)).await?
    }

    async fn exists(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.exists_sync(&k)).await?
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.delete_sync(&k)).await?
    }

    fn as_sync(&self) -> Option<&dyn SyncStorage> {
        Some(self)
    }
}

impl SyncStorage for LocalStorage {
    fn put_sync(&self, key: &str, data: Bytes) -> Result<()> {
        writable_key(key)?;
        let path = self.path(key);
        let put = self
            .retry
            .run(|| put_blocking(&path, &data, self.sync))
            .map_err(|e| self.io_error(Operation::Put, key, e));
        self.looked();
        put
    }

    fn stage_sync(&self, key: &str, data: Bytes) -> Result<StagedPut> {
        writable_key(key)?;
        let path = self.path(key);
        let file = self
            .retry
            .run(|| stage_blocking(&path, &data, self.sync))
            .map_err(|e| self.io_error(Operation::Put, key, e))?;
        Ok(StagedPut::written(
            key,
            StagedFile {
                file,
                retry: self.retry.clone(),
                location: self.location(),
                looks: Arc::clone(&self.looks),
            },
        ))
    }

    fn exists_sync(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        let path = self.path(key);
        let exists = self
            .retry
            .run(|| match fs::metadata(&path) {
                Ok(m) => Ok(m.is_file()),
                Err(e) if is_absent(&e) => Ok(false),
                Err(e) => Err(e),
            })
            .map_err(|e| self.io_error(Operation::Exists, key, e));
        self.looked();
        exists
    }

    fn delete_sync(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let path = self.path(key);
        let deleted = self
            .retry
            .run(|| match fs::remove_file(&path) {
                Err(e) if is_absent(&e) => Ok(()),
                other => other,
            })
            .map_err(|e| self.io_error(Operation::Delete, key, e));
        self.looked();
        deleted
    }

    fn list_sync(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let listed = self
            .retry
            .run(|| list_blocking(&self.root, prefix, start_after, None, true, &self.stamps))
            .map_err(|e| self.io_error(Operation::List, prefix, e));
        self.looked();
        listed
    }

    fn list_until_sync(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let listed = self
            .retry
            .run(|| list_blocking(&self.root, prefix, start_after, end, true, &self.stamps))
            .map_err(|e| self.io_error(Operation::List, prefix, e));
        self.looked();
        listed
    }

    fn list_keys_sync(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<String>> {
        validate_prefix(prefix)?;
        let listed = self
            .retry
            .run(|| list_blocking(&self.root, prefix, start_after, end, false, &self.stamps))
            .map_err(|e| self.io_error(Operation::List, prefix, e));
        self.looked();
        let listed = listed?;
        Ok(listed.into_iter().map(|o| o.key).collect())
    }

    fn list_folders_sync(&self, dir: &str) -> Result<Vec<String>> {
        crate::validate_folder(dir)?;
        let listed = self
            .retry
            .run(|| folders_blocking(&self.root, dir))
            .map_err(|e| self.io_error(Operation::List, dir, e));
        self.looked();
        listed
    }

    fn get_sync(&self, key: &str) -> Result<Bytes> {
        validate_key(key)?;
        let path = self.path(key);
        self.retry
            .run(|| fs::read(&path))
            .map(Bytes::from)
            .map_err(|e| self.io_error(Operation::Get, key, e))
    }

    fn get_range_sync(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        Ok(self
            .get_ranges_sync(key, std::slice::from_ref(&range))?
            .pop()
            .unwrap_or_default())
    }

    fn open_sync(&self, key: &str) -> Result<Arc<dyn SyncObject>> {
        validate_key(key)?;
        let path = self.path(key);
        let file = self
            .retry
            .run(|| open_object(&path))
            .map_err(|e| self.io_error(Operation::Get, key, e))?;
        Ok(Arc::new(LocalObject {
            store: self.clone(),
            key: key.to_owned(),
            file,
            checked: Mutex::new(None),
        }))
    }

    /// One open file for all ranges; merged as the store's [`ReadOptions`] say, read one
    /// after the other (from the page cache, parallel reads of one file gain nothing).
    fn get_ranges_sync(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        validate_key(key)?;
        check_ranges(|| self.location(), key, ranges)?;
        let plan = plan(ranges, &self.read);
        let path = self.path(key);
        let read = self
            .retry
            .run(|| read_ranges(&path, &plan.fetches))
            .map_err(|e| self.io_error(Operation::GetRange, key, e))?;
        match read {
            Ok(fetched) => Ok(plan.slice(ranges, &fetched)),
            Err(size) => Err(StorageError::RangeOutOfBounds {
                op: Operation::GetRange,
                location: self.location(),
                key: key.to_owned(),
                range: first_out_of_bounds(ranges, size).unwrap_or_default(),
                size,
            }),
        }
    }
}

/// Missing, or a path component is a file rather than a folder.
fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Reads `fetches` from one open file; `Ok(Err(size))` when one reaches beyond its end.
fn read_ranges(
    path: &Path,
    fetches: &[Range<u64>],
) -> io::Result<std::result::Result<Vec<Bytes>, u64>> {
    let file = open_object(path)?;
    let size = file.metadata()?.len();
    if fetches.iter().any(|r| r.end > size) {
        return Ok(Err(size));
    }
    read_fetches(&file, fetches).map(Ok)
}

/// Reads each of `fetches` from `file` with positional reads; a range past the file's end
/// is [`io::ErrorKind::UnexpectedEof`] (callers check the size first, so only a file cut
/// short meanwhile gets there).
fn read_fetches(file: &File, fetches: &[Range<u64>]) -> io::Result<Vec<Bytes>> {
    fetches
        .iter()
        .map(|range| {
            // Bounded by the file's size, which the caller checked.
            read_vec_at(file, (range.end - range.start) as usize, range.start).map(Bytes::from)
        })
        .collect()
}

/// A key a put or a staged put may write: valid, and not named as the temporary files of
/// writes in progress are.
fn writable_key(key: &str) -> Result<()> {
    validate_key(key)?;
    if key.ends_with(TEMP_SUFFIX) {
        return Err(invalid(
            key,
            "ends with .tmp, which marks files being written on local disk",
        ));
    }
    Ok(())
}

fn put_blocking(path: &Path, data: &[u8], sync: LocalSync) -> io::Result<()> {
    stage_blocking(path, data, sync)?.publish()
}

/// A file written (and with [`LocalSync::Fsync`], synced) under its temporary name beside
/// `path`, not yet renamed over it. Dropped unpublished, the temporary file is removed.
#[derive(Debug)]
struct Temporary {
    tmp: PathBuf,
    path: PathBuf,
    sync: LocalSync,
    /// Renamed (nothing left to remove).
    published: bool,
}

impl Temporary {
    /// Renames the file over its target (and with [`LocalSync::Fsync`] syncs the folder).
    /// A failed attempt may be repeated.
    fn publish_once(&mut self) -> io::Result<()> {
        if !self.published {
            fs::rename(&self.tmp, &self.path)?;
            self.published = true;
        }
        match self.sync {
            LocalSync::Fsync => sync_dir(self.path.parent().unwrap_or(Path::new("."))),
            LocalSync::RenameOnly => Ok(()),
        }
    }

    fn publish(mut self) -> io::Result<()> {
        self.publish_once()
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `data` under a new temporary name beside `path` (the first half of a put).
fn stage_blocking(path: &Path, data: &[u8], sync: LocalSync) -> io::Result<Temporary> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("object");
    // A long final name must not make the temporary one exceed the file system's limit.
    let name = match name.char_indices().nth(64) {
        Some((cut, _)) => &name[..cut],
        None => name,
    };
    fs::create_dir_all(parent)?;
    let staged = Temporary {
        tmp: parent.join(format!(
            ".{name}.{}.{}{TEMP_SUFFIX}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        )),
        path: path.to_owned(),
        sync,
        published: false,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staged.tmp)?;
    // From here on, a failure drops `staged`, which removes the temporary file.
    file.write_all(data)?;
    if sync == LocalSync::Fsync {
        file.sync_all()?;
    }
    Ok(staged)
}

/// The local half of a [`StagedPut`]: the temporary file and what its publish needs.
#[derive(Debug)]
pub(crate) struct StagedFile {
    file: Temporary,
    retry: LocalRetry,
    location: String,
    looks: Arc<AtomicU64>,
}

impl StagedFile {
    /// Renames the file over `key`'s (transient errors retried as the store's puts are).
    pub(crate) fn publish(mut self, key: &str) -> Result<()> {
        let published = self
            .retry
            .run(|| self.file.publish_once())
            .map_err(|source| StorageError::Io {
                op: Operation::Put,
                location: self.location.clone(),
                key: key.to_owned(),
                source,
            });
        self.looks.fetch_add(1, Ordering::Release);
        published
    }
}

/// Makes the rename itself durable. Some file systems cannot fsync a folder; that is not a
/// reason to fail a put whose data is already synced.
fn sync_dir(dir: &Path) -> io::Result<()> {
    if cfg!(unix) {
        match File::open(dir).and_then(|d| d.sync_all()) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) => {}
            other => return other,
        }
    }
    Ok(())
}

fn list_blocking(
    root: &Path,
    prefix: &str,
    start_after: Option<&str>,
    end: Option<&str>,
    sizes: bool,
    stamps: &FolderStamps,
) -> io::Result<Vec<ObjectMeta>> {
    let dir = prefix_dir(prefix);
    let mut out = Vec::new();
    let bounds = Bounds {
        prefix,
        start_after,
        end,
        sizes,
        stamps,
    };
    walk(&root.join(dir), dir, &bounds, &mut out)?;
    out.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// What a listing keeps: keys starting with `prefix`, after `start_after`, before `end`;
/// with their sizes when `sizes` (else 0, and a plain file costs no `stat`).
struct Bounds<'a> {
    prefix: &'a str,
    start_after: Option<&'a str>,
    end: Option<&'a str>,
    sizes: bool,
    stamps: &'a FolderStamps,
}

/// The folders directly under `dir` (see [`Storage::list_folders`]): the sub-folders that
/// hold at least one object.
fn folders_blocking(root: &Path, dir: &str) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() => {}
            Ok(_) => continue,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        }
        let sub = format!("{dir}{name}/");
        // A folder counts only when an object lies under it, as on object stores.
        if has_object(&entry.path())? {
            out.push(sub);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Whether any object (a file not being written) lies under `dir`; stops at the first.
fn has_object(dir: &Path) -> io::Result<bool> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        let temp = entry.file_name().to_string_lossy().ends_with(TEMP_SUFFIX);
        if (meta.is_file() && !temp) || (meta.is_dir() && has_object(&path)?) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn walk(dir: &Path, dir_key: &str, bounds: &Bounds, out: &mut Vec<ObjectMeta>) -> io::Result<()> {
    let Bounds {
        prefix,
        start_after,
        end,
        sizes,
        stamps,
    } = *bounds;
    let listed_at = std::time::SystemTime::now();
    let version = match fs::metadata(dir) {
        Ok(meta) => Version::of(&meta),
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    if let (Some(s), Some(v)) = (start_after, &version) {
        if let Some(last) = stamps.last_name(dir, v) {
            // Every key in the folder sorts at or before `start_after`: nothing to list.
            if format!("{dir_key}{last}").as_str() <= s {
                return Ok(());
            }
        }
    }
    // The greatest name while every entry is a plain file; `None` once one is not.
    let mut last: Option<String> = Some(String::new());
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        // The folder was never created or was removed while we walked: nothing in it.
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            tracing::warn!(path = %entry.path().display(), "skipping a file name that is not UTF-8");
            last = None;
            continue;
        };
        let key = format!("{dir_key}{name}");
        let file_type = match entry.file_type() {
            Ok(t) => t,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        if let Some(l) = last.as_mut().filter(|_| file_type.is_file()) {
            if name.as_str() > l.as_str() {
                l.clone_from(&name);
            }
        } else {
            last = None;
        }
        if file_type.is_dir() {
            let sub = format!("{key}/");
            let may_match = sub.starts_with(prefix) || prefix.starts_with(&sub);
            // Every key under `sub` sorts before `start_after` when `start_after` is greater
            // than `sub` without extending it.
            let all_before = start_after.is_some_and(|s| s > sub.as_str() && !s.starts_with(&sub));
            // Every key under `sub` sorts at or after `end` when `sub` does.
            let all_after = end.is_some_and(|e| sub.as_str() >= e);
            if may_match && !all_before && !all_after {
                walk(&entry.path(), &sub, bounds, out)?;
            }
            continue;
        }
        if name.ends_with(TEMP_SUFFIX)
            || !key.starts_with(prefix)
            || start_after.is_some_and(|s| key.as_str() <= s)
            || end.is_some_and(|e| key.as_str() >= e)
        {
            continue;
        }
        if file_type.is_file() && !sizes {
            // The folder entry already says it is a plain file: a names-only listing of a
            // folder of index files is then one directory read, not a `stat` per file.
            out.push(ObjectMeta { key, size: 0 });
            continue;
        }
        // Follows symbolic links; a link to a folder (or a dangling one) is not an object.
        // A plain file is asked relative to the open folder (no walk of the whole path
        // again: a third of listing a folder of index files).
        let meta = if file_type.is_file() {
            entry.metadata()
        } else {
            fs::metadata(entry.path())
        };
        let meta = match meta {
            Ok(m) => m,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        if meta.is_file() {
            out.push(ObjectMeta {
                key,
                size: meta.len(),
            });
        }
    }
    let seen = version
        .filter(|v| v.settled(listed_at))
        .zip(last.filter(|l| !l.is_empty()));
    stamps.remember(dir, seen);
    Ok(())
}

// Objects opened once for many ranged reads (`SyncStorage::open_sync`).

/// Opens `path` for reading; a folder is not an object.
fn open_object(path: &Path) -> io::Result<File> {
    let file = File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a folder, not an object",
        ));
    }
    Ok(file)
}

/// A local file kept open for positional reads: one `pread` per merged range, where a read
/// by key resolves the path, opens, seeks and closes each time.
///
/// Whether the file still has a name (it was not removed, or replaced by a rename over it)
/// and its size are checked with an `fstat` when the store has looked for or made a change
/// since the last check (a listing, `exists`, put, publish or delete through it or a clone),
/// or when a range reaches past the size last seen. A reader learns of another process's
/// changes by listing, and the listing makes its handles check again: between two listings
/// a handle serves the bytes of the file the last one saw, so that a reader's view of its
/// events files moves with its view of the index, not between two of its reads. That
/// `fstat` was as costly as the `pread` of a 40 KB record when every value of a trial was
/// read one call at a time. A file renamed over this one during a read does not change the
/// old file's bytes (objects are replaced whole, never written in place).
#[derive(Debug)]
struct LocalObject {
    store: LocalStorage,
    key: String,
    file: File,
    /// `(the store's looks, the file's size)` at the last check that found it named.
    checked: Mutex<Option<(u64, u64)>>,
}

impl LocalObject {
    fn range_error(&self, ranges: &[Range<u64>], size: u64) -> StorageError {
        StorageError::RangeOutOfBounds {
            op: Operation::GetRange,
            location: self.store.location(),
            key: self.key.clone(),
            range: first_out_of_bounds(ranges, size).unwrap_or_default(),
            size,
        }
    }

    /// The file's current size, or `None` when it no longer has a name (removed, or
    /// replaced by a rename over it): its old bytes are no longer what the key names.
    fn current_size(&self) -> io::Result<Option<u64>> {
        let meta = self.file.metadata()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if meta.nlink() == 0 {
                return Ok(None);
            }
        }
        Ok(Some(meta.len()))
    }
}

impl SyncObject for LocalObject {
    fn key(&self) -> &str {
        &self.key
    }

    fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let io_error = |e| self.store.io_error(Operation::GetRange, &self.key, e);
        check_ranges(|| self.store.location(), &self.key, ranges)?;
        let replaced = || StorageError::Replaced {
            op: Operation::GetRange,
            location: self.store.location(),
            key: self.key.clone(),
        };
        let looks = self.store.looks.load(Ordering::Acquire);
        let last = *self.checked.lock().unwrap_or_else(|p| p.into_inner());
        let size = match last {
            Some((at, size)) if at == looks && first_out_of_bounds(ranges, size).is_none() => size,
            _ => {
                let size = self
                    .current_size()
                    .map_err(io_error)?
                    .ok_or_else(replaced)?;
                // The looks read before the check: a change looked for meanwhile makes the
                // next read check again.
                *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = Some((looks, size));
                size
            }
        };
        if first_out_of_bounds(ranges, size).is_some() {
            return Err(self.range_error(ranges, size));
        }
        let plan = plan(ranges, &self.store.read);
        let fetched = match self
            .store
            .retry
            .run(|| read_fetches(&self.file, &plan.fetches))
        {
            Ok(fetched) => fetched,
            // Truncated since the size was asked: say so with its size now.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                let now = self
                    .current_size()
                    .map_err(io_error)?
                    .ok_or_else(replaced)?;
                return Err(self.range_error(ranges, now));
            }
            Err(e) => return Err(io_error(e)),
        };
        Ok(plan.slice(ranges, &fetched))
    }
}

/// `len` bytes of `file` from `offset` ([`io::ErrorKind::UnexpectedEof`] when it ends first).
///
/// Read into the new buffer's uninitialised capacity: zeroing it first, as a `&mut [u8]` for
/// `read_exact_at` needs, cost as much as the kernel's copy when every value of a trial of
/// large tensors was read (the allocator's zeroing and the page clearing behind it).
#[cfg(unix)]
fn read_vec_at(file: &File, len: usize, mut offset: u64) -> io::Result<Vec<u8>> {
    // Exactly `len` of capacity (`Vec::with_capacity` guarantees it), so that a read never
    // goes past the range.
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        // Reads into the spare capacity and extends the length by what was read.
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => offset += n as u64,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(buf)
}

#[cfg(windows)]
fn read_vec_at(file: &File, len: usize, mut offset: u64) -> io::Result<Vec<u8>> {
    use std::os::windows::fs::FileExt;
    let mut out = vec![0u8; len];
    let mut buf = &mut out[..];
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
