//! The blocking facade for callers without an async runtime (the training thread).

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::error::{Result, StorageError};
use crate::location::{Location, StorageOptions};
use crate::shared_runtime::{RuntimeCell, SHARED};
use crate::{ListOptions, ObjectMeta, StagedPut, Storage};

/// A [`Storage`] with blocking methods, driven by a tokio runtime shared by every
/// `BlockingStore` of the process.
///
/// Operations of stores with synchronous calls ([`Storage::as_sync`], local disk) run
/// directly on the calling thread.
///
/// The shared runtime has two worker threads (named `smdebug-storage`) that drive the I/O
/// of all stores; the calling thread waits for the result, and any number of threads may
/// wait at once. Callers never need a runtime of their own. It is started by the first
/// store without synchronous calls (or the first [`block_on`](Self::block_on) of a local
/// store) and lives as long as the process: opening and dropping many stores starts no
/// thread after the first.
///
/// Calling from inside an async runtime is allowed but blocks the calling thread until the
/// operation is done (it is a blocking API): on a multi-threaded tokio runtime the call
/// goes through [`tokio::task::block_in_place`], so the runtime moves its other tasks to
/// other workers; on a current-thread runtime (where that is impossible) the wait happens
/// on a short-lived helper thread while the runtime's only thread waits for it, so the
/// caller's other tasks pause meanwhile. Async code should prefer
/// [`storage`](Self::storage) and `.await`. Never panics for being called in a runtime, and
/// may be dropped anywhere. A runtime or a helper thread that cannot be started (the
/// process is out of threads) is an error of the call ([`StorageError::Runtime`]), not a
/// panic.
///
/// # Fork
///
/// A child process made by `fork` (Python's `multiprocessing`, PyTorch's `DataLoader`
/// workers) has none of its parent's threads: its first blocking store starts a runtime
/// of its own. A store without synchronous calls that was opened *before* the fork must
/// not be used in the child: its client's pooled connections are driven by tasks of the
/// parent's runtime, which never run in the child, so a request could wait forever. Every
/// call of such a store in the child is [`StorageError::Runtime`] instead; open the
/// location again in the child. Local stores work in both processes.
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
    /// Where the runtime comes from ([`SHARED`]; tests use one that cannot start).
    runtime: &'static RuntimeCell,
    /// The process that opened the store (see "Fork" in the type's docs).
    pid: u32,
}

impl BlockingStore {
    /// Wraps `storage`, starting the shared runtime unless the store has synchronous calls
    /// or the runtime runs already (see the type's docs).
    pub fn new(storage: Arc<dyn Storage>) -> Result<Self> {
        Self::with_runtime(storage, &SHARED)
    }

    /// [`new`](Self::new) with the cell that holds the runtime.
    fn with_runtime(storage: Arc<dyn Storage>, runtime: &'static RuntimeCell) -> Result<Self> {
        if storage.as_sync().is_none() {
            runtime.get()?;
        }
        Ok(BlockingStore {
            storage,
            runtime,
            pid: std::process::id(),
        })
    }

    /// The runtime, started now when the process has none yet; an error for a store
    /// without synchronous calls used in a child forked after it was opened.
    fn runtime(&self) -> Result<&'static Runtime> {
        if self.storage.as_sync().is_none() {
            let pid = std::process::id();
            if pid != self.pid {
                return Err(StorageError::Runtime {
                    reason: format!(
                        "this store was opened in process {} and is used in process {pid} \
                         (a fork): its connections belong to the parent; open it again",
                        self.pid
                    ),
                });
            }
        }
        self.runtime.get()
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

    /// Runs `future` to completion on the shared runtime and returns its output, from any
    /// thread (see the type's docs for calls from inside a runtime).
    ///
    /// The first call of a store with synchronous calls may start the runtime; a runtime
    /// that cannot be started, or (inside a current-thread runtime) a helper thread that
    /// cannot, or a store without synchronous calls used in a forked child, is
    /// [`StorageError::Runtime`] and `future` is not run.
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

