//! The behaviour every [`Storage`] backend must have, as one async function per behaviour.
//!
//! This crate runs the suite on local disk and in memory; the project's conformance suite
//! runs it against a real S3-compatible server. Each function expects an **empty** store of
//! its own (for example a fresh folder or a fresh bucket prefix) and panics, like an
//! assertion, when the backend misbehaves. [`ALL`] lists them by name.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use smdebug_storage::{testsuite, Location};
//! let store = Location::parse("memory://testsuite-doc").unwrap().open().unwrap();
//! testsuite::delete_and_exists(store.as_ref()).await;
//! # }
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use futures::future::join_all;

use crate::{ListOptions, Storage, StorageError};

/// Size of the large object of [`large_object`]: a little over 64 MiB, so neither the size
/// nor the end falls on a power of two.
pub const LARGE_OBJECT_LEN: usize = 64 * 1024 * 1024 + 12_345;

/// Calls the macro `m` with every behaviour of this suite appended to its arguments as a
/// bracketed list of names: `for_each_behaviour!(m! { args })` expands to
/// `m! { args [list_order_and_start_after, list_by_prefix, …] }`. A backend's test file
/// defines `m` to make one test per name, so that it runs every behaviour, a new one
/// included, without naming them (the list is written here only).
///
/// ```
/// macro_rules! count {
///     ($($name:ident),*) => { [$(stringify!($name)),*].len() };
///     ([$($name:ident),*]) => { count!($($name),*) };
/// }
/// assert_eq!(
///     smdebug_storage::for_each_behaviour!(count! {}),
///     smdebug_storage::testsuite::ALL.len()
/// );
/// ```
#[macro_export]
macro_rules! for_each_behaviour {
    ($m:ident ! { $($args:tt)* }) => {
        $m! { $($args)* [
            list_order_and_start_after,
            list_by_prefix,
            get_and_overwrite,
            ranged_reads_at_edges,
            many_ranged_reads,
            empty_objects,
            large_object,
            concurrent_writers,
            atomic_put_seen_whole_by_concurrent_reader,
            delete_and_exists,
            hostile_keys_are_refused,
            bounded_listings_and_folders
        ] }
    };
}

macro_rules! names {
    ([$($name:ident),*]) => {
        &[$(stringify!($name)),*]
    };
}

/// The names of the behaviours of this suite, in the order they are defined.
pub const ALL: &[&str] = for_each_behaviour!(names! {});

/// Deterministic bytes that differ at every offset of a short period, so a shifted or
/// truncated read cannot compare equal.
pub fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i.wrapping_mul(31) % 251) as u8 ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

async fn keys(store: &dyn Storage, prefix: &str, start_after: Option<&str>) -> Vec<String> {
    store
        .list(prefix, start_after)
        .await
        .unwrap_or_else(|e| panic!("list({prefix:?}, {start_after:?}): {e}"))
        .into_iter()
        .map(|o| o.key)
        .collect()
}

/// Keys come back in ascending byte order whatever the folder structure on disk, and
/// `start_after` is exclusive, needs not be an existing key, and combines with a prefix.
pub async fn list_order_and_start_after(store: &dyn Storage) {
    // '-' < '/' < '0' < 'Z' < 'a' < 'ä': "a/x" must sort between "a-1" and "a0".
    let written = ["b/2", "ä", "a0", "c/d/e", "b/10", "a/x", "Z", "a-1", "b/1"];
    for (i, k) in written.iter().enumerate() {
        store.put(k, pattern(i, i as u8)).await.unwrap();
    }
    let sorted = ["Z", "a-1", "a/x", "a0", "b/1", "b/10", "b/2", "c/d/e", "ä"];
    assert_eq!(keys(store, "", None).await, sorted);
    for (i, k) in sorted.iter().enumerate() {
        assert_eq!(
            keys(store, "", Some(k)).await,
            sorted[i + 1..],
            "start_after {k:?}"
        );
    }
    assert_eq!(keys(store, "", Some("")).await, sorted);
    assert_eq!(keys(store, "", Some("a.")).await, sorted[2..]);
    assert_eq!(keys(store, "", Some("b")).await, sorted[4..]);
    assert_eq!(keys(store, "", Some("b/")).await, sorted[4..]);
    assert_eq!(keys(store, "", Some("zzz")).await, ["ä"]);
    assert!(keys(store, "", Some("ä")).await.is_empty());
    assert_eq!(keys(store, "b/", Some("b/10")).await, ["b/2"]);
    assert_eq!(keys(store, "b/", Some("a")).await, ["b/1", "b/10", "b/2"]);
    assert!(keys(store, "b/", Some("c")).await.is_empty());
    let sizes: Vec<u64> = store
        .list("b/", None)
        .await
        .unwrap()
        .iter()
        .map(|o| o.size)
        .collect();
    assert_eq!(sizes, [8, 4, 0], "sizes of b/1, b/10, b/2");
}

