//! Small events files on local disk are read whole on their second miss and decoded in one
//! pass, so that a reader pays per file, not per record. What must hold: every value equals the
//! one a record-by-record read gives; the rest of a file is served without reading it
//! again; a damaged record still fails on its own, with its own error, while the other
//! records of its file read back right.

use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::{TensorValue, Trial, TrialError, TrialOptions};
use std::path::Path;

const WORKERS: usize = 3;
const STEPS: i64 = 4;
const TENSORS: usize = 20;

fn worker(w: usize) -> String {
    format!("worker_{w}")
}

fn name(t: usize) -> String {
    format!("layer_{t:02}.weight")
}

/// Distinct for every (tensor, step, worker); 1 to 10 elements, so records differ in size.
fn value(t: usize, step: i64, w: usize) -> TensorValue {
    let n = 1 + (t + w) % 10;
    TensorValue::Float32(ArrayD::from_shape_fn(IxDyn(&[n]), |ix| {
        (t * 1000 + step as usize * 10 + w) as f32 + ix[0] as f32 / 100.0
    }))
}

fn write_trial(dir: &Path) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    for w in 0..WORKERS {
        write_collections(&store, &worker(w), WORKERS as i64).unwrap();
    }
    for step in 0..STEPS {
        for w in 0..WORKERS {
            let names: Vec<String> = (0..TENSORS).map(name).collect();
            let tensors: Vec<(&str, TensorValue)> = names
                .iter()
                .enumerate()
                .map(|(t, n)| (n.as_str(), value(t, step, w)))
                .collect();
            let wn = worker(w);
            write_step(&store, &StepWrite::new(step, &wn, Mode::Train, &tensors)).unwrap();
        }
    }
    write_end_marker(&store).unwrap();
}

fn open(dir: &Path, cache_bytes: usize) -> Trial {
    let options = TrialOptions {
        cache_bytes,
        ..TrialOptions::default()
    };
    Trial::open(dir.to_str().unwrap(), options).unwrap()
}

fn events_file(dir: &Path, step: i64, w: usize) -> std::path::PathBuf {
    dir.join(smdebug_index::event_file_key(step, &worker(w)).unwrap())
}

#[test]
fn every_value_one_call_each_equals_what_was_written_and_a_record_by_record_read() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path());
    // No cache: never read whole, every record read on its own.
    let by_record = open(d.path(), 0);
    let whole = open(d.path(), TrialOptions::default().cache_bytes);
    // Tensor by tensor over steps and workers (files touched again and again), as a user's
    // every-value loop goes, twice: the second pass is served from memory.
    for _ in 0..2 {
        for t in 0..TENSORS {
            let a = whole.tensor(&name(t)).unwrap();
            let b = by_record.tensor(&name(t)).unwrap();
            for step in a.steps(Mode::Global, false).unwrap() {
                for w in a.workers(step, Mode::Global).unwrap() {
                    let wi: usize = w.trim_start_matches("worker_").parse().unwrap();
                    let got = a.value(step, Mode::Global, Some(&w)).unwrap();
                    assert_eq!(*got, value(t, step, wi), "{} step {step} {w}", name(t));
                    let other = b.value(step, Mode::Global, Some(&w)).unwrap();
                    assert_eq!(got, other);
                }
            }
        }
    }
}

#[test]
fn the_rest_of_a_file_read_whole_is_served_without_reading_it_again() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path());
    let trial = open(d.path(), TrialOptions::default().cache_bytes);
    let (step, w) = (2, 1);
    let wn = worker(w);
    // The first miss reads one record, the second the whole file.
    for t in 0..2 {
        let v = trial.tensor(&name(t)).unwrap();
        assert_eq!(
            *v.value(step, Mode::Global, Some(&wn)).unwrap(),
            value(t, step, w)
        );
    }
    std::fs::remove_file(events_file(d.path(), step, w)).unwrap();
    for t in 0..TENSORS {
        let v = trial.tensor(&name(t)).unwrap();
        let got = v.value(step, Mode::Global, Some(&wn));
        assert_eq!(*got.unwrap(), value(t, step, w), "{}", name(t));
    }
    // Another file of the same step, never read, is gone for real once deleted.
    std::fs::remove_file(events_file(d.path(), step, 0)).unwrap();
    let e = trial
        .tensor(&name(5))
        .unwrap()
        .value(step, Mode::Global, Some("worker_0"))
        .unwrap_err();
    assert!(
        matches!(e, TrialError::Analysis(_)),
        "a missing events file makes the value unavailable: {e:?}"
    );
}

#[test]
fn a_damaged_record_in_a_file_read_whole_fails_alone_with_its_own_error() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path());
    let (step, w, damaged) = (1, 2, 7);
    let wn = worker(w);
    let probe = open(d.path(), 0);
    let loc = probe
        .tensor(&name(damaged))
        .unwrap()
        .step_record_locations(step, Mode::Global, Some(&wn))
        .unwrap()
        .remove(0);
    // A byte of the value, just before the 4-byte footer: framing intact, payload wrong.
    let path = events_file(d.path(), step, w);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = (loc.start + loc.length - 5) as usize;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();

    let trial = open(d.path(), TrialOptions::default().cache_bytes);
    for t in (0..TENSORS).filter(|&t| t != damaged) {
        let v = trial.tensor(&name(t)).unwrap();
        let got = v.value(step, Mode::Global, Some(&wn)).unwrap();
        assert_eq!(*got, value(t, step, w), "{}", name(t));
    }
    let e = trial
        .tensor(&name(damaged))
        .unwrap()
        .value(step, Mode::Global, Some(&wn))
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, TrialError::Record(_)), "{e:?}");
    assert!(text.contains("000000000001_worker_2.tfevents"), "{text}");
    // The same error as a record-by-record read of it gives.
    let alone = probe
        .tensor(&name(damaged))
        .unwrap()
        .value(step, Mode::Global, Some(&wn))
        .unwrap_err();
    assert_eq!(text, alone.to_string());
}
