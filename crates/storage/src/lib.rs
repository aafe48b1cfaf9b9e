//! Storage for smdebug trials: the one place where bytes are listed, read and written, on
//! local disk or in an object store (S3, and behind cargo features GCS and Azure; an
//! in-memory store for tests), behind one async trait, [`Storage`].
//!
//! Readers and writers of trials use only this trait, so neither knows where a trial lives.
//! This crate knows nothing about tensors, steps or the trial layout: it moves named bytes.
//!
//! * Keys are relative, `/`-separated and checked by [`validate_key`] on every backend (no
//!   `..`, no absolute paths, no empty components, no NUL or backslash): a hostile key is a
//!   typed [`StorageError::InvalidKey`], never a file outside the trial.
//! * [`Storage::put`] is atomic: a reader sees the old object, no object, or the whole new
//!   one — never a part. On disk: a temporary file in the same folder, `fsync`, `rename`
//!   (the fsyncs can be turned off with [`LocalSync::RenameOnly`]).
//!   On object stores: one PUT.
//! * [`Storage::list_opts`] (and [`Storage::list`] on top of it) returns keys in ascending byte order with an optional exclusive
//!   start-after key, so a reader can poll for new files incrementally.
//! * Transient failures are retried a bounded number of times with backoff; then the error
//!   names the operation, the store and the key.
//! * [`BlockingStore`] is the same API for threads that have no async runtime.
//!
//! ```
//! use smdebug_storage::{BlockingStore, Location};
//!
//! let dir = tempfile::tempdir()?;
//! let location = Location::parse(dir.path().to_str().unwrap())?;
//! let store = BlockingStore::open(&location)?;
//! store.put("index/000000000/000000000001_worker_0.json", b"{}".to_vec().into())?;
//! store.put("training_job_end.ts", smdebug_storage::Bytes::new())?;
//!
//! let keys: Vec<String> = store.list("index/", None)?.into_iter().map(|o| o.key).collect();
//! assert_eq!(keys, ["index/000000000/000000000001_worker_0.json"]);
//! assert_eq!(store.get_range("index/000000000/000000000001_worker_0.json", 1..2)?, "}");
//! assert!(store.exists("training_job_end.ts")?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The async API is the same, on an `Arc<dyn Storage>`:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), smdebug_storage::StorageError> {
//! use smdebug_storage::Location;
//!
//! let store = Location::parse("memory://crate-doc-example")?.open()?;
//! store.put("a/b", "hello world".into()).await?;
//! let parts = store.get_ranges("a/b", &[0..5, 6..11]).await?;
//! assert_eq!(parts, ["hello", "world"]);
//! # Ok(())
//! # }
//! ```
//!
//! # Cargo features
//!
//! * `s3` (default): `s3://` locations (credentials, region and endpoint from the standard
//!   `AWS_*` environment variables; path-style requests with a custom endpoint).
//! * `gcp`: `gs://` locations. `azure`: `az://` locations.
//! * `testsuite` (opt-in): `testsuite`, the behaviour every backend must pass (for the
//!   tests of this crate and of the conformance suite, not for applications).
//!
//! TLS is rustls with the `ring` provider (no `aws-lc-sys` C build). `memory://` and local
//! paths are always available.
#![deny(missing_docs, unsafe_code)]

mod blocking;
mod error;
mod key;
mod local;
mod local_list;
mod local_read;
mod local_store;
mod local_write;
mod location;
mod object;
mod ranges;
mod retry;
mod shared_runtime;
mod staged;
mod stamps;
#[cfg(feature = "testsuite")]
pub mod testsuite;

use std::fmt::Debug;
use std::ops::Range;