/// Prefixes are plain string prefixes, not folders.
pub async fn list_by_prefix(store: &dyn Storage) {
    for k in [
        "a-1", "a/x", "a0", "b/1", "b/10", "b/2", "bb/1", "c/d/e", "c/de",
    ] {
        store.put(k, Bytes::from_static(b"x")).await.unwrap();
    }
    let cases: &[(&str, &[&str])] = &[
        ("a", &["a-1", "a/x", "a0"]),
        ("a/", &["a/x"]),
        ("b/", &["b/1", "b/10", "b/2"]),
        ("b/1", &["b/1", "b/10"]),
        ("b", &["b/1", "b/10", "b/2", "bb/1"]),
        ("c/d", &["c/d/e", "c/de"]),
        ("c/d/", &["c/d/e"]),
        ("c/d/e", &["c/d/e"]),
        ("nope/", &[]),
        ("b/3", &[]),
        ("c/d/e/f", &[]),
    ];
    for (prefix, want) in cases {
        assert_eq!(keys(store, prefix, None).await, *want, "prefix {prefix:?}");
    }
}

/// Whole reads, overwrites (also with shorter content), missing keys.
pub async fn get_and_overwrite(store: &dyn Storage) {
    let err = store.get("missing").await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    store.put("k/v", pattern(1000, 1)).await.unwrap();
    assert_eq!(store.get("k/v").await.unwrap(), pattern(1000, 1));
    store.put("k/v", pattern(10, 2)).await.unwrap();
    assert_eq!(store.get("k/v").await.unwrap(), pattern(10, 2));
    assert_eq!(store.list("", None).await.unwrap().len(), 1);
}

fn assert_out_of_bounds(r: Result<Bytes, StorageError>, want: Range<u64>, size: u64) {
    match r {
        Err(StorageError::RangeOutOfBounds { range, size: s, .. }) => {
            assert_eq!((range, s), (want, size))
        }
        other => panic!("range {want:?}: expected RangeOutOfBounds, got {other:?}"),
    }
}

/// Empty ranges anywhere up to the end, reads to the end, past the end, inverted ranges.
pub async fn ranged_reads_at_edges(store: &dyn Storage) {
    let data = pattern(1000, 3);
    store.put("r", data.clone()).await.unwrap();
    for r in [
        0..0,
        500..500,
        1000..1000,
        0..1000,
        0..1,
        999..1000,
        990..1000,
        123..456,
    ] {
        let got = store.get_range("r", r.clone()).await.unwrap();
        assert_eq!(
            got,
            data.slice(r.start as usize..r.end as usize),
            "range {r:?}"
        );
    }
    for r in [1001..1001, 990..1001, 999..2000, 1000..1001, 2000..3000] {
        assert_out_of_bounds(store.get_range("r", r.clone()).await, r, 1000);
    }
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = 10..5;
    match store.get_range("r", inverted).await {
        Err(StorageError::InvalidRange { .. }) => {}
        other => panic!("inverted range: expected InvalidRange, got {other:?}"),
    }
    for r in [0..0, 0..10] {
        let err = store.get_range("missing", r).await.unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }
}

