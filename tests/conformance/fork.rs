//! S3 stores and `fork` (Python's `multiprocessing`, PyTorch's `DataLoader` workers): a
//! store opened before the fork is a typed error in the child, never a hang on connections
//! that belong to the parent's runtime, and a store opened in the child works.
//!
//! Forking a process with many threads at work (the test harness runs tests in parallel)
//! could copy a lock some thread holds; so the forking test runs alone, in a process of
//! its own: `s3_stores_in_a_forked_child` starts this test binary again for it.

use std::process::Command;
use std::time::{Duration, Instant};

use smdebug_conformance::require_s3_server;
use smdebug_storage::testsuite::in_forked_child;
use smdebug_storage::{BlockingStore, Bytes, Location, StorageError};

fn s3_store(bucket: &str, prefix: &str) -> BlockingStore {
    BlockingStore::open(&Location::parse(&format!("s3://{bucket}/{prefix}")).unwrap()).unwrap()
}

#[test]
fn s3_stores_in_a_forked_child() {
    require_s3_server();
    // `/proc/self/exe` starts this very binary even if its file was replaced since.
    let exe = match std::path::Path::new("/proc/self/exe") {
        p if p.exists() => p.to_path_buf(),
        _ => std::env::current_exe().unwrap(),
    };
    let out = Command::new(&exe)
        .args([
            "--exact",
            "fork::forks_with_an_s3_store_open",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} again: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{stderr}"
    );
}

/// What the child checks; a panic is its failure.
fn in_child(inherited: &BlockingStore, bucket: &str, prefix: &str) {
    let started = Instant::now();
    let err = inherited.get("k").unwrap_err();
    assert!(
        matches!(&err, StorageError::Runtime { reason } if reason.contains("fork")),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the error is immediate"
    );
    let fresh = s3_store(bucket, prefix);
    assert_eq!(fresh.get("k").unwrap(), "parent");
    fresh.put("c", Bytes::from_static(b"child")).unwrap();
}

#[test]
#[ignore = "forks: run alone in its own process by s3_stores_in_a_forked_child"]
fn forks_with_an_s3_store_open() {
    let (_endpoint, bucket) = require_s3_server();
    let prefix = format!("fork-conformance/{}", std::process::id());
    let inherited = s3_store(&bucket, &prefix);
    // Leaves pooled connections in the parent's client.
    inherited.put("k", Bytes::from_static(b"parent")).unwrap();
    assert_eq!(inherited.get("k").unwrap(), "parent");

    // Run alone (above): the other threads are the harness's main thread and the storage
    // runtime's idle workers.
    in_forked_child(Duration::from_secs(60), || {
        in_child(&inherited, &bucket, &prefix)
    });
    // The parent's store still works, and sees the child's put.
    assert_eq!(inherited.get("c").unwrap(), "child");
}
