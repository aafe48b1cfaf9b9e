//! The corruption matrix: truncated, bit-flipped, deleted and duplicated event, index and
//! collections files. Each gives a typed error that names the file (and the byte offset or
//! JSON position) for what it affects; every other step stays readable; nothing panics.

use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{TensorValue, Trial, TrialError, TrialOptions};
use std::path::Path;

const STEPS: i64 = 7;
const NAMES: [&str; 3] = ["a", "b", "c"];

fn write_trial(dir: &Path) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    write_train_trial(&store, STEPS, |step| {
        NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = ArrayD::from_shape_fn(IxDyn(&[4, 4]), |ix| {
                    (step * 100 + i as i64 * 10) as f32 + ix[0] as f32 + ix[1] as f32 / 10.0
                });
                (*n, TensorValue::Float32(v))
            })
            .collect()
    })
    .unwrap();
}

fn event(dir: &Path, step: i64) -> std::path::PathBuf {
    dir.join(smdebug_index::event_file_key(step, "worker_0").unwrap())
}

fn index(dir: &Path, step: i64) -> std::path::PathBuf {
    dir.join(smdebug_index::index_file_key(step, "worker_0").unwrap())
}

fn open(dir: &Path, skip: bool) -> Result<Trial, TrialError> {
    Trial::open(
        dir.to_str().unwrap(),
        TrialOptions {
            skip_corrupt_index_files: skip,
            ..TrialOptions::default()
        },
    )
}

/// Every (step, name) except those in `damaged` reads back with the value written.
fn others_readable(t: &Trial, damaged: &[(i64, &str)]) {
    for step in 0..STEPS {
        for (i, n) in NAMES.iter().enumerate() {
            if damaged.contains(&(step, *n)) || damaged.contains(&(step, "*")) {
                continue;
            }
            let v = t
                .tensor(n)
                .and_then(|x| x.value(step, Mode::Global, None))
                .unwrap_or_else(|e| panic!("step {step} {n}: {e}"));
            let want = (step * 100 + i as i64 * 10) as f32;
            assert_eq!(v.as_array::<f32>().unwrap()[[0, 0]], want);
        }
    }
}

fn value_err(t: &Trial, step: i64, name: &str) -> TrialError {
    t.tensor(name)
        .unwrap()
        .value(step, Mode::Global, None)
        .unwrap_err()
}

fn assert_names(e: &TrialError, file: &str, position: &str) {
    let text = e.to_string();
    assert!(text.contains(file), "{text:?} does not name {file}");
    assert!(
        text.contains(position),
        "{text:?} does not say {position:?}"
    );
}

fn fresh() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path());
    d
}

#[test]
fn truncated_event_file() {
    let d = fresh();
    let p = event(d.path(), 2);
    let bytes = std::fs::read(&p).unwrap();
    // Cut inside the second record: the first stays whole.
    let cut = bytes.len() * 2 / 3 - 10;
    std::fs::write(&p, &bytes[..cut]).unwrap();
    let t = open(d.path(), false).unwrap();
    let e = value_err(&t, 2, "c");
    assert!(matches!(e, TrialError::Storage(_)), "{e:?}");
    assert_names(&e, "000000000002_worker_0.tfevents", "..");
    others_readable(&t, &[(2, "b"), (2, "c")]);
}

#[test]
fn bit_flipped_event_file() {
    let d = fresh();
    let p = event(d.path(), 3);
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&p, &bytes).unwrap();
    let t = open(d.path(), false).unwrap();
    let e = value_err(&t, 3, "b");
    assert!(matches!(e, TrialError::Record(_)), "{e:?}");
    assert_names(&e, "000000000003_worker_0.tfevents", "at byte");
    others_readable(&t, &[(3, "b")]);
}

#[test]
fn deleted_event_file() {
    let d = fresh();
    std::fs::remove_file(event(d.path(), 4)).unwrap();
    let t = open(d.path(), false).unwrap();
    // smdebug's condition for an indexed record whose event file is missing.
    let e = value_err(&t, 4, "a");
    assert_eq!(e.kind().as_str(), "TensorUnavailableForStep");
    others_readable(&t, &[(4, "*")]);
}

