//! Blocking stores in a forked child: the child starts its own runtime, and an async store
//! opened before the fork is an error there, not a hang. Its own test binary, so no other
//! test's thread is in the middle of something when the process forks.

#![cfg(unix)]

use std::time::Duration;

use smdebug_storage::testsuite::in_forked_child;
use smdebug_storage::{BlockingStore, Location, StorageError};

fn open(url: &str) -> BlockingStore {
    BlockingStore::open(&Location::parse(url).unwrap()).unwrap()
}

/// What the child checks; a panic is its failure.
fn in_child(inherited: &BlockingStore, local_dir: &str) {
    let err = inherited.get("k").unwrap_err();
    assert!(
        matches!(&err, StorageError::Runtime { reason } if reason.contains("fork")),
        "{err}"
    );
    // A store opened in the child works: the child starts a runtime of its own (the
    // child begins with the forking thread only).
    #[cfg(target_os = "linux")]
    let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
    #[cfg(target_os = "linux")]
    assert_eq!(threads(), 1);
    let fresh = open("memory://fork-child");
    #[cfg(target_os = "linux")]
    assert_eq!(threads(), 3, "the child's runtime has two workers");
    fresh.put("c", "child".into()).unwrap();
    assert_eq!(fresh.get("c").unwrap(), "child");
    // Local stores work in both processes, also driven asynchronously.
    let local = open(local_dir);
    assert_eq!(local.get("l").unwrap(), "local");
    assert_eq!(
        local.block_on(local.storage().get("l")).unwrap().unwrap(),
        "local"
    );
}

#[test]
fn a_forked_child_starts_its_own_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let local_dir = dir.path().to_str().unwrap().to_owned();
    open(&local_dir).put("l", "local".into()).unwrap();
    let inherited = open("memory://fork-parent");
    inherited.put("k", "v".into()).unwrap();

    // This binary's only test: no other thread is at work (the storage runtime's idle
    // workers hold no lock the child takes).
    in_forked_child(Duration::from_secs(60), || in_child(&inherited, &local_dir));
    // The parent's store and runtime are untouched.
    assert_eq!(inherited.get("k").unwrap(), "v");
}
