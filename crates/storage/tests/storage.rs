//! The shared behaviour suite (`smdebug_storage::testsuite`) on local disk (with and without
//! fsync) and in memory,
//! plus what only the local backend promises.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use smdebug_storage::{
    testsuite, LocalStorage, LocalSync, Location, Storage, StorageError, StorageOptions,
};

fn local() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    // A root that does not exist yet: the first put must create it.
    let store = Location::parse(dir.path().join("trial").to_str().unwrap())
        .unwrap()
        .open()
        .unwrap();
    (dir, store)
}

/// Local disk without fsync (what the hook uses by default): every promise but durability
/// across power loss holds, so the whole suite must pass unchanged.
fn local_rename_only() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let options = StorageOptions {
        local_sync: LocalSync::RenameOnly,
        ..StorageOptions::default()
    };
    let store = Location::parse(dir.path().join("trial").to_str().unwrap())
        .unwrap()
        .open_with(&options)
        .unwrap();
    (dir, store)
}

fn memory() -> ((), Arc<dyn Storage>) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    // A prefix inside a shared store: the suite must only see its own prefix.
    let store = Location::parse(&format!("memory://suite/run-{n}/trial"))
        .unwrap()
        .open()
        .unwrap();
    ((), store)
}

macro_rules! suite {
    ($backend:ident [$($name:ident),* $(,)?]) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (_guard, store) = super::$backend();
                    smdebug_storage::testsuite::$name(store.as_ref()).await;
                }
            )*
        }
    };
}

smdebug_storage::for_each_behaviour!(suite! { local });
smdebug_storage::for_each_behaviour!(suite! { local_rename_only });
smdebug_storage::for_each_behaviour!(suite! { memory });

#[tokio::test]
async fn local_hides_files_being_written_and_refuses_tmp_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    store
        .put("index/a.json", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    // What the Python writer leaves while a file is open, and what ours would.
    std::fs::write(dir.path().join("index/b.json.tmp"), b"{").unwrap();
    std::fs::write(dir.path().join("index/.c.json.1.2.tmp"), b"{").unwrap();
    let keys: Vec<String> = store
        .list("", None)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(keys, ["index/a.json"]);
    let err = store
        .put("index/b.json.tmp", Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::InvalidKey { .. }), "{err}");
    // No temporary file of ours is left behind by a successful put.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[tokio::test]
