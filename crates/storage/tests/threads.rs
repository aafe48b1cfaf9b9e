//! Blocking stores share one runtime: opening many async stores starts a constant number
//! of threads. Its own test binary, so no other test starts threads meanwhile.

use smdebug_storage::{BlockingStore, Location};

/// The threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
#[cfg(target_os = "linux")]
fn many_async_stores_start_a_constant_number_of_threads() {
    const STORES: usize = 200;
    let before = threads();
    let stores: Vec<BlockingStore> = (0..STORES)
        .map(|i| {
            let location = Location::parse(&format!("memory://threads-{i}")).unwrap();
            let store = BlockingStore::open(&location).unwrap();
            assert!(
                store.storage().as_sync().is_none(),
                "the runtime path is used"
            );
            store.put("k", vec![i as u8].into()).unwrap();
            store
        })
        .collect();
    for (i, store) in stores.iter().enumerate() {
        assert_eq!(store.get("k").unwrap(), vec![i as u8]);
    }
    let after = threads();
    eprintln!("threads: {before} before, {after} with {STORES} async stores open");
    // The shared runtime's two workers, and room for a blocking-pool thread or two.
    assert!(
        after <= before + 4,
        "{before} threads before, {after} after"
    );
    drop(stores);
}