#[test]
fn duplicated_event_file() {
    let d = fresh();
    std::fs::copy(event(d.path(), 1), event(d.path(), 5)).unwrap();
    let t = open(d.path(), false).unwrap();
    let e = value_err(&t, 5, "a");
    // The index's payload CRC catches the foreign record first; without one, the record's
    // step would (TrialError::WrongStep).
    assert!(matches!(e, TrialError::Record(_)), "{e:?}");
    assert_names(&e, "000000000005_worker_0.tfevents", "at byte");
    others_readable(&t, &[(5, "*")]);
}

#[test]
fn truncated_index_file() {
    let d = fresh();
    let p = index(d.path(), 2);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    // smdebug's behaviour: the refresh fails, naming the file.
    let e = open(d.path(), false).unwrap_err();
    assert_eq!(e.kind().as_str(), "IndexReaderException");
    assert_names(&e, "000000000002_worker_0.json", "column");
    // Skipping it: the step's queries report it, everything else reads.
    let t = open(d.path(), true).unwrap();
    assert_eq!(t.index_errors().len(), 1);
    let e = value_err(&t, 2, "a");
    assert_names(&e, "000000000002_worker_0.json", "column");
    others_readable(&t, &[(2, "*")]);
}

#[test]
fn bit_flipped_index_file() {
    let d = fresh();
    let p = index(d.path(), 3);
    let text = std::fs::read_to_string(&p).unwrap();
    // Move the second record's start by one byte: the range no longer holds a record.
    let i = text.find("\"start_idx\": ").unwrap() + 13;
    let j = text[i + 1..].find("\"start_idx\": ").unwrap() + i + 1 + 13;
    let mut bytes = text.into_bytes();
    bytes[j] = if bytes[j] == b'9' { b'8' } else { bytes[j] + 1 };
    std::fs::write(&p, &bytes).unwrap();
    let t = open(d.path(), false).unwrap();
    let e = value_err(&t, 3, "b");
    assert_names(&e, "000000000003_worker_0.tfevents", "at byte");
    others_readable(&t, &[(3, "b")]);
}

#[test]
fn deleted_index_file() {
    let d = fresh();
    std::fs::remove_file(index(d.path(), 3)).unwrap();
    let t = open(d.path(), false).unwrap();
    let e = value_err(&t, 3, "a");
    assert_eq!(e.kind().as_str(), "StepUnavailable");
    others_readable(&t, &[(3, "*")]);
}