async fn local_hostile_keys_touch_nothing_outside_the_root() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    let store = LocalStorage::new(&root);
    testsuite::hostile_keys_are_refused(&store).await;
    assert_eq!(std::fs::read_dir(outer.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn local_listing_of_a_missing_root_is_empty_and_reads_are_not_found() {
    let store = LocalStorage::new("/nonexistent/smdebug-storage-test");
    assert!(store.list("", None).await.unwrap().is_empty());
    assert!(store
        .list("index/", Some("index/0"))
        .await
        .unwrap()
        .is_empty());
    assert!(store.get("x").await.unwrap_err().is_not_found());
    assert!(!store.exists("x").await.unwrap());
}

#[cfg(unix)]
#[tokio::test]
async fn local_skips_non_utf8_names_and_folder_symlinks() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    store.put("a/ok", Bytes::from_static(b"1")).await.unwrap();
    std::fs::write(
        dir.path().join(std::ffi::OsStr::from_bytes(b"a/bad\xff")),
        b"x",
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("loop")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("a/ok"), dir.path().join("link")).unwrap();
    let keys: Vec<String> = store
        .list("", None)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(keys, ["a/ok", "link"]);
    // The names-only listing (no `stat` of plain files) still follows links as the full one.
    assert_eq!(store.list_keys("", None, None).await.unwrap(), keys);
    let sync = store.as_sync().unwrap();
    assert_eq!(sync.list_keys_sync("", None, None).unwrap(), keys);
    assert_eq!(
        sync.list_keys_sync("a/", None, Some("a/p")).unwrap(),
        ["a/ok"]
    );
}

#[tokio::test]
async fn a_put_over_a_folder_is_an_io_error_naming_key_and_operation() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    store.put("a/b", Bytes::from_static(b"1")).await.unwrap();
    let err = store.put("a", Bytes::from_static(b"2")).await.unwrap_err();
    assert!(matches!(err, StorageError::Io { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("put ") && msg.contains("\"a\""), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    // The folder and its object survived.
    assert_eq!(store.get("a/b").await.unwrap(), "1");
}

#[tokio::test]
async fn memory_locations_share_one_store_per_name_and_isolate_prefixes() {
    let a = Location::parse("memory://shared-test/x")
        .unwrap()
        .open()
        .unwrap();
    let a2 = Location::parse("memory://shared-test/x/")
        .unwrap()
        .open()
        .unwrap();
    let b = Location::parse("memory://shared-test/xy")
        .unwrap()
        .open()
        .unwrap();
    let whole = Location::parse("memory://shared-test")
        .unwrap()
        .open()
        .unwrap();
    a.put("k", Bytes::from_static(b"1")).await.unwrap();
    b.put("k", Bytes::from_static(b"2")).await.unwrap();
    assert_eq!(a2.get("k").await.unwrap(), "1");
    assert_eq!(a.list("", None).await.unwrap().len(), 1);
    let all: Vec<String> = whole
        .list("", None)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(all, ["x/k", "xy/k"]);
    assert_eq!(whole.list("x/", None).await.unwrap().len(), 1);
}

mod listing_model {
    //! Listing against a model (a sorted set filtered by prefix and start-after), with keys
    //! chosen so that folder names and their siblings interleave in byte order.
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn key() -> impl Strategy<Value = String> {
        let dir = prop::sample::select(vec!["a", "a-", "a0", "b", "ab"]);
        let leaf = prop::sample::select(vec!["x", "x.json", "y", "0", "z-"]);
        (prop::collection::vec(dir, 0..3), leaf).prop_map(|(dirs, leaf)| {
            let mut k = dirs.join("/");
            if !k.is_empty() {
                k.push('/');
            }
            k.push_str(leaf);
            k
        })
    }

    /// Mostly short probes near the keys' alphabet, so they hit folder boundaries often.
    fn probe() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => Just(String::new()),
            3 => "[ab0x/-]{1,4}",
            2 => key(),
        ]
    }

    fn model(keys: &BTreeSet<String>, prefix: &str, start_after: Option<&str>) -> Vec<String> {
        keys.iter()
            .filter(|k| k.starts_with(prefix) && start_after.is_none_or(|s| k.as_str() > s))
            .cloned()
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn list_matches_the_model(
            keys in prop::collection::btree_set(key(), 0..14),
            prefix in probe(),
            start_after in prop::option::of(probe()),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let dir = tempfile::tempdir().unwrap();
            let local = LocalStorage::new(dir.path());
            let (_, memory) = memory();
            for k in &keys {
                // Written directly: this property is about listing, not about put.
                let path = dir.path().join(k);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, k.as_bytes()).unwrap();
                runtime.block_on(memory.put(k, Bytes::copy_from_slice(k.as_bytes()))).unwrap();
            }
            let want = model(&keys, &prefix, start_after.as_deref());
            for store in [&local as &dyn Storage, memory.as_ref()] {
                match runtime.block_on(store.list(&prefix, start_after.as_deref())) {
                    Ok(listed) => {
                        let got: Vec<String> = listed.iter().map(|o| o.key.clone()).collect();
                        prop_assert_eq!(&got, &want, "{}", store.location());
                        for o in &listed {
                            prop_assert_eq!(o.size, o.key.len() as u64);
                        }
                    }
                    Err(StorageError::InvalidKey { .. }) => {
                        prop_assert!(smdebug_storage::validate_prefix(&prefix).is_err());
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
            }
        }
    }
}

#[tokio::test]
async fn local_put_of_a_name_near_the_file_system_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    let key = format!("d/{}", "n".repeat(250));
    store.put(&key, Bytes::from_static(b"long")).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), "long");
}

mod ranged_reads_model {
    //! Local ranged reads (one open file, merged reads, on the caller's thread) against the
    //! object-store path (`get_ranges_with` over an in-memory store): same bytes, same errors.
    use super::*;
    use proptest::prelude::*;

