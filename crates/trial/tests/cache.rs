//! The value cache: a value read twice is read from storage once; `clear_cache` drops what
//! is held, and the next read goes to storage again with the same result.

use async_trait::async_trait;
use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Bytes, Location, ObjectMeta, Storage};
use smdebug_trial::synth::{write_collections, write_step, StepWrite};
use smdebug_trial::{Trial, TrialOptions, Value};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts ranged reads (values); everything else passes through.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Storage>,
    ranged: AtomicUsize,
}

#[async_trait]
impl Storage for Counting {
    fn location(&self) -> String {
        self.inner.location()
    }
    async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
    ) -> smdebug_storage::Result<Vec<ObjectMeta>> {
        self.inner.list(prefix, start_after).await
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

#[test]
fn cached_values_are_read_once_and_clear_cache_drops_them() {
    let url = format!("memory://cache-{}/run", std::process::id());
    let location = Location::parse(&url).unwrap();
    let writer = BlockingStore::open(&location).unwrap();
    write_collections(&writer, "worker_0", 1).unwrap();
    let value = Value::Float32(ArrayD::from_shape_fn(IxDyn(&[3, 2]), |i| i[0] as f32 - 0.5));
    write_step(
        &writer,
        &StepWrite {
            step: 0,
            worker: "worker_0",
            mode: Mode::Train,
            mode_step: 0,
            tensors: &[("w", value.clone())],
            shapes: &[],
        },
    )
    .unwrap();
    let counting = Arc::new(Counting {
        inner: location.open().unwrap(),
        ranged: AtomicUsize::new(0),
    });
    let trial = Trial::from_storage(
        counting.clone(),
        &url,
        "run".into(),
        TrialOptions::default(),
    )
    .unwrap();
    let t = trial.tensor("w").unwrap();
    let reads = || counting.ranged.load(Ordering::SeqCst);

    let first = t.value(0, Mode::Global, None).unwrap();
    assert_eq!(*first, value);
    let after_first = reads();
    assert!(after_first >= 1);
    assert_eq!(*t.value(0, Mode::Global, None).unwrap(), value);
    assert_eq!(
        reads(),
        after_first,
        "the second read is served by the cache"
    );

    trial.clear_cache();
    assert_eq!(*first, value, "a value handed out stays valid");
    assert_eq!(*t.value(0, Mode::Global, None).unwrap(), value);
    assert!(
        reads() > after_first,
        "after clear_cache the value is read again"
    );
}
