//! The blocking facade for callers without an async runtime (the training thread).

use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::error::{Result, StorageError};
use crate::location::{Location, StorageOptions};
use crate::{ObjectMeta, StagedPut, Storage};

/// A [`Storage`] with blocking methods, driven by a small tokio runtime of its own.
///
/// Operations of stores with synchronous calls ([`Storage::as_sync`], local disk) run
/// directly on the calling thread.
///
/// The runtime has two worker threads (named `smdebug-storage`) that drive the I/O; the
/// calling thread waits for the result. Callers never need a runtime of their own. A store
/// with synchronous calls starts its runtime only when [`block_on`](Self::block_on) is
/// first called: opening many local trials one after the other then starts no thread.
///
/// Calling from inside an async runtime is allowed but blocks the calling thread until the
/// operation is done (it is a blocking API): on a multi-threaded tokio runtime the call
/// goes through [`tokio::task::block_in_place`], so the runtime moves its other tasks to
/// other workers; on a current-thread runtime (where that is impossible) the wait happens
/// on a short-lived helper thread while the runtime's only thread waits for it, so the
/// caller's other tasks pause meanwhile. Async code should prefer
/// [`storage`](Self::storage) and `.await`. Never panics for being called in a runtime, and
/// may be dropped anywhere (its runtime shuts down in the background). A runtime or a
/// helper thread that cannot be started (the process is out of threads) is an error of
/// the call ([`StorageError::Runtime`]), not a panic.
///
/// ```
/// use smdebug_storage::{BlockingStore, Location};
/// let store = BlockingStore::open(&Location::parse("memory://blocking-doc")?)?;
/// store.put("k", "v".into())?;
/// assert_eq!(store.get("k")?, "v");
/// # Ok::<(), smdebug_storage::StorageError>(())
/// ```
#[derive(Debug)]
pub struct BlockingStore {
    storage: Arc<dyn Storage>,
    runtime: OnceLock<Runtime>,
    /// How the runtime is started ([`start_runtime`]; tests make it fail).
    start: fn() -> Result<Runtime>,
}

/// The background runtime of a store.
fn start_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("smdebug-storage")
        .enable_all()
        .build()
        .map_err(|e| StorageError::Runtime {
            reason: format!("cannot start the storage runtime: {e}"),
        })
}

impl BlockingStore {
    /// Wraps `storage`, starting the background runtime unless the store has synchronous
    /// calls (see the type's docs).
    pub fn new(storage: Arc<dyn Storage>) -> Result<Self> {
        Self::with_start(storage, start_runtime)
    }

    /// [`new`](Self::new) with the function that starts the runtime.
    fn with_start(storage: Arc<dyn Storage>, start: fn() -> Result<Runtime>) -> Result<Self> {
        let runtime = OnceLock::new();
        if storage.as_sync().is_none() {
            let _ = runtime.set(start()?);
        }
        Ok(BlockingStore {
            storage,
            runtime,
            start,
        })
    }

    /// The runtime, started now when the store has none yet.
    fn runtime(&self) -> Result<&Runtime> {
        if let Some(runtime) = self.runtime.get() {
            return Ok(runtime);
        }
        // Two threads may start one each: the one not kept shuts down (in the background,
        // as dropping a runtime inside another would panic).
        if let Err(spare) = self.runtime.set((self.start)()?) {
            spare.shutdown_background();
        }
        self.runtime.get().ok_or_else(|| StorageError::Runtime {
            reason: "the storage runtime was not kept".into(),
        })
    }

    /// Opens `location` with default options.
    pub fn open(location: &Location) -> Result<Self> {
        Self::new(location.open()?)
    }

    /// Opens `location` with `options`.
    pub fn open_with(location: &Location, options: &StorageOptions) -> Result<Self> {
        Self::new(location.open_with(options)?)
    }

