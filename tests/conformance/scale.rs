//! Trials at scale on a real S3-compatible server (moto): opening the last steps costs a
//! number of requests that does not grow with the trial, and a trial read survives the
//! server stopping in the middle of it (docs/src/scale.md).
//!
//! These tests fail (never skip) when the server is not configured.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use smdebug_config::Mode;
use smdebug_conformance::require_s3_server;
use smdebug_storage::{BlockingStore, Location, ObjectStoreOptions, StorageOptions};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::{TensorValue, Trial, TrialError, TrialOptions};

use crate::storage::PrivateServer;

const TENSORS: [&str; 2] = ["scale/a:0", "scale/b:0"];

/// The value of `tensor` number `k` at `step`: distinct everywhere, so a value read from
/// the wrong record cannot compare equal.
fn value(step: i64, k: usize) -> TensorValue {
    let base = step as f32 * 4.0 + k as f32 * 0.5;
    TensorValue::from(ndarray::arr1(&[base, base + 1.0, -base]).into_dyn())
}

/// Writes steps `steps` of one worker, eight at a time.
fn write_steps(store: &BlockingStore, steps: std::ops::Range<i64>) {
    let steps: Vec<i64> = steps.collect();
    std::thread::scope(|scope| {
        for chunk in steps.chunks(steps.len().div_ceil(8).max(1)) {
            scope.spawn(move || {
                for &step in chunk {
                    let tensors: Vec<(&str, TensorValue)> = TENSORS
                        .iter()
                        .enumerate()
                        .map(|(k, n)| (*n, value(step, k)))
                        .collect();
                    write_step(
                        store,
                        &StepWrite::new(step, "worker_0", Mode::Train, &tensors),
                    )
                    .unwrap();
                }
            });
        }
    });
}

fn fresh_prefix(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("scale-conformance/{}-{nanos}/{test}", std::process::id())
}

/// A TCP proxy in front of the S3 server that counts the HTTP requests going through it
/// (each request's header block ends with an empty line; reads send no bodies) and the
/// bytes the server sends back.
struct CountingProxy {
    endpoint: String,
    requests: Arc<AtomicUsize>,
    received: Arc<AtomicUsize>,
}

impl CountingProxy {
    fn start(upstream: &str) -> CountingProxy {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&requests);
        let bytes = Arc::clone(&received);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (client2, server2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let counter = Arc::clone(&counter);
                let bytes = Arc::clone(&bytes);
                std::thread::spawn(move || pipe(client, server, Some(counter), None));
                std::thread::spawn(move || pipe(server2, client2, None, Some(bytes)));
            }
        });
        CountingProxy {
            endpoint,
            requests,
            received,
        }
    }

    fn take(&self) -> usize {
        self.requests.swap(0, Ordering::SeqCst)
    }

    /// Bytes received from the server since the last call.
    fn take_received(&self) -> usize {
        self.received.swap(0, Ordering::SeqCst)
    }
}

