//! A storage wrapper for tests that watch what the reader asks of its store.

use async_trait::async_trait;
use smdebug_storage::{BlockingStore, Bytes, ListOptions, Location, ObjectMeta, Storage};
use smdebug_trial::{Trial, TrialOptions};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Passes everything to `inner`, recording each listing of `index/` (start-after, keys
/// returned) and counting ranged reads. Offers no synchronous calls, so the reader goes
/// through the async path.
#[derive(Debug)]
pub struct Spy {
    inner: Arc<dyn Storage>,
    listings: Mutex<Vec<(Option<String>, usize)>>,
    ranged: AtomicUsize,
}

impl Spy {
    pub fn new(inner: Arc<dyn Storage>) -> Arc<Spy> {
        Arc::new(Spy {
            inner,
            listings: Mutex::new(Vec::new()),
            ranged: AtomicUsize::new(0),
        })
    }

    /// Every listing of `index/` so far.
    #[allow(dead_code)] // not every test binary uses every probe
    pub fn index_listings(&self) -> Vec<(Option<String>, usize)> {
        self.listings.lock().unwrap().clone()
    }

    /// Ranged reads so far.
    #[allow(dead_code)]
    pub fn ranged_reads(&self) -> usize {
        self.ranged.load(Ordering::SeqCst)
    }
}

/// A fresh in-memory store for one test, `memory://{name}-{pid}/run`: its URL, its
/// location and a store to write the trial with.
#[allow(dead_code)]
pub fn memory_store(name: &str) -> (String, Location, BlockingStore) {
    let url = format!("memory://{name}-{}/run", std::process::id());
    let location = Location::parse(&url).unwrap();
    let writer = BlockingStore::open(&location).unwrap();
    (url, location, writer)
}

/// The trial at `location` (named `url` in messages), read through a new spy.
pub fn spied_trial(url: &str, location: &Location, options: TrialOptions) -> (Arc<Spy>, Trial) {
    let spy = Spy::new(location.open().unwrap());
    let trial = Trial::from_storage(spy.clone(), url, "run".into(), options).unwrap();
    (spy, trial)
}

#[async_trait]
impl Storage for Spy {
    fn location(&self) -> String {
        self.inner.location()
    }
    async fn list_opts(
        &self,
        prefix: &str,
        options: ListOptions<'_>,
    ) -> smdebug_storage::Result<Vec<ObjectMeta>> {
        let out = self.inner.list_opts(prefix, options).await?;
        if prefix.starts_with("index") {
            self.listings
                .lock()
                .unwrap()
                .push((options.start_after.map(str::to_owned), out.len()));
        }
        Ok(out)
    }
    async fn get(&self, key: &str) -> smdebug_storage::Result<Bytes> {
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> smdebug_storage::Result<Bytes> {
        self.ranged.fetch_add(1, Ordering::SeqCst);
        self.inner.get_range(key, range).await
    }
    async fn put(&self, key: &str, data: Bytes) -> smdebug_storage::Result<()> {
        self.inner.put(key, data).await
    }
    async fn exists(&self, key: &str) -> smdebug_storage::Result<bool> {
        self.inner.exists(key).await
    }
    async fn delete(&self, key: &str) -> smdebug_storage::Result<()> {
        self.inner.delete(key).await
    }
}