    /// The async storage underneath (for code that can `.await`).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Runs `future` to completion on this store's runtime and returns its output, from any
    /// thread (see the type's docs for calls from inside a runtime).
    ///
    /// A store with synchronous calls starts its runtime here, the first time; a runtime
    /// that cannot be started, or (inside a current-thread runtime) a helper thread that
    /// cannot, is [`StorageError::Runtime`] and `future` is not run.
    pub fn block_on<F>(&self, future: F) -> Result<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime()?;
        match Handle::try_current() {
            Err(_) => Ok(runtime.block_on(future)),
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                Ok(tokio::task::block_in_place(|| runtime.block_on(future)))
            }
            Ok(_) => std::thread::scope(|scope| {
                let waiter = std::thread::Builder::new()
                    .name("smdebug-storage-wait".into())
                    .spawn_scoped(scope, || runtime.block_on(future))
                    .map_err(|e| StorageError::Runtime {
                        reason: format!("cannot start a helper thread for a blocking call: {e}"),
                    })?;
                match waiter.join() {
                    Ok(output) => Ok(output),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }),
        }
    }

    /// See [`Storage::list`].
    pub fn list(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        match self.storage.as_sync() {
            Some(s) => s.list_sync(prefix, start_after),
            None => self.block_on(self.storage.list(prefix, start_after))?,
        }
    }

    /// See [`Storage::list_until`].
    pub fn list_until(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<ObjectMeta>> {
        match self.storage.as_sync() {
            Some(s) => s.list_until_sync(prefix, start_after, end),
            None => self.block_on(self.storage.list_until(prefix, start_after, end))?,
        }
    }

    /// See [`Storage::list_keys`].
    pub fn list_keys(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<Vec<String>> {
        match self.storage.as_sync() {
            Some(s) => s.list_keys_sync(prefix, start_after, end),
            None => self.block_on(self.storage.list_keys(prefix, start_after, end))?,
        }
    }

    /// See [`Storage::list_folders`].
    pub fn list_folders(&self, dir: &str) -> Result<Vec<String>> {
        match self.storage.as_sync() {
            Some(s) => s.list_folders_sync(dir),
            None => self.block_on(self.storage.list_folders(dir))?,
        }
    }

    /// See [`Storage::get`].
    pub fn get(&self, key: &str) -> Result<Bytes> {
        match self.storage.as_sync() {
            Some(s) => s.get_sync(key),
            None => self.block_on(self.storage.get(key))?,
        }
    }

    /// See [`Storage::get_range`].
    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        match self.storage.as_sync() {
            Some(s) => s.get_range_sync(key, range),
            None => self.block_on(self.storage.get_range(key, range))?,
        }
    }

    /// See [`Storage::get_ranges`].
    pub fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        match self.storage.as_sync() {
            Some(s) => s.get_ranges_sync(key, ranges),
            None => self.block_on(self.storage.get_ranges(key, ranges))?,
        }
    }

    /// See [`Storage::put`].
    pub fn put(&self, key: &str, data: Bytes) -> Result<()> {
        match self.storage.as_sync() {
            Some(s) => s.put_sync(key, data),
            None => self.block_on(self.storage.put(key, data))?,
        }
    }

    /// Writes the object [`put`](Self::put) would, without making it visible under `key`
    /// yet; [`publish`](Self::publish) does. Puts that must become visible in a fixed order
    /// can so be written by several threads at once and published in order. On local disk
    /// the bytes go to a temporary file now (errors as for `put`); other stores write
    /// nothing before the publish. See [`StagedPut`].
    pub fn stage(&self, key: &str, data: Bytes) -> Result<StagedPut> {
        match self.storage.as_sync() {
            Some(s) => s.stage_sync(key, data),
            None => Ok(StagedPut::pending(key, data)),
        }
    }

    /// Makes a put staged by [`stage`](Self::stage) of this store visible, atomically: a
    /// rename on local disk (with the folder synced when the store fsyncs its puts), the
    /// whole put elsewhere. Errors as for [`put`](Self::put).
    pub fn publish(&self, staged: StagedPut) -> Result<()> {
        staged.publish_with(|key, data| self.put(key, data))
    }

    /// See [`Storage::exists`].
    pub fn exists(&self, key: &str) -> Result<bool> {
        match self.storage.as_sync() {
            Some(s) => s.exists_sync(key),
            None => self.block_on(self.storage.exists(key))?,
        }
    }

    /// See [`Storage::delete`].
    pub fn delete(&self, key: &str) -> Result<()> {
        match self.storage.as_sync() {
            Some(s) => s.delete_sync(key),
            None => self.block_on(self.storage.delete(key))?,
        }
    }
}