    /// See [`Storage::list_opts`].
    pub fn list_opts(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>> {
        match self.storage.as_sync() {
            Some(s) => s.list_opts_sync(prefix, options),
            None => self.block_on(self.storage.list_opts(prefix, options))?,
        }
    }

    /// See [`Storage::list`].
    pub fn list(&self, prefix: &str, start_after: Option<&str>) -> Result<Vec<ObjectMeta>> {
        match self.storage.as_sync() {
            Some(s) => s.list_sync(prefix, start_after),
            None => self.block_on(self.storage.list(prefix, start_after))?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_runtime::start_runtime;

    fn store(name: &str) -> BlockingStore {
        BlockingStore::open(&Location::parse(&format!("memory://blocking-test-{name}")).unwrap())
            .unwrap()
    }

    #[test]
    fn a_local_store_starts_its_runtime_only_when_asked() {
        static LOCAL: RuntimeCell = RuntimeCell::new(start_runtime);
        static EAGER: RuntimeCell = RuntimeCell::new(start_runtime);
        let dir = tempfile::tempdir().unwrap();
        let location = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let s = BlockingStore::with_runtime(location.open().unwrap(), &LOCAL).unwrap();
        s.put("a/b", "xyz".into()).unwrap();
        assert_eq!(s.get("a/b").unwrap(), "xyz");
        assert_eq!(s.list_keys("", None, None).unwrap(), ["a/b"]);
        assert!(!LOCAL.is_started());
        assert_eq!(s.block_on(s.storage().get("a/b")).unwrap().unwrap(), "xyz");
        assert!(LOCAL.is_started());
        let memory = Location::parse("memory://blocking-test-eager").unwrap();
        let _memory = BlockingStore::with_runtime(memory.open().unwrap(), &EAGER).unwrap();
        assert!(EAGER.is_started());
    }

    #[test]
    fn stores_share_one_runtime() {
        let a = store("share-a");
        let b = store("share-b");
        let dir = tempfile::tempdir().unwrap();
        let local =
            BlockingStore::open(&Location::parse(dir.path().to_str().unwrap()).unwrap()).unwrap();
        let runtime = a.runtime().unwrap();
        assert!(std::ptr::eq(runtime, b.runtime().unwrap()));
        assert!(std::ptr::eq(runtime, local.runtime().unwrap()));
        drop(a);
        // Dropping a store leaves the runtime to the others.
        b.put("k", "v".into()).unwrap();
        assert_eq!(b.get("k").unwrap(), "v");
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
        static FAILING: RuntimeCell = RuntimeCell::new(fail);
        let dir = tempfile::tempdir().unwrap();
        let local = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let s = BlockingStore::with_runtime(local.open().unwrap(), &FAILING).unwrap();
        s.put("k", "v".into()).unwrap();
        let err = s.block_on(s.storage().get("k")).unwrap_err();
        assert!(
            matches!(&err, StorageError::Runtime { reason } if reason.contains("no threads")),
            "{err}"
        );
        assert!(!FAILING.is_started());
        assert_eq!(s.get("k").unwrap(), "v");
        // A store that needs the runtime up front fails to open.
        let memory = Location::parse("memory://blocking-test-no-runtime").unwrap();
        assert!(BlockingStore::with_runtime(memory.open().unwrap(), &FAILING).is_err());
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

    #[test]
    fn many_stores_wait_on_the_shared_runtime_at_once() {
        std::thread::scope(|scope| {
            for t in 0..8 {
                scope.spawn(move || {
                    let s = store(&format!("waiters-{t}"));
                    for i in 0..20 {
                        s.put(&format!("{i}"), vec![t as u8; i].into()).unwrap();
                    }
                    assert_eq!(s.list("", None).unwrap().len(), 20);
                    assert_eq!(s.get("7").unwrap(), vec![t as u8; 7]);
                });
            }
        });
    }
}