    fn describe(r: smdebug_storage::Result<Vec<Bytes>>) -> Result<Vec<Bytes>, String> {
        r.map_err(|e| match e {
            StorageError::RangeOutOfBounds { range, size, .. } => format!("oob {range:?} {size}"),
            StorageError::InvalidRange { range, .. } => format!("invalid {range:?}"),
            other => format!("other {other}"),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn local_get_ranges_equal_the_generic_ones(
            len in 0usize..5000,
            ranges in prop::collection::vec((0u64..5200, 0u64..800), 0..12),
        ) {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let ranges: Vec<std::ops::Range<u64>> =
                ranges.into_iter().map(|(s, l)| s..s + l).collect();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let dir = tempfile::tempdir().unwrap();
            let local = LocalStorage::new(dir.path());
            let (_, memory) = memory();
            runtime.block_on(local.put("o", Bytes::from(data.clone()))).unwrap();
            runtime.block_on(memory.put("o", Bytes::from(data))).unwrap();
            let sync = local.as_sync().expect("local reads are synchronous");
            let want = describe(runtime.block_on(memory.get_ranges("o", &ranges)));
            prop_assert_eq!(describe(sync.get_ranges_sync("o", &ranges)), want.clone());
            let opened = sync.open_sync("o").expect("the object exists");
            prop_assert_eq!(describe(opened.get_ranges(&ranges)), want.clone());
            prop_assert_eq!(describe(runtime.block_on(local.get_ranges("o", &ranges))), want);
        }
    }
}

/// A folder read by an earlier listing and unchanged since (its modification time) is not
/// read again when every name in it sorts before `start_after`; any change to the folder
/// is seen by the next listing.
#[tokio::test]
async fn local_listings_skip_unchanged_folders_and_see_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    let sync = store.as_sync().unwrap();
    for k in ["i/0/a", "i/0/b", "i/1/a"] {
        sync.put_sync(k, Bytes::from_static(b"1")).unwrap();
    }
    let folder = dir.path().join("i/0");
    let age = |secs: u64| {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        std::fs::File::open(&folder)
            .unwrap()
            .set_modified(t)
            .unwrap();
        t
    };
    let old = age(60);
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/b"), None).unwrap(),
        ["i/1/a"]
    );
    // A name added behind the store's back with the folder's time put back: the folder
    // counts as unchanged and is not read (this is what the memory saves).
    std::fs::write(folder.join("c"), b"x").unwrap();
    std::fs::File::open(&folder)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/b"), None).unwrap(),
        ["i/1/a"]
    );
    // A listing from before the greatest name reads the folder.
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/a"), None).unwrap(),
        ["i/0/b", "i/0/c", "i/1/a"]
    );
    // A put changes the folder's time: seen at once, also after its name was remembered.
    age(60);
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/c"), None).unwrap(),
        ["i/1/a"]
    );
    sync.put_sync("i/0/d", Bytes::from_static(b"1")).unwrap();
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/c"), None).unwrap(),
        ["i/0/d", "i/1/a"]
    );
    // A folder changed less than 2 s before a listing is not remembered: a change in the
    // same clock tick could leave its time as it was.
    let recent = std::fs::metadata(&folder).unwrap().modified().unwrap();
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/d"), None).unwrap(),
        ["i/1/a"]
    );
    std::fs::write(folder.join("e"), b"x").unwrap();
    std::fs::File::open(&folder)
        .unwrap()
        .set_modified(recent)
        .unwrap();
    assert_eq!(
        sync.list_keys_sync("i/", Some("i/0/d"), None).unwrap(),
        ["i/0/e", "i/1/a"]
    );
}

// Objects opened once for many ranged reads (`SyncStorage::open_sync`).

/// One range of an opened object.
fn one(
    object: &Arc<dyn smdebug_storage::SyncObject>,
    range: std::ops::Range<u64>,
) -> Result<Bytes, StorageError> {
    object
        .get_ranges(std::slice::from_ref(&range))
        .map(|mut parts| parts.remove(0))
}

/// A local store with `key` holding `data`, and the key opened.
fn opened(
    data: &[u8],
) -> (
    tempfile::TempDir,
    LocalStorage,
    Arc<dyn smdebug_storage::SyncObject>,
) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStorage::new(dir.path());
    let sync = store.as_sync().unwrap();
    sync.put_sync("events/a.tfevents", Bytes::copy_from_slice(data))
        .unwrap();
    let object = sync.open_sync("events/a.tfevents").unwrap();
    assert_eq!(object.key(), "events/a.tfevents");
    (dir, store, object)
}

#[test]
fn an_opened_object_reads_many_ranges_and_names_its_key_in_errors() {
    let data = testsuite::pattern(10_000, 3);
    let (_dir, _store, object) = opened(&data);
    for _ in 0..3 {
        let parts = object
            .get_ranges(&[9_990..10_000, 0..4, 5_000..5_000, 4..9_000])
            .unwrap();
        assert_eq!(parts[0], data.slice(9_990..10_000));
        assert_eq!(parts[1], data.slice(0..4));
        assert!(parts[2].is_empty());
        assert_eq!(parts[3], data.slice(4..9_000));
    }
    let err = object.get_ranges(&[0..4, 9_999..10_001]).unwrap_err();
    assert!(
        matches!(&err, StorageError::RangeOutOfBounds { key, range, size: 10_000, .. }
            if key == "events/a.tfevents" && *range == (9_999..10_001)),
        "{err}"
    );
    #[allow(clippy::reversed_empty_ranges)]
    let err = one(&object, 5..4).unwrap_err();
    assert!(matches!(err, StorageError::InvalidRange { .. }), "{err}");
}