use async_trait::async_trait;
pub use blocking::BlockingStore;
/// The byte buffer type of this API (re-exported so callers need not depend on `bytes`).
pub use bytes::Bytes;
pub use error::{Operation, Result, StorageError};
use futures::stream::BoxStream;
pub use key::{validate_key, validate_prefix, MAX_KEY_LEN};
pub use local_store::{LocalStorage, LocalSync};
#[cfg(feature = "http-client")]
pub use location::install_tls_provider;
pub use location::{Location, StorageOptions};
pub use object::{ObjectStorage, ObjectStoreOptions};
pub use ranges::{get_ranges_with, ReadOptions};
pub use retry::LocalRetry;
pub use staged::StagedPut;
use std::sync::Arc;

/// One object found by [`Storage::list_opts`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectMeta {
    /// The key, relative to the store's root.
    pub key: String,
    /// The size in bytes.
    pub size: u64,
}

/// The bounds of a listing ([`Storage::list_opts`]) and what it must say of each object.
///
/// ```
/// use smdebug_storage::ListOptions;
///
/// // Keys after the last one a poller saw, up to the end of one index folder, names only.
/// let options = ListOptions::new()
///     .start_after(Some("index/000000000/000000000009_worker_0.json"))
///     .end(Some("index/000000001/"))
///     .names_only();
/// assert!(options.names_only);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListOptions<'a> {
    /// Only keys strictly greater than this one (exclusive, as S3's `StartAfter`).
    pub start_after: Option<&'a str>,
    /// Only keys strictly less than this one.
    pub end: Option<&'a str>,
    /// The caller reads only the keys: a store may then give a size of 0 rather than look
    /// each object's size up (local disk then reads folders alone, with no `stat` per
    /// file); stores whose listings carry sizes anyway still fill them in.
    pub names_only: bool,
}

impl<'a> ListOptions<'a> {
    /// Everything under the prefix, with sizes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the `start_after` field: only keys strictly greater than `key`.
    pub fn start_after(mut self, key: Option<&'a str>) -> Self {
        self.start_after = key;
        self
    }

    /// Sets the `end` field: only keys strictly less than `key`.
    pub fn end(mut self, key: Option<&'a str>) -> Self {
        self.end = key;
        self
    }

    /// Sets the `names_only` field: the caller reads only the keys.
    pub fn names_only(mut self) -> Self {
        self.names_only = true;
        self
    }
}

/// Named bytes in one place: a local folder, a bucket prefix, or memory.
///
/// Every method validates its key (see [`validate_key`]) before touching anything.
#[async_trait]
pub trait Storage: Send + Sync + Debug {
    /// The store, as a location string (`/path`, `s3://bucket/prefix`, …), for messages.
    fn location(&self) -> String;