#[test]
fn duplicated_index_file() {
    let d = fresh();
    // Step 6's index replaced by a copy of step 1's: its entries point into step 1's event
    // file and claim step 1's mode step, so they replace step 1's entries (as in smdebug).
    // Both steps then fail, naming the duplicate and the record's offset.
    std::fs::copy(index(d.path(), 1), index(d.path(), 6)).unwrap();
    let t = open(d.path(), false).unwrap();
    for step in [1, 6] {
        let e = value_err(&t, step, "a");
        assert!(
            matches!(
                e,
                TrialError::WrongStep {
                    found: 1,
                    expected: 6,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_names(&e, "000000000006_worker_0.json", "at byte");
    }
    others_readable(&t, &[(1, "*"), (6, "*")]);
}

#[test]
fn damaged_collections_files() {
    let d = fresh();
    let p = d
        .path()
        .join(smdebug_index::collections_file_key("worker_0").unwrap());
    let good = std::fs::read(&p).unwrap();
    std::fs::write(&p, &good[..good.len() / 2]).unwrap();
    let e = open(d.path(), false).unwrap_err();
    assert_names(&e, "worker_0_collections.json", "at byte");
    let mut flipped = good.clone();
    flipped[1] ^= 0x40;
    std::fs::write(&p, &flipped).unwrap();
    let e = open(d.path(), false).unwrap_err();
    assert_names(&e, "worker_0_collections.json", "");
    std::fs::remove_file(&p).unwrap();
    // No collections file and the job ended: MissingCollectionFiles.
    assert_eq!(
        open(d.path(), false).unwrap_err().kind().as_str(),
        "MissingCollectionFiles"
    );
    // A duplicate under another worker's name: one more worker, every step readable.
    std::fs::write(&p, &good).unwrap();
    std::fs::copy(&p, p.with_file_name("worker_9_collections.json")).unwrap();
    let t = open(d.path(), false).unwrap();
    assert_eq!(t.workers().unwrap(), ["worker_0", "worker_9"]);
    others_readable(&t, &[]);
}

// Events files damaged while a trial holds them open (local disk keeps up to
// `TrialOptions::open_files` events files open between reads). A trial's view of its files
// moves when it refreshes: until then a held file serves the bytes its view had, as the
// value cache serves the values it holds; once it has refreshed, the handle must not serve
// the bytes the file had before.

/// A trial that decodes every value from disk on each call (no value cache, so no file is
/// read whole), after one read of every value, which leaves every events file open.
fn open_and_read_all(dir: &Path) -> Trial {
    let t = Trial::open(
        dir.to_str().unwrap(),
        TrialOptions {
            cache_bytes: 0,
            ..TrialOptions::default()
        },
    )
    .unwrap();
    others_readable(&t, &[]);
    t
}

#[test]
fn event_file_truncated_while_held_open() {
    let d = fresh();
    let t = open_and_read_all(d.path());
    let p = event(d.path(), 2);
    let bytes = std::fs::read(&p).unwrap();
    // In place (the same file, shorter): cut inside the second record.
    std::fs::write(&p, &bytes[..bytes.len() * 2 / 3 - 10]).unwrap();
    let e = value_err(&t, 2, "c");
    assert!(matches!(e, TrialError::Storage(_)), "{e:?}");
    assert_names(&e, "000000000002_worker_0.tfevents", "..");
    others_readable(&t, &[(2, "b"), (2, "c")]);
}

#[test]
fn event_file_replaced_while_held_open() {
    let d = fresh();
    let t = open_and_read_all(d.path());
    // Replaced as a writer replaces a file: a new file renamed over it.
    let p = event(d.path(), 5);
    let tmp = p.with_extension("new");
    std::fs::copy(event(d.path(), 1), &tmp).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    others_readable(&t, &[]);
    t.refresh_data().unwrap();
    // The new file's record, not the old one's value: caught as in duplicated_event_file.
    let e = value_err(&t, 5, "a");
    assert!(matches!(e, TrialError::Record(_)), "{e:?}");
    assert_names(&e, "000000000005_worker_0.tfevents", "at byte");
    others_readable(&t, &[(5, "*")]);
}

#[test]
fn event_file_deleted_while_held_open() {
    let d = fresh();
    let t = open_and_read_all(d.path());
    std::fs::remove_file(event(d.path(), 4)).unwrap();
    others_readable(&t, &[]);
    t.refresh_data().unwrap();
    let e = value_err(&t, 4, "a");
    assert_eq!(e.kind().as_str(), "TensorUnavailableForStep");
    others_readable(&t, &[(4, "*")]);
    // Put back, it reads again.
    write_trial(d.path());
    others_readable(&t, &[]);
}

/// How many of this process's open files lie under `dir`.
#[cfg(target_os = "linux")]
fn open_files_under(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn a_trial_keeps_a_bounded_number_of_events_files_open() {
    let d = tempfile::tempdir().unwrap();
    let store = BlockingStore::open(&Location::Local(d.path().to_path_buf())).unwrap();
    let steps = 80;
    write_train_trial(&store, steps, |step| {
        let v = ArrayD::from_elem(IxDyn(&[3]), step as f32);
        vec![("w", TensorValue::Float32(v))]
    })
    .unwrap();
    let limit = 16;
    let t = Trial::open(
        d.path().to_str().unwrap(),
        TrialOptions {
            cache_bytes: 0,
            open_files: limit,
            ..TrialOptions::default()
        },
    )
    .unwrap();
    let w = t.tensor("w").unwrap();
    for round in 0..2 {
        let values = w.values(Mode::Global, None).unwrap();
        assert_eq!(values.len(), steps as usize);
        for step in 0..steps {
            let v = w.value(step, Mode::Global, None).unwrap();
            assert_eq!(
                v.as_array::<f32>().unwrap()[[0]],
                step as f32,
                "round {round}"
            );
        }
        let open = open_files_under(d.path());
        assert!(
            (1..=limit).contains(&open),
            "{open} files open under the trial after reading {steps} events files"
        );
    }
    drop(t);
    assert_eq!(
        open_files_under(d.path()),
        0,
        "dropping the trial closes them"
    );
}