impl Drop for BlockingStore {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which panics inside another runtime;
        // shutting down in the background is allowed everywhere.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str) -> BlockingStore {
        BlockingStore::open(&Location::parse(&format!("memory://blocking-test-{name}")).unwrap())
            .unwrap()
    }

    #[test]
    fn a_local_store_starts_its_runtime_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let s = BlockingStore::open(&location).unwrap();
        s.put("a/b", "xyz".into()).unwrap();
        assert_eq!(s.get("a/b").unwrap(), "xyz");
        assert_eq!(s.list_keys("", None, None).unwrap(), ["a/b"]);
        assert!(s.runtime.get().is_none());
        assert_eq!(s.block_on(s.storage().get("a/b")).unwrap().unwrap(), "xyz");
        assert!(s.runtime.get().is_some());
        let memory = store("eager");
        assert!(memory.runtime.get().is_some());
    }

    /// A local store whose runtime cannot be started: its synchronous calls work, and
    /// driving it asynchronously is an error of the call, not a panic.
    #[test]
    fn a_runtime_that_cannot_start_is_an_error() {
        fn fail() -> Result<Runtime> {
            Err(StorageError::Runtime {
                reason: "cannot start the storage runtime: no threads left".into(),
            })
        }
        let dir = tempfile::tempdir().unwrap();
        let local = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let s = BlockingStore::with_start(local.open().unwrap(), fail).unwrap();
        s.put("k", "v".into()).unwrap();
        let err = s.block_on(s.storage().get("k")).unwrap_err();
        assert!(
            matches!(&err, StorageError::Runtime { reason } if reason.contains("no threads")),
            "{err}"
        );
        assert!(s.runtime.get().is_none());
        assert_eq!(s.get("k").unwrap(), "v");
        // A store that needs the runtime up front fails to open.
        let memory = Location::parse("memory://blocking-test-no-runtime").unwrap();
        assert!(BlockingStore::with_start(memory.open().unwrap(), fail).is_err());
    }

    #[test]
    fn works_without_a_runtime() {
        let s = store("plain");
        s.put("a/b", "xyz".into()).unwrap();
        assert_eq!(s.get_range("a/b", 1..3).unwrap(), "yz");
        assert_eq!(s.list("", None).unwrap().len(), 1);
        s.delete("a/b").unwrap();
        assert!(!s.exists("a/b").unwrap());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn works_inside_a_current_thread_runtime() {
        let s = store("current");
        s.put("k", "v".into()).unwrap();
        assert_eq!(s.get("k").unwrap(), "v");
        // The caller's runtime still works afterwards, and dropping here does not panic.
        tokio::task::yield_now().await;
        drop(s);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn works_inside_a_multi_thread_runtime() {
        let s = store("multi");
        s.put("k", "v".into()).unwrap();
        let h = tokio::spawn(async { 1 + 1 });
        assert_eq!(s.get("k").unwrap(), "v");
        assert_eq!(h.await.unwrap(), 2);
        drop(s);
    }

    #[test]
    fn works_from_spawn_blocking() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let s = Arc::new(store("spawn-blocking"));
        let s2 = s.clone();
        rt.block_on(async move {
            tokio::task::spawn_blocking(move || s2.put("k", "v".into()))
                .await
                .unwrap()
                .unwrap();
        });
        assert!(s.exists("k").unwrap());
    }

    #[test]
    fn works_from_spawn_blocking_of_a_multi_thread_runtime() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let s = Arc::new(store("spawn-blocking-multi"));
        let s2 = s.clone();
        rt.block_on(async move {
            tokio::task::spawn_blocking(move || s2.put("k", "v".into()))
                .await
                .unwrap()
                .unwrap();
        });
        assert!(s.exists("k").unwrap());
    }

    #[test]
    fn nested_calls_on_its_own_runtime_do_not_panic() {
        let s = store("nested");
        s.put("k", "v".into()).unwrap();
        let inner = s.block_on(async { s.get("k") }).unwrap().unwrap();
        assert_eq!(inner, "v");
    }

    #[test]
    fn usable_from_many_threads() {
        let s = Arc::new(store("threads"));
        std::thread::scope(|scope| {
            for t in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..20 {
                        s.put(&format!("t{t}/{i}"), vec![t as u8; i].into())
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(s.list("", None).unwrap().len(), 80);
        assert_eq!(s.get("t3/5").unwrap(), vec![3u8; 5]);
    }
}
