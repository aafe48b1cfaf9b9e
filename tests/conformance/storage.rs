//! smdebug-storage against a real S3-compatible server (the moto server `cargo xtask test`
//! starts) and against the real smdebug's own S3 code: the shared behaviour suite, objects
//! written by each side read by the other, and a fault test with a server that stops
//! answering in the middle of a run of puts.
//!
//! These tests fail (never skip) when the server is not configured.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use smdebug_conformance::{require_s3_server, run_peer_json};
use smdebug_storage::{
    testsuite, BlockingStore, Bytes, Location, ObjectStoreOptions, StorageError, StorageOptions,
};

/// A prefix no other test (or earlier run against the same server) uses.
fn fresh_prefix(test: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = N.fetch_add(1, Ordering::SeqCst);
    format!(
        "storage-conformance/{}-{nanos}-{n}/{test}",
        std::process::id()
    )
}

fn s3_store(test: &str) -> (String, BlockingStore) {
    let (_endpoint, bucket) = require_s3_server();
    let url = format!("s3://{bucket}/{}", fresh_prefix(test));
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    (url, store)
}

macro_rules! s3_suite {
    ([$($name:ident),* $(,)?]) => {
        mod suite {
            $(
                #[test]
                fn $name() {
                    let (_url, store) = super::s3_store(stringify!($name));
                    store
                        .block_on(smdebug_storage::testsuite::$name(store.storage().as_ref()))
                        .unwrap();
                }
            )*
        }
    };
}

smdebug_storage::for_each_behaviour!(s3_suite! {});

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Objects written by smdebug-storage are listed (same order, same `StartAfter` semantics)
/// and read byte for byte by smdebug's own S3 code, ranged reads included.
#[test]
fn smdebug_reads_what_we_write() {
    let (url, store) = s3_store("rust-writes");
    let objects: Vec<(&str, Bytes)> = vec![
        (
            "events/000000000002/000000000002_worker_0.tfevents",
            testsuite::pattern(5000, 1),
        ),
        (
            "events/000000000010/000000000010_worker_0.tfevents",
            testsuite::pattern(70, 2),
        ),
        (
            "index/000000000/000000000002_worker_0.json",
            Bytes::from_static(b"{\"meta\": {}}"),
        ),
        (
            "collections/000000000/worker_0_collections.json",
            testsuite::pattern(300, 3),
        ),
        ("training_job_end.ts", Bytes::new()),
        ("a-b/x", testsuite::pattern(1, 4)),
        ("a/x", testsuite::pattern(2, 5)),
    ];
    for (k, v) in &objects {
        store.put(k, v.clone()).unwrap();
    }
    let mut want: Vec<(String, u64, String)> = objects
        .iter()
        .map(|(k, v)| (k.to_string(), v.len() as u64, sha256_hex(v)))
        .collect();
    want.sort();
    let parse = |json: serde_json::Value| -> Vec<(String, u64, String)> {
        json.as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["key"].as_str().unwrap().to_owned(),
                    o["size"].as_u64().unwrap(),
                    o["sha256"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let python = parse(run_peer_json("storage_s3.py", &["list", &url]));
    assert_eq!(python, want, "smdebug's S3 listing");
    let ours: Vec<(String, u64)> = store
        .list("", None)
        .unwrap()
        .into_iter()
        .map(|o| (o.key, o.size))
        .collect();
    let theirs: Vec<(String, u64)> = python.iter().map(|(k, s, _)| (k.clone(), *s)).collect();
    assert_eq!(ours, theirs, "same keys in the same order as S3 itself");
    for start_after in [
        "a/x",
        "events/",
        "events/000000000002/000000000002_worker_0.tfevents",
    ] {
        let python = parse(run_peer_json("storage_s3.py", &["list", &url, start_after]));
        let ours: Vec<String> = store
            .list("", Some(start_after))
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        let theirs: Vec<String> = python.into_iter().map(|(k, _, _)| k).collect();
        assert_eq!(ours, theirs, "StartAfter {start_after:?}");
    }
    let key = "events/000000000002/000000000002_worker_0.tfevents";
    let specs = ["0:1", "4999:1", "100:900", "0:5000"];
    let python = run_peer_json(
        "storage_s3.py",
        &[
            "ranges",
            &format!("{url}/{key}"),
            specs[0],
            specs[1],
            specs[2],
            specs[3],
        ],
    );
    let ranges: Vec<std::ops::Range<u64>> = specs
        .iter()
        .map(|s| {
            let (a, l) = s.split_once(':').unwrap();
            let (a, l): (u64, u64) = (a.parse().unwrap(), l.parse().unwrap());
            a..a + l
        })
        .collect();
    let ours: Vec<String> = store
        .get_ranges(key, &ranges)
        .unwrap()
        .iter()
        .map(hex::encode)
        .collect();
    let theirs: Vec<String> = python
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ours, theirs);
}

/// Objects written by smdebug's S3 writer (`TSAccessS3`) are listed and read by us.
#[test]
fn we_read_what_smdebug_writes() {
    let (url, store) = s3_store("python-writes");
    let manifest: serde_json::Map<String, serde_json::Value> = [
        (
            "index/000000000/000000000000_worker_0.json",
            testsuite::pattern(40, 7),
        ),
        (
            "events/000000000000/000000000000_worker_0.tfevents",
            testsuite::pattern(3000, 8),
        ),
        ("training_job_end.ts", Bytes::new()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), serde_json::Value::String(hex::encode(&v))))
    .collect();
    let dir = smdebug_conformance::tempdir();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, serde_json::to_string(&manifest).unwrap()).unwrap();
    let written = run_peer_json("storage_s3.py", &["write", &url, path.to_str().unwrap()]);
    assert_eq!(written, 3);
    let mut want: Vec<&String> = manifest.keys().collect();
    want.sort();
    let listed: Vec<String> = store
        .list("", None)
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(listed.iter().collect::<Vec<_>>(), want);
    for (k, v) in &manifest {
        let got = store.get(k).unwrap();
        assert_eq!(hex::encode(&got), v.as_str().unwrap(), "{k}");
    }
    assert!(store.exists("training_job_end.ts").unwrap());
    assert_eq!(
        store
            .get_range(
                "events/000000000000/000000000000_worker_0.tfevents",
                2990..3000
            )
            .unwrap(),
        testsuite::pattern(3000, 8).slice(2990..3000)
    );
}