/// `get_ranges` returns exactly the requested slices, in request order, whatever their
/// overlap, order, duplicates or emptiness; one range past the end fails the call and is named.
pub async fn many_ranged_reads(store: &dyn Storage) {
    let len = 200_000u64;
    let data = pattern(len as usize, 4);
    store.put("m", data.clone()).await.unwrap();
    // A small linear congruential generator: deterministic, no dependency.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |bound: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % bound
    };
    let mut ranges: Vec<Range<u64>> = (0..300)
        .map(|_| {
            let start = next(len);
            let end = (start + next(3000)).min(len);
            start..end
        })
        .collect();
    ranges.extend([0..0, len..len, 0..len, 5..10, 5..10, len - 1..len]);
    let got = store.get_ranges("m", &ranges).await.unwrap();
    assert_eq!(got.len(), ranges.len());
    for (r, g) in ranges.iter().zip(&got) {
        assert_eq!(
            *g,
            data.slice(r.start as usize..r.end as usize),
            "range {r:?}"
        );
    }
    assert!(store.get_ranges("m", &[]).await.unwrap().is_empty());
    match store
        .get_ranges("m", &[0..10, len - 5..len + 5, 20..30])
        .await
    {
        Err(StorageError::RangeOutOfBounds { range, size, .. }) => {
            assert_eq!((range, size), (len - 5..len + 5, len))
        }
        other => panic!("expected RangeOutOfBounds, got {other:?}"),
    }
    let err = store
        .get_ranges("missing", std::slice::from_ref(&(0..1)))
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

/// Zero-byte objects (the `training_job_end.ts` marker) exist, list with size 0 and read empty.
pub async fn empty_objects(store: &dyn Storage) {
    store
        .put("training_job_end.ts", Bytes::new())
        .await
        .unwrap();
    assert!(store.exists("training_job_end.ts").await.unwrap());
    assert!(store.get("training_job_end.ts").await.unwrap().is_empty());
    assert!(store
        .get_range("training_job_end.ts", 0..0)
        .await
        .unwrap()
        .is_empty());
    assert_out_of_bounds(store.get_range("training_job_end.ts", 0..1).await, 0..1, 0);
    let listed = store.list("", None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].key.as_str(), listed[0].size),
        ("training_job_end.ts", 0)
    );
}

/// An object of [`LARGE_OBJECT_LEN`] bytes round-trips whole and by ranges.
pub async fn large_object(store: &dyn Storage) {
    let data = pattern(LARGE_OBJECT_LEN, 5);
    let len = LARGE_OBJECT_LEN as u64;
    store.put("big/object", data.clone()).await.unwrap();
    let listed = store.list("big/", None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].size, len);
    let got = store.get("big/object").await.unwrap();
    assert!(
        got == data,
        "large object differs (got {} bytes)",
        got.len()
    );
    let ranges = [0..1, len / 2 - 7..len / 2 + 1_000_003, len - 1_048_576..len];
    let parts = store.get_ranges("big/object", &ranges).await.unwrap();
    for (r, p) in ranges.iter().zip(parts) {
        assert!(
            p == data.slice(r.start as usize..r.end as usize),
            "range {r:?}"
        );
    }
    assert_out_of_bounds(
        store.get_range("big/object", len - 1..len + 1).await,
        len - 1..len + 1,
        len,
    );
}

/// Many writers at once, each to its own keys: every object arrives intact.
pub async fn concurrent_writers(store: &dyn Storage) {
    let writers = 16;
    let per_writer = 8;
    let results = join_all((0..writers).map(|w| async move {
        for i in 0..per_writer {
            let key = format!("w{w:02}/k{i}");
            store
                .put(&key, pattern(1000 + w * 100 + i, w as u8))
                .await?;
        }
        Ok::<_, StorageError>(())
    }))
    .await;
    for r in results {
        r.unwrap();
    }
    let listed = store.list("", None).await.unwrap();
    assert_eq!(listed.len(), writers * per_writer);
    for w in 0..writers {
        for i in 0..per_writer {
            let key = format!("w{w:02}/k{i}");
            let got = store.get(&key).await.unwrap();
            assert_eq!(got, pattern(1000 + w * 100 + i, w as u8), "{key}");
        }
    }
}

fn version_len(version: u8) -> usize {
    256 * 1024 * (1 + version as usize % 7) + version as usize
}