fn pipe(
    mut from: TcpStream,
    mut to: TcpStream,
    counter: Option<Arc<AtomicUsize>>,
    bytes: Option<Arc<AtomicUsize>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(bytes) = &bytes {
            bytes.fetch_add(n, Ordering::SeqCst);
        }
        if let Some(counter) = &counter {
            tail.extend_from_slice(&buf[..n]);
            let ends = tail.windows(4).filter(|w| w == b"\r\n\r\n").count();
            counter.fetch_add(ends, Ordering::SeqCst);
            let keep = tail.len().min(3);
            tail.drain(..tail.len() - keep);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn s3_options(endpoint: &str) -> StorageOptions {
    StorageOptions {
        object_store: ObjectStoreOptions {
            endpoint: Some(endpoint.to_owned()),
            ..ObjectStoreOptions::default()
        },
        ..StorageOptions::default()
    }
}

/// `--last 10` of a long trial on S3: the requests are counted at the socket, for two trials
/// of different lengths whose newest index folder holds as many steps; the count is the
/// same, small, and the open far faster than opening the whole trial.
#[test]
fn opening_the_last_steps_on_s3_costs_requests_independent_of_the_trials_length() {
    let (endpoint, bucket) = require_s3_server();
    let proxy = CountingProxy::start(&endpoint);
    let mut counts = Vec::new();
    let mut timings = Vec::new();
    for len in [1200i64, 2200] {
        let url = format!("s3://{bucket}/{}", fresh_prefix(&format!("last-{len}")));
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        write_collections(&store, "worker_0", 1).unwrap();
        write_steps(&store, 0..len);
        write_end_marker(&store).unwrap();

        proxy.take();
        let started = Instant::now();
        let last = Trial::open(
            &url,
            TrialOptions {
                last_steps: Some(10),
                storage: s3_options(&proxy.endpoint),
                ..TrialOptions::default()
            },
        )
        .unwrap();
        let last_open = started.elapsed();
        let opened_with = proxy.take();
        let want: Vec<i64> = (len - 10..len).collect();
        assert_eq!(last.steps(Mode::Global, false).unwrap(), want);
        for (k, name) in TENSORS.iter().enumerate() {
            let got = last
                .tensor(name)
                .unwrap()
                .value(len - 1, Mode::Global, None)
                .unwrap();
            assert_eq!(*got, value(len - 1, k));
        }
        counts.push(opened_with);

        let started = Instant::now();
        let whole = Trial::open(
            &url,
            TrialOptions {
                storage: s3_options(&proxy.endpoint),
                ..TrialOptions::default()
            },
        )
        .unwrap();
        let whole_open = started.elapsed();
        let whole_requests = proxy.take();
        assert_eq!(
            whole.steps(Mode::Global, false).unwrap().len(),
            len as usize
        );
        assert!(
            whole_requests >= len as usize,
            "a whole open reads every index file: {whole_requests} requests"
        );
        eprintln!(
            "scale: {len} steps on S3: --last 10 opens with {opened_with} requests in {last_open:?}; \
             the whole trial with {whole_requests} requests in {whole_open:?} ({:.0}x)",
            whole_open.as_secs_f64() / last_open.as_secs_f64()
        );
        timings.push((last_open, whole_open));
    }
    assert_eq!(
        counts[0], counts[1],
        "requests of --last 10 by trial length: {counts:?}"
    );
    // Collections listing and file, index folders, newest folder, the range's listing and
    // ten index files.
    assert!(counts[0] <= 20, "--last 10 took {} requests", counts[0]);
    // Time is noisy when other tests share the server (the printed ratio is the figure);
    // reading every index file still takes several times longer.
    let (last, whole) = timings[1];
    assert!(
        whole > last * 5,
        "--last 10 ({last:?}) is not much faster than the whole open ({whole:?})"
    );
}

/// A live trial on S3 polled as it grows (`steps()`, which refreshes): each poll costs the
/// end-marker check, one listing that starts after the last key read (S3's `StartAfter`),
/// and one GET per new index file — a number of requests and bytes that follows the new
/// objects, not the trial's length (1,500 steps, so a re-list would take two pages).
#[test]
fn polling_a_live_trial_on_s3_costs_the_new_objects_only() {
    let (endpoint, bucket) = require_s3_server();
    let proxy = CountingProxy::start(&endpoint);
    let url = format!("s3://{bucket}/{}", fresh_prefix("live"));
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    write_collections(&store, "worker_0", 1).unwrap();
    let mut written = 1500i64;
    write_steps(&store, 0..written);
    let trial = Trial::open(
        &url,
        TrialOptions {
            storage: s3_options(&proxy.endpoint),
            ..TrialOptions::default()
        },
    )
    .unwrap();
    let mut polls = Vec::new();
    for new in [0i64, 1, 7, 0, 30, 3] {
        write_steps(&store, written..written + new);
        written += new;
        proxy.take();
        proxy.take_received();
        let steps = trial.steps(Mode::Global, false).unwrap();
        let (requests, received) = (proxy.take(), proxy.take_received());
        assert_eq!(
            steps,
            (0..written).collect::<Vec<_>>(),
            "after {new} new steps"
        );
        polls.push((new, requests, received));
    }
    eprintln!("live trial on S3, (new steps, requests, bytes received) per poll: {polls:?}");
    // The end-marker HEAD and the listing: the constant part of a poll.
    let fixed = polls[0].1;
    assert!(fixed <= 2, "a poll with nothing new took {fixed} requests");
    for &(new, requests, _) in &polls {
        assert_eq!(
            requests,
            fixed + new as usize,
            "a poll after {new} new steps: {polls:?}"
        );
    }
    // Bytes: a listing of the 1,500 old keys alone would be well over 100 KB; an empty poll
    // gets two short answers, and each new step adds its index file and listing entry.
    let empty = polls[0].2;
    assert!(empty < 4_000, "an empty poll received {empty} bytes");
    for &(new, _, received) in &polls {
        assert!(
            received < empty + new as usize * 2_000 + 1_000,
            "a poll after {new} new steps received {received} bytes: {polls:?}"
        );
    }
    // The last value is the one written.
    let got = trial
        .tensor(TENSORS[0])
        .unwrap()
        .value(written - 1, Mode::Global, None)
        .unwrap();
    assert_eq!(*got, value(written - 1, 0));
}

/// The S3 server stops answering (SIGSTOP) while a reader goes through every value of a
/// trial — values of steps it already knows and steps that appear only after it opened —
/// then comes back. Calls during the outage fail with an error naming the operation, store
/// and key after bounded retries; the same `Trial` keeps working, the next call after the
/// outage succeeds, and every value read (before, after, from the cache) is right.
#[test]
fn a_trial_read_survives_the_server_stopping_and_coming_back() {
    require_s3_server();
    let bucket = "scale-fault";
    let mut server = PrivateServer::start(bucket);
    let options = StorageOptions {
        object_store: ObjectStoreOptions {
            endpoint: Some(server.endpoint.clone()),
            max_retries: 2,
            retry_timeout: Duration::from_secs(3),
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            request_timeout: Duration::from_millis(1000),
            connect_timeout: Duration::from_millis(500),
            ..ObjectStoreOptions::default()
        },
        ..StorageOptions::default()
    };
    let url = format!("s3://{bucket}/trial");
    let store = BlockingStore::open_with(&Location::parse(&url).unwrap(), &options).unwrap();
    let steps = 240i64;
    write_collections(&store, "worker_0", 1).unwrap();
    write_steps(&store, 0..steps / 2);
    let trial = Trial::open(
        &url,
        TrialOptions {
            storage: options.clone(),
            // Each value is its own request, so the outage hits value reads too.
            readahead_bytes: 0,
            ..TrialOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        trial.steps(Mode::Global, true).unwrap().len(),
        (steps / 2) as usize
    );
    // The rest of the trial appears after the open: the reader must refresh to see it.
    write_steps(&store, steps / 2..steps);
    write_end_marker(&store).unwrap();

    let progress = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let (failed, longest_failure, recovered_after) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut failed = 0usize;
            let mut longest = Duration::ZERO;
            let mut recovered = 0usize;
            for step in 0..steps {
                for (k, name) in TENSORS.iter().enumerate() {
                    let mut failures_here = 0;
                    loop {
                        let started = Instant::now();
                        let got = trial
                            .tensor(name)
                            .and_then(|t| t.value(step, Mode::Global, None));
                        match got {
                            Ok(v) => {
                                assert_eq!(*v, value(step, k), "{name} at step {step}");
                                if failures_here > 0 {
                                    recovered += 1;
                                }
                                break;
                            }
                            Err(e) => {
                                failed += 1;
                                failures_here += 1;
                                longest = longest.max(started.elapsed());
                                let msg = e.to_string();
                                assert!(
                                    matches!(e, TrialError::Storage(_)),
                                    "{name} at step {step}: unexpected error {e:?}"
                                );
                                assert!(
                                    msg.contains("s3://scale-fault/trial")
                                        && (msg.contains("index/")
                                            || msg.contains("events/")
                                            || msg.contains("training_job_end")),
                                    "the error must name store and key: {msg}"
                                );
                                assert!(failures_here < 20, "no recovery: {msg}");
                            }
                        }
                    }
                }
                progress.store(step as usize + 1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
            done.store(true, Ordering::SeqCst);
            (failed, longest, recovered)
        });
        while progress.load(Ordering::SeqCst) < 40 {
            std::thread::sleep(Duration::from_millis(5));
        }
        server.signal("-STOP");
        let at_stop = progress.load(Ordering::SeqCst);
        // Longer than a call can wait (3 attempts of at most 1 s plus backoff), so that
        // calls fail.
        std::thread::sleep(Duration::from_secs(10));
        server.signal("-CONT");
        eprintln!(
            "scale fault test: the server stopped at step {at_stop}, back at step {}",
            progress.load(Ordering::SeqCst)
        );
        reader.join().expect("reader thread")
    });
    assert!(done.load(Ordering::SeqCst));
    eprintln!(
        "scale fault test: {failed} calls failed during the outage (longest {longest_failure:?}), \
         {recovered_after} values read by the next call after a failure; all {} values right",
        steps as usize * TENSORS.len()
    );
    assert!(
        failed > 0,
        "the outage caused no error: the test did not test anything"
    );
    assert!(recovered_after > 0);
    // Bounded retries: 3 attempts of at most 1 s each plus backoff, no second round.
    assert!(
        longest_failure < Duration::from_secs(6),
        "{longest_failure:?}"
    );
    // Nothing wrong was kept: the steps, and every value again from the cache and from the
    // server.
    let all: Vec<i64> = (0..steps).collect();
    assert_eq!(trial.steps(Mode::Global, false).unwrap(), all);
    for pass in 0..2 {
        for step in 0..steps {
            for (k, name) in TENSORS.iter().enumerate() {
                let v = trial
                    .tensor(name)
                    .unwrap()
                    .value(step, Mode::Global, None)
                    .unwrap();
                assert_eq!(*v, value(step, k), "pass {pass}: {name} at step {step}");
            }
        }
        trial.clear_cache();
    }
}