/// A moto server of this test's own, so suspending it disturbs nobody else.
pub(crate) struct PrivateServer {
    child: Child,
    pub(crate) endpoint: String,
    suspended: bool,
}

impl PrivateServer {
    pub(crate) fn start(bucket: &str) -> PrivateServer {
        let moto = std::env::var_os("SMDEBUG_MOTO_SERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                panic!(
                    "SMDEBUG_MOTO_SERVER is not set: run the suite with `cargo xtask test`, which \
                 sets it to the moto_server executable"
                )
            });
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", moto.display()));
        let server = PrivateServer {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            suspended: false,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "private moto server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server.create_bucket(port, bucket);
        server
    }

    /// A bucket is created by an unsigned PUT (object_store cannot create buckets).
    fn create_bucket(&self, port: u16, bucket: &str) {
        use std::io::{Read, Write};
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            conn,
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "creating the bucket: {answer}"
        );
    }

    pub(crate) fn signal(&mut self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} failed");
        self.suspended = signal == "-STOP";
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        if self.suspended {
            let _ = Command::new("kill")
                .args(["-CONT", &self.child.id().to_string()])
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server stops answering (SIGSTOP: moto keeps its state, unlike a restart) in the middle
/// of a run of puts, then comes back. Every put either succeeded — and its object is then
/// readable, whole — or returned an error; nothing is lost silently, and no object is partial.
#[test]
fn puts_survive_or_fail_loudly_when_the_server_stops_answering() {
    // Requires the shared server too: the test runs only in a configured suite.
    require_s3_server();
    let bucket = "fault-test";
    let mut server = PrivateServer::start(bucket);
    let options = StorageOptions {
        object_store: ObjectStoreOptions {
            endpoint: Some(server.endpoint.clone()),
            max_retries: 2,
            retry_timeout: Duration::from_secs(3),
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            request_timeout: Duration::from_millis(1500),
            connect_timeout: Duration::from_millis(500),
            ..ObjectStoreOptions::default()
        },
        ..StorageOptions::default()
    };
    let location = Location::parse(&format!("s3://{bucket}/fault")).unwrap();
    let store = Arc::new(BlockingStore::open_with(&location, &options).unwrap());
    let puts = 60;
    let attempted = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (store, attempted) = (store.clone(), attempted.clone());
        std::thread::spawn(move || {
            (0..puts)
                .map(|i| {
                    let result = store.put(
                        &format!("obj/{i:03}"),
                        testsuite::pattern(16 * 1024 + i, i as u8),
                    );
                    attempted.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    result
                })
                .collect::<Vec<_>>()
        })
    };
    while attempted.load(Ordering::SeqCst) < 10 {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.signal("-STOP");
    // Longer than one put can last (3 attempts of 1.5 s plus backoff), so at least one
    // put must fail outright.
    std::thread::sleep(Duration::from_secs(7));
    server.signal("-CONT");
    let results = writer.join().expect("writer thread");

    let mut succeeded = 0;
    let mut failed = 0;
    let mut failed_but_stored = 0;
    let mut succeeded_after_outage = 0;
    for (i, result) in results.iter().enumerate() {
        let key = format!("obj/{i:03}");
        let want = testsuite::pattern(16 * 1024 + i, i as u8);
        match result {
            Ok(()) => {
                succeeded += 1;
                if failed > 0 {
                    succeeded_after_outage += 1;
                }
                let got = store
                    .get(&key)
                    .unwrap_or_else(|e| panic!("{key} was put but is lost: {e}"));
                assert!(got == want, "{key} was put but reads back differently");
            }
            Err(e) => {
                failed += 1;
                assert!(
                    matches!(e, StorageError::ObjectStore { .. }),
                    "{key}: unexpected error kind {e:?}"
                );
                let msg = e.to_string();
                assert!(
                    msg.starts_with("put ") && msg.contains(&key),
                    "error must name op and key: {msg}"
                );
                // The request may have reached the server before it stopped: then the whole
                // object is there; otherwise none of it.
                match store.get(&key) {
                    Ok(got) => {
                        assert!(got == want, "{key}: a failed put left a partial object");
                        failed_but_stored += 1;
                    }
                    Err(e) if e.is_not_found() => {}
                    Err(e) => panic!("{key}: {e}"),
                }
            }
        }
    }
    eprintln!(
        "fault test: {succeeded} puts succeeded, {failed} returned an error \
         ({failed_but_stored} of those were stored anyway), {succeeded_after_outage} succeeded after the outage"
    );
    assert_eq!(succeeded + failed, puts);
    assert!(
        failed > 0,
        "the outage caused no error: the test did not test anything"
    );
    assert!(succeeded >= 10, "puts before the outage must succeed");
    assert!(
        succeeded_after_outage > 0,
        "the store did not recover after the server came back"
    );
    // The listing agrees with what was reported.
    let listed = store.list("obj/", None).unwrap();
    assert_eq!(listed.len(), succeeded + failed_but_stored);
}

/// A missing bucket is a typed error naming the operation and the location — not "no such
/// object", not a panic, not an empty listing.
#[test]
fn a_missing_bucket_is_a_clear_error() {
    require_s3_server();
    let url = "s3://smdebug-no-such-bucket/trial";
    let store = BlockingStore::open(&Location::parse(url).unwrap()).unwrap();
    let err = store.put("k", Bytes::from_static(b"x")).unwrap_err();
    assert!(matches!(err, StorageError::ObjectStore { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("put ") && msg.contains(url), "{msg}");
    let err = store.list("", None).unwrap_err();
    assert!(
        err.to_string().starts_with("list ") && err.to_string().contains(url),
        "{err}"
    );
}
