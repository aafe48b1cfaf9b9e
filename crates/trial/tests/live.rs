//! A trial read while it is written: a writer thread adds steps for two workers; the reader
//! waits for them. Checks that a step becomes visible only when every worker wrote it, that
//! `wait_for_steps` / `has_passed_step` follow the job, and that the end marker turns
//! waiting into `NoMoreData`. Prints the latency from an index file landing to the reader
//! seeing the step complete.

use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_exceptions::{AnalysisError, StepState};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::{TensorValue, Trial, TrialError, TrialOptions};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const STEPS: i64 = 12;
const WORKERS: [&str; 2] = ["worker_0", "worker_1"];

fn write(store: &BlockingStore, step: i64, worker: &str) {
    let v = TensorValue::Float32(ArrayD::from_elem(IxDyn(&[8]), step as f32));
    write_step(
        store,
        &StepWrite::new(step, worker, Mode::Train, &[("w", v)]),
    )
    .unwrap();
}

#[test]
fn reader_follows_a_running_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap().to_owned();
    let store = BlockingStore::open(&Location::Local(dir.path().to_path_buf())).unwrap();
    let (landed_tx, landed_rx) = mpsc::channel::<(i64, Instant)>();

    // The reader starts before anything exists: it waits for the collections files.
    let reader_path = path.clone();
    let reader = std::thread::spawn(move || {
        let t = Trial::open(&reader_path, TrialOptions::default()).unwrap();
        let mut seen = Vec::new();
        for step in 0..STEPS {
            t.wait_for_steps(&[step], Mode::Global).unwrap();
            seen.push((step, Instant::now()));
            let v = t
                .tensor("w")
                .unwrap()
                .value(step, Mode::Global, Some("worker_1"))
                .unwrap();
            assert_eq!(v.as_array::<f32>().unwrap()[[0]], step as f32);
        }
        // Past the last step: waits until the end marker, then NoMoreData.
        let e = t.wait_for_steps(&[STEPS], Mode::Global).unwrap_err();
        match e {
            TrialError::Analysis(AnalysisError::NoMoreData {
                step, last_step, ..
            }) => {
                assert_eq!((step, last_step), (STEPS, STEPS - 1));
            }
            other => panic!("expected NoMoreData, got {other:?}"),
        }
        assert_eq!(
            t.has_passed_step(STEPS, Mode::Global).unwrap(),
            StepState::Unavailable
        );
        seen
    });

    std::thread::sleep(Duration::from_millis(50));
    for w in WORKERS {
        write_collections(&store, w, 2).unwrap();
    }
    // A second reader checks the half-written states synchronously.
    let probe = Trial::open(&path, TrialOptions::default()).unwrap();
    for step in 0..STEPS {
        write(&store, step, WORKERS[0]);
        assert_eq!(
            probe.has_passed_step(step, Mode::Global).unwrap(),
            StepState::NotYetAvailable,
            "step {step} with one of two workers"
        );
        assert!(!probe.steps(Mode::Global, false).unwrap().contains(&step));
        assert!(probe.steps(Mode::Global, true).unwrap().contains(&step));
        std::thread::sleep(Duration::from_millis(15));
        write(&store, step, WORKERS[1]);
        landed_tx.send((step, Instant::now())).unwrap();
        assert_eq!(
            probe.has_passed_step(step, Mode::Global).unwrap(),
            StepState::Available
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    std::thread::sleep(Duration::from_millis(100));
    write_end_marker(&store).unwrap();
    let seen = reader.join().unwrap();
    drop(landed_tx);
    let landed: Vec<(i64, Instant)> = landed_rx.iter().collect();
    let mut latencies: Vec<Duration> = seen
        .iter()
        .zip(&landed)
        .map(|((s1, seen), (s2, landed))| {
            assert_eq!(s1, s2);
            seen.saturating_duration_since(*landed)
        })
        .collect();
    latencies.sort();
    println!(
        "index file landed -> reader saw the step: median {:?}, max {:?} over {} steps",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1],
        latencies.len()
    );
    // Backoff is capped well below smdebug's fixed 2 s sleep.
    assert!(latencies[latencies.len() - 1] < Duration::from_millis(1500));
}

#[test]
fn bounded_wait_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = BlockingStore::open(&Location::Local(dir.path().to_path_buf())).unwrap();
    write_collections(&store, "worker_0", 1).unwrap();
    write(&store, 0, "worker_0");
    let t = Trial::open(dir.path().to_str().unwrap(), TrialOptions::default()).unwrap();
    let e = t
        .wait_for_steps_timeout(&[0, 1], Mode::Global, Duration::from_millis(100))
        .unwrap_err();
    assert!(matches!(e, TrialError::Timeout { .. }), "{e:?}");
    let e = Trial::open(
        &format!("{}/missing", dir.path().display()),
        TrialOptions {
            collections_timeout: Some(Duration::from_millis(50)),
            ..TrialOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, TrialError::Timeout { .. }), "{e:?}");
}