    /// Every object whose key starts with `prefix` (a plain string prefix, not a folder:
    /// `index/0` matches `index/000000000/x.json`; `""` matches everything) and lies within
    /// the bounds of `options` (see [`ListOptions`]). The one listing a backend implements:
    /// [`list`](Self::list), [`list_keys`](Self::list_keys),
    /// [`list_folders`](Self::list_folders) and [`list_pages`](Self::list_pages) are
    /// provided on top of it, as object_store's `get`/`get_range` are on its `get_opts`.
    ///
    /// Order guarantee: the result is sorted by key in ascending byte order (the order of
    /// S3's ListObjectsV2), with no duplicates. A poller can therefore pass the last key it
    /// saw as `start_after` and get only keys after it. (Keys that appear later but sort
    /// before `start_after` are not returned; a caller that needs them lists again without
    /// it.) Objects being written are not listed: on disk their temporary files are hidden.
    /// A store that lists in pages stops asking for pages once it reaches `end`, so the cost
    /// is that of the keys in the range, not of everything after `start_after`.
    async fn list_opts(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>>;

    /// [`list_opts`](Self::list_opts) after `start_after` (when given), with sizes and no
    /// upper bound.
    async fn list(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        self.list_opts(prefix, ListOptions::new().start_after(start_after))
            .await
    }

    /// The keys of [`list_opts`](Self::list_opts) between `start_after` and `end`, without
    /// their sizes: what a reader that only needs names asks for. Local disk then reads the
    /// folders alone, with no `stat` of each file (`names_only` of [`ListOptions`]).
    async fn list_keys(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<String>> {
        let options = ListOptions::new()
            .start_after(start_after)
            .end(end)
            .names_only();
        Ok(keys_of(self.list_opts(prefix, options).await?))
    }

    /// The folders directly under `dir` (`""` or a prefix ending in `/`): each distinct
    /// next path component of the keys under it that is followed by more of the path, as
    /// `dir + component + "/"`, sorted, without duplicates. One delimiter listing on object
    /// stores (a request per 1,000 folders), one directory read on disk — so a reader finds
    /// the newest folder without listing the keys inside the others.
    ///
    /// The default derives them from a names-only [`list_opts`](Self::list_opts) of `dir`.
    async fn list_folders(&self, dir: &str) -> Result<Vec<String>> {
        validate_folder(dir)?;
        let listed = self.list_opts(dir, ListOptions::new().names_only()).await?;
        Ok(folders_of(dir, listed))
    }

    /// [`list_opts`](Self::list_opts) (with sizes) as a stream of pages that runs ahead: object stores
    /// request the next page while the caller works on the current one (at most two pages
    /// are buffered), so a caller can start reading the first objects before the listing
    /// ends. Keys arrive in ascending order; the stream ends early at the first error.
    ///
    /// The default yields the whole [`list_opts`](Self::list_opts) as one page.
    fn list_pages(
        self: Arc<Self>,
        prefix: String,
        start_after: Option<String>,
        end: Option<String>,
    ) -> BoxStream<'static, Result<Vec<ObjectMeta>>>
    where
        Self: 'static,
    {
        Box::pin(futures::stream::once(async move {
            let options = ListOptions::new()
                .start_after(start_after.as_deref())
                .end(end.as_deref());
            self.list_opts(&prefix, options).await
        }))
    }

    /// The whole object.
    async fn get(&self, key: &str) -> Result<Bytes>;

    /// Bytes `range.start..range.end` of the object. An empty range (`start == end`,
    /// `start <= size`) gives empty bytes; `end > size` is
    /// [`StorageError::RangeOutOfBounds`], `start > end` is [`StorageError::InvalidRange`].
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes>;

    /// Several ranges of one object, in the order given, each exactly as requested. Close
    /// ranges are fetched as one request and sliced, the requests run concurrently (see
    /// [`ReadOptions`]); errors as for [`get_range`](Self::get_range).
    async fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        get_ranges_with(self, key, ranges, &ReadOptions::default()).await
    }

    /// Stores `data` under `key`, replacing any previous object, atomically: concurrent
    /// readers see either the previous state or all of `data`. When this returns `Ok` the
    /// object is durable (on disk: fsynced file and folder, unless the store was opened with
    /// [`LocalSync::RenameOnly`]); when it returns `Err` the
    /// object may or may not have been replaced, but never partially.
    async fn put(&self, key: &str, data: Bytes) -> Result<()>;

    /// Whether an object exists under exactly `key`.
    async fn exists(&self, key: &str) -> Result<bool>;

    /// Removes the object; removing a missing object is not an error (as on S3).
    async fn delete(&self, key: &str) -> Result<()>;

    /// The same store as plain synchronous calls, when it has them (local disk).
    ///
    /// [`BlockingStore`] then runs every operation on the calling thread: a read from the
    /// page cache or a small put takes microseconds, less than handing it to a runtime
    /// thread and back (two thread wake-ups that, on a busy machine, preempt a training
    /// job's threads); and a reader can spread decoding over threads of its own. `None`
    /// (the default) for stores whose operations are network round trips.
    fn as_sync(&self) -> Option<&dyn SyncStorage> {
        None
    }
}

/// Synchronous operations of a [`Storage`] (see [`Storage::as_sync`]): the same results,
/// guarantees and errors as the async methods of the same name.
pub trait SyncStorage: Send + Sync {
    /// See [`Storage::list_opts`].
    fn list_opts_sync(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>>;
    /// See [`Storage::list`].
    fn list_sync(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        self.list_opts_sync(prefix, ListOptions::new().start_after(start_after))
    }
    /// See [`Storage::list_keys`].
    fn list_keys_sync(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<String>> {
        let options = ListOptions::new()
            .start_after(start_after)
            .end(end)
            .names_only();
        Ok(keys_of(self.list_opts_sync(prefix, options)?))
    }
    /// See [`Storage::list_folders`].
    fn list_folders_sync(&self, dir: &str) -> Result<Vec<String>> {
        validate_folder(dir)?;
        Ok(folders_of(
            dir,
            self.list_opts_sync(dir, ListOptions::new().names_only())?,
        ))
    }
    /// See [`Storage::get`].
    fn get_sync(&self, key: &str) -> Result<Bytes>;
    /// See [`Storage::get_range`].
    fn get_range_sync(&self, key: &str, range: Range<u64>) -> Result<Bytes>;
    /// See [`Storage::get_ranges`].
    fn get_ranges_sync(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>>;
    /// See [`Storage::put`].
    fn put_sync(&self, key: &str, data: Bytes) -> Result<()>;
    /// Writes the object `put_sync(key, data)` would, without making it visible yet (see
    /// [`StagedPut`]; [`BlockingStore::stage`]). The default writes nothing now: the
    /// publish is the whole put. Errors as for [`put_sync`](Self::put_sync).
    fn stage_sync(&self, key: &str, data: Bytes) -> Result<StagedPut> {
        Ok(StagedPut::pending(key, data))
    }
    /// See [`Storage::exists`].
    fn exists_sync(&self, key: &str) -> Result<bool>;
    /// See [`Storage::delete`].
    fn delete_sync(&self, key: &str) -> Result<()>;
    /// Opens the object under `key` once for many ranged reads ([`SyncObject`]): on local
    /// disk the file stays open, so each later read costs one positional read instead of
    /// resolving the path, opening and closing the file again. Errors as for
    /// [`get_sync`](Self::get_sync) (a missing object is [`StorageError::NotFound`]).
    fn open_sync(&self, key: &str) -> Result<Arc<dyn SyncObject>>;
}

/// An object opened once for many ranged reads ([`SyncStorage::open_sync`]).
///
/// It reads the object its key named when its store last looked (a listing, `exists`, or a
/// put or delete through it), or fails: when the object was removed or replaced before that,
/// a read is [`StorageError::Replaced`] (open the key again); when it became shorter than a
/// range, [`StorageError::RangeOutOfBounds`] with its current size. A reader sees another
/// writer's changes by listing, and from then on its handles see them too. Reads through one
/// handle may run from several threads at once.
pub trait SyncObject: Send + Sync + Debug {
    /// The key it was opened under.
    fn key(&self) -> &str;
    /// Several ranges, in the order given, each exactly as requested; results and errors as
    /// for [`SyncStorage::get_ranges_sync`], and [`StorageError::Replaced`] as above.
    fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>>;
}

/// `dir` must be `""` or a valid prefix ending in `/`.
fn validate_folder(dir: &str) -> Result<()> {
    validate_prefix(dir)?;
    if !dir.is_empty() && !dir.ends_with('/') {
        return Err(key::invalid(dir, "a folder must end in '/'"));
    }
    Ok(())
}

/// The keys of a listing, without their sizes.
fn keys_of(objects: Vec<ObjectMeta>) -> Vec<String> {
    objects.into_iter().map(|o| o.key).collect()
}

/// The folders directly under `dir` that the sorted `objects` (all under `dir`) lie in.
fn folders_of(dir: &str, objects: Vec<ObjectMeta>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in objects {
        let Some(rest) = o.key.strip_prefix(dir) else {
            continue;
        };
        if let Some(i) = rest.find('/') {
            let folder = &o.key[..dir.len() + i + 1];
            if out.last().map(String::as_str) != Some(folder) {
                out.push(folder.to_owned());
            }
        }
    }
    out.dedup();
    out
}