#[test]
fn opening_a_missing_object_or_a_folder_fails_typed() {
    let (_dir, store, _) = opened(b"x");
    let sync = store.as_sync().unwrap();
    let err = sync.open_sync("events/missing").unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let err = sync.open_sync("events").unwrap_err();
    assert!(
        matches!(&err, StorageError::Io { key, .. } if key == "events"),
        "{err}"
    );
    let err = sync.open_sync("../outside").unwrap_err();
    assert!(matches!(err, StorageError::InvalidKey { .. }), "{err}");
}

#[test]
fn an_opened_object_truncated_under_it_is_a_range_error_with_its_size_now() {
    let data = testsuite::pattern(4_096, 5);
    let (dir, _store, object) = opened(&data);
    assert_eq!(
        one(&object, 4_000..4_096).unwrap(),
        data.slice(4_000..4_096)
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("events/a.tfevents"))
        .unwrap()
        .set_len(100)
        .unwrap();
    let err = object.get_ranges(&[0..10, 4_000..4_096]).unwrap_err();
    assert!(
        matches!(&err, StorageError::RangeOutOfBounds { size: 100, range, .. }
            if *range == (4_000..4_096)),
        "{err}"
    );
    assert!(err.is_range_error());
    // What is still there reads as before.
    assert_eq!(one(&object, 0..100).unwrap(), data.slice(0..100));
}

#[cfg(unix)]
#[test]
fn an_opened_object_removed_or_replaced_is_not_read_from_its_old_bytes() {
    let old = testsuite::pattern(1_000, 1);
    let (_dir, store, object) = opened(&old);
    let sync = store.as_sync().unwrap();
    // Replaced by a put (a rename over it): the handle refuses, a new one reads the new object.
    let new = testsuite::pattern(1_000, 2);
    sync.put_sync("events/a.tfevents", new.clone()).unwrap();
    let err = one(&object, 0..10).unwrap_err();
    assert!(err.is_replaced(), "{err}");
    assert!(err.to_string().contains("events/a.tfevents"), "{err}");
    let again = sync.open_sync("events/a.tfevents").unwrap();
    assert_eq!(one(&again, 0..1_000).unwrap(), new);
    // Removed: the same, and opening again finds nothing.
    sync.delete_sync("events/a.tfevents").unwrap();
    assert!(one(&again, 0..10).unwrap_err().is_replaced());
    assert!(sync
        .open_sync("events/a.tfevents")
        .unwrap_err()
        .is_not_found());
}

/// Another writer (a second store on the same folder, as another process would be) replaces
/// and removes the file: the handle serves the bytes its store's last listing saw until that
/// store lists again, and then refuses them. Its first read checks the file, so only later
/// reads skip the `fstat`.
#[cfg(unix)]
#[test]
fn an_opened_object_sees_another_writers_replacement_after_its_store_lists() {
    let old = testsuite::pattern(1_000, 1);
    let (dir, store, object) = opened(&old);
    let sync = store.as_sync().unwrap();
    assert_eq!(one(&object, 0..1_000).unwrap(), old);
    let other = LocalStorage::new(dir.path());
    let new = testsuite::pattern(1_000, 2);
    other
        .as_sync()
        .unwrap()
        .put_sync("events/a.tfevents", new.clone())
        .unwrap();
    // Not listed since: the bytes of the file the reader's view holds.
    assert_eq!(one(&object, 0..10).unwrap(), old.slice(0..10));
    let list = |s: &dyn smdebug_storage::SyncStorage| {
        assert!(!s.list_sync("events/", None).unwrap().is_empty())
    };
    let exists =
        |s: &dyn smdebug_storage::SyncStorage| assert!(s.exists_sync("events/a.tfevents").unwrap());
    for look in [&list as &dyn Fn(&dyn smdebug_storage::SyncStorage), &exists] {
        let object = sync.open_sync("events/a.tfevents").unwrap();
        assert_eq!(one(&object, 0..1_000).unwrap(), new);
        other
            .as_sync()
            .unwrap()
            .put_sync("events/a.tfevents", old.clone())
            .unwrap();
        look(sync);
        let err = one(&object, 0..10).unwrap_err();
        assert!(err.is_replaced(), "{err}");
        other
            .as_sync()
            .unwrap()
            .put_sync("events/a.tfevents", new.clone())
            .unwrap();
    }
    // A range past the size last seen checks again (the file may have grown): removed.
    let object = sync.open_sync("events/a.tfevents").unwrap();
    assert_eq!(one(&object, 0..10).unwrap(), new.slice(0..10));
    other
        .as_sync()
        .unwrap()
        .delete_sync("events/a.tfevents")
        .unwrap();
    assert!(one(&object, 0..1_001).unwrap_err().is_replaced());
}