/// While one task overwrites an object again and again with versions of different sizes,
/// another reads it: every read is exactly one whole version (or "not found" before the
/// first put) — never a prefix, never a mix.
pub async fn atomic_put_seen_whole_by_concurrent_reader(store: &dyn Storage) {
    let versions = 24u8;
    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let writer = async {
        for v in 1..=versions {
            let data = vec![v; version_len(v)];
            store.put("hot/object", data.into()).await.unwrap();
        }
        done.store(true, Ordering::SeqCst);
    };
    let reader = async {
        let mut seen = std::collections::BTreeSet::new();
        loop {
            let finished = done.load(Ordering::SeqCst);
            match store.get("hot/object").await {
                Ok(data) => {
                    let v = *data.first().expect("no version is empty");
                    assert_eq!(data.len(), version_len(v), "partial object of version {v}");
                    assert!(data.iter().all(|&b| b == v), "mixed versions in one read");
                    seen.insert(v);
                    reads.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => panic!("concurrent read failed: {e}"),
            }
            if finished {
                break;
            }
            tokio::task::yield_now().await;
        }
        seen
    };
    let ((), seen) = tokio::join!(writer, reader);
    assert!(reads.load(Ordering::SeqCst) > 0, "the reader never read");
    assert!(
        seen.contains(&versions),
        "the last read must see the last version"
    );
}

/// `exists` is true exactly for objects (not for "folders"); `delete` is idempotent.
pub async fn delete_and_exists(store: &dyn Storage) {
    assert!(!store.exists("d/x").await.unwrap());
    store.put("d/x", Bytes::from_static(b"1")).await.unwrap();
    store.put("d/y", Bytes::from_static(b"2")).await.unwrap();
    assert!(store.exists("d/x").await.unwrap());
    assert!(
        !store.exists("d").await.unwrap(),
        "a folder is not an object"
    );
    assert!(!store.exists("d/x/z").await.unwrap());
    store.delete("d/x").await.unwrap();
    assert!(!store.exists("d/x").await.unwrap());
    assert!(store.get("d/x").await.unwrap_err().is_not_found());
    store.delete("d/x").await.unwrap();
    store.delete("never/was").await.unwrap();
    assert_eq!(keys(store, "", None).await, ["d/y"]);
}

/// Keys that could escape the store or mean different things on different backends are a
/// typed error for every operation, and nothing gets written.
pub async fn hostile_keys_are_refused(store: &dyn Storage) {
    let hostile = [
        "",
        "/",
        "/etc/passwd",
        "..",
        "../escape",
        "a/../../escape",
        "a/./b",
        "./a",
        "a//b",
        "a/",
        "a\0b",
        "..\\escape",
        "a\\b",
    ];
    let invalid = |r: Result<(), StorageError>, what: &str| match r {
        Err(StorageError::InvalidKey { .. }) => {}
        other => panic!("{what}: expected InvalidKey, got {other:?}"),
    };
    for k in hostile {
        let data = Bytes::from_static(b"evil");
        invalid(store.put(k, data).await, &format!("put {k:?}"));
        invalid(store.get(k).await.map(drop), &format!("get {k:?}"));
        invalid(
            store.get_range(k, 0..1).await.map(drop),
            &format!("get_range {k:?}"),
        );
        invalid(
            store
                .get_ranges(k, std::slice::from_ref(&(0..1)))
                .await
                .map(drop),
            &format!("get_ranges {k:?}"),
        );
        invalid(store.exists(k).await.map(drop), &format!("exists {k:?}"));
        invalid(store.delete(k).await, &format!("delete {k:?}"));
    }
    let too_long = "a".repeat(crate::MAX_KEY_LEN + 1);
    invalid(
        store.put(&too_long, Bytes::new()).await,
        "put of a too long key",
    );
    for p in ["/", "/a", "../", "a/../", "a//", "a\\"] {
        invalid(store.list(p, None).await.map(drop), &format!("list {p:?}"));
    }
    assert!(
        keys(store, "", None).await.is_empty(),
        "a hostile put wrote something"
    );
}

/// `list_until` stops before its end key, also across listing pages, and `list_keys` gives
/// the same keys; `list_folders` names the folders directly under a folder, and no folder
/// that holds nothing.
pub async fn bounded_listings_and_folders(store: &dyn Storage) {
    // More than one listing page (1,000 keys) in `i/001/`, so the bound must hold across
    // pages on object stores.
    let mut written = Vec::new();
    for folder in 0..3 {
        let n = if folder == 1 { 1100 } else { 5 };
        for k in 0..n {
            written.push(format!("i/{folder:03}/{k:05}.json"));
        }
    }
    written.push("i/top".to_owned());
    written.push("j/004/x".to_owned());
    written.push("i/002/deep/er/y".to_owned());
    written.sort();
    let puts = written
        .iter()
        .map(|k| store.put(k, Bytes::from_static(b"x")));
    for r in futures::future::join_all(puts).await {
        r.unwrap();
    }
    let until = |start: Option<&'static str>, end: Option<&'static str>| async move {
        store
            .list_opts("i/", ListOptions::new().start_after(start).end(end))
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect::<Vec<_>>()
    };
    let want = |lo: &str, hi: &str| -> Vec<String> {
        written
            .iter()
            .filter(|k| k.starts_with("i/") && k.as_str() > lo && k.as_str() < hi)
            .cloned()
            .collect()
    };
    assert_eq!(until(None, None).await, want("", "~"));
    assert_eq!(
        until(Some("i/001/00990"), Some("i/001/01050")).await,
        want("i/001/00990", "i/001/01050")
    );
    assert_eq!(
        until(Some("i/000"), Some("i/001")).await,
        want("i/000", "i/001")
    );
    assert_eq!(
        until(Some("i/001/00005"), Some("i/002")).await,
        want("i/001/00005", "i/002")
    );
    assert!(until(Some("i/001/00005.json"), Some("i/001/00006"))
        .await
        .is_empty());
    assert_eq!(
        until(Some("i/001/00005"), Some("i/001/00006")).await,
        ["i/001/00005.json"]
    );
    assert!(until(None, Some("i/")).await.is_empty());
    assert_eq!(
        until(Some("i/002/deep"), None).await,
        want("i/002/deep", "~")
    );
    // The names-only listing gives exactly the keys of the listing with sizes.
    for (start, end) in [
        (None, None),
        (Some("i/001/00990"), Some("i/001/01050")),
        (Some("i/002/deep"), None),
        (None, Some("i/001")),
    ] {
        assert_eq!(
            store.list_keys("i/", start, end).await.unwrap(),
            until(start, end).await,
            "list_keys after {start:?} before {end:?}"
        );
        let names_only = ListOptions::new().start_after(start).end(end).names_only();
        assert_eq!(
            store
                .list_opts("i/", names_only)
                .await
                .unwrap()
                .into_iter()
                .map(|o| o.key)
                .collect::<Vec<_>>(),
            until(start, end).await,
            "names-only list_opts after {start:?} before {end:?}"
        );
    }

    assert_eq!(
        store.list_folders("i/").await.unwrap(),
        ["i/000/", "i/001/", "i/002/"]
    );
    assert_eq!(store.list_folders("").await.unwrap(), ["i/", "j/"]);
    assert_eq!(store.list_folders("i/002/").await.unwrap(), ["i/002/deep/"]);
    assert!(store.list_folders("i/000/").await.unwrap().is_empty());
    assert!(store.list_folders("nothing/").await.unwrap().is_empty());
    assert!(
        store.list_folders("i").await.is_err(),
        "a folder ends in '/'"
    );
}

/// Forks; the child runs `child` (a panic is its failure) and leaves with `_exit`, the
/// parent waits for it and panics if it failed or was still running after `timeout` (then
/// it is killed): a hang in the child is what a test of stores used across a fork guards
/// against. Call it from a process where no other thread is at work (a test binary of its
/// own, or one test run alone): a fork copies whatever lock another thread holds.
#[cfg(unix)]
#[allow(unsafe_code)] // fork, waitpid, kill and _exit: nothing else does this
pub fn in_forked_child(timeout: std::time::Duration, child: impl FnOnce()) {
    use std::time::{Duration, Instant};

    // SAFETY: the caller runs no other thread that holds a lock the child takes (above);
    // the child runs `child` and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).is_ok();
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + timeout;
    let mut status = 0;
    loop {
        // SAFETY: waits for the child just forked.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid failed");
        if done == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: the child is ours and not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child failed (status {status}; its panic message is above)"
    );
}