#[test]
fn one_opened_object_serves_reads_from_many_threads() {
    let data = testsuite::pattern(64 * 1024, 9);
    let (_dir, _store, object) = opened(&data);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (object, data) = (&object, &data);
            s.spawn(move || {
                for k in 0..200u64 {
                    let start = (t * 7_919 + k * 331) % 60_000;
                    let r = start..start + 4_000;
                    let got = object.get_ranges(std::slice::from_ref(&r)).unwrap();
                    assert_eq!(got[0], data.slice(r.start as usize..r.end as usize));
                }
            });
        }
    });
}

/// The names in `dir` (none when it does not exist).
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_staged_local_put_is_hidden_until_published_and_removed_when_dropped() {
    for sync in [LocalSync::Fsync, LocalSync::RenameOnly] {
        let dir = tempfile::tempdir().unwrap();
        let options = StorageOptions {
            local_sync: sync,
            ..StorageOptions::default()
        };
        let store = smdebug_storage::BlockingStore::new(
            Location::parse(dir.path().to_str().unwrap())
                .unwrap()
                .open_with(&options)
                .unwrap(),
        )
        .unwrap();
        let data = Bytes::from((0..3 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
        let a = store.stage("events/a.tfevents", data.clone()).unwrap();
        let b = store
            .stage("events/b.tfevents", Bytes::from_static(b"b"))
            .unwrap();
        assert!(a.is_written() && b.is_written());
        assert_eq!(a.key(), "events/a.tfevents");
        // Written, but neither listed nor readable under its key.
        assert_eq!(names_in(&dir.path().join("events")).len(), 2);
        assert!(store.list("", None).unwrap().is_empty());
        assert!(store.get("events/a.tfevents").unwrap_err().is_not_found());
        store.publish(a).unwrap();
        assert_eq!(store.get("events/a.tfevents").unwrap(), data);
        let keys: Vec<String> = store
            .list("", None)
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(keys, ["events/a.tfevents"]);
        // Dropped unpublished: its temporary file goes, the published one stays.
        drop(b);
        assert_eq!(names_in(&dir.path().join("events")), ["a.tfevents"]);
        // A key the store refuses is refused when staged, and writes nothing.
        let err = store.stage("events/c.tmp", Bytes::new()).unwrap_err();
        assert!(matches!(err, StorageError::InvalidKey { .. }), "{err}");
        assert_eq!(names_in(&dir.path().join("events")), ["a.tfevents"]);
    }
}

#[test]
fn a_failed_local_stage_leaves_nothing_and_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the folder should be.
    std::fs::write(dir.path().join("events"), b"in the way").unwrap();
    let store = smdebug_storage::BlockingStore::open(
        &Location::parse(dir.path().to_str().unwrap()).unwrap(),
    )
    .unwrap();
    let err = store
        .stage("events/a.tfevents", Bytes::from_static(b"a"))
        .unwrap_err();
    match &err {
        StorageError::Io { key, .. } => assert_eq!(key, "events/a.tfevents"),
        other => panic!("{other:?}"),
    }
    assert_eq!(names_in(dir.path()), ["events"]);
}

#[test]
fn a_staged_put_elsewhere_writes_nothing_until_published() {
    let store = smdebug_storage::BlockingStore::open(
        &Location::parse("memory://staged-put/trial").unwrap(),
    )
    .unwrap();
    let staged = store
        .stage("index/a.json", Bytes::from_static(b"{}"))
        .unwrap();
    assert!(!staged.is_written());
    assert!(!store.exists("index/a.json").unwrap());
    store.publish(staged).unwrap();
    assert_eq!(store.get("index/a.json").unwrap(), "{}");
}
