//! `Tensor::value_once`: the same value, statistics and errors as `Tensor::value`, without
//! decoding a record read on its own and without filling the value cache.

use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{OnceValue, TensorValue, Trial, TrialError, TrialOptions};
use std::path::Path;

const STEPS: i64 = 4;
const NAMES: [&str; 3] = ["a", "b", "c"];

/// A trial of `STEPS` steps of three `side` × `side` tensors of varied dtypes, with NaN,
/// ±Inf and zeros: with `side` 100 an events file is larger than a reader reads whole.
fn write_trial(dir: &Path, side: usize) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    write_train_trial(&store, STEPS, |step| {
        let f = move |ix: IxDyn| match (ix[0] * side + ix[1]) % 41 {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => 0.0,
            k => (step as f64 + 1.0) * (k as f64 - 20.5) * 0.1,
        };
        let shape = IxDyn(&[side, side]);
        vec![
            (
                "a",
                TensorValue::from(ArrayD::from_shape_fn(shape.clone(), |i| f(i) as f32)),
            ),
            (
                "b",
                TensorValue::from(ArrayD::from_shape_fn(shape.clone(), f)),
            ),
            (
                "c",
                TensorValue::from(ArrayD::from_shape_fn(shape, |i| {
                    let v = f(i);
                    if v.is_finite() {
                        (v * 10.0) as i32
                    } else {
                        7
                    }
                })),
            ),
        ]
    })
    .unwrap();
}

fn open(dir: &Path) -> Trial {
    Trial::open(dir.to_str().unwrap(), TrialOptions::default()).unwrap()
}

fn stats_bits(s: Option<smdebug_reduce::FiniteStats>) -> String {
    format!(
        "{:?}",
        s.map(|s| {
            let b = |v: Option<f64>| v.map(f64::to_bits);
            (
                s.finite,
                s.nan,
                s.pos_inf,
                s.neg_inf,
                s.zeros,
                b(s.min()),
                b(s.max()),
                b(s.mean()),
                b(s.std()),
                b(s.l1()),
                b(s.l2()),
            )
        })
    )
}

/// Every value read once equals the value read by `value` (its bytes, so NaN counts), and
/// so do its statistics, bit for bit.
fn check_all(once: &Trial, plain: &Trial, expect_encoded: bool) {
    for step in 0..STEPS {
        for name in NAMES {
            let o = once
                .tensor(name)
                .unwrap()
                .value_once(step, Mode::Global, None)
                .unwrap();
            let v = plain
                .tensor(name)
                .unwrap()
                .value(step, Mode::Global, None)
                .unwrap();
            assert_eq!(
                matches!(o, OnceValue::Encoded(_)),
                expect_encoded,
                "{name} at {step}"
            );
            assert_eq!(
                (o.dtype(), o.shape(), o.len()),
                (v.dtype(), v.shape(), v.len())
            );
            assert_eq!(
                stats_bits(o.finite_stats()),
                stats_bits(v.reduce_view().map(|r| r.finite_stats())),
                "{name} at {step}"
            );
            assert_eq!(o.value().unwrap().to_le_bytes(), v.to_le_bytes());
        }
    }
}

#[test]
fn large_records_are_read_encoded_and_not_cached() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path(), 100);
    let (once, plain) = (open(d.path()), open(d.path()));
    check_all(&once, &plain, true);
    // Nothing went into the cache: a second pass reads the records again, encoded.
    check_all(&once, &plain, true);
    // What `value` cached is served from the cache, decoded.
    let a = once.tensor("a").unwrap();
    let v = a.value(1, Mode::Global, None).unwrap();
    match a.value_once(1, Mode::Global, None).unwrap() {
        OnceValue::Decoded(c) => assert!(std::sync::Arc::ptr_eq(&c, &v)),
        OnceValue::Encoded(_) => panic!("a cached value is read again"),
    }
}

#[test]
fn small_events_files_are_read_whole_and_decoded_as_before() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path(), 4);
    let (once, plain) = (open(d.path()), open(d.path()));
    for step in 0..STEPS {
        // The first record of a small file is read on its own; the file's second miss
        // reads it whole (and caches its records), so the rest come decoded.
        let first = once
            .tensor("a")
            .unwrap()
            .value_once(step, Mode::Global, None)
            .unwrap();
        assert!(matches!(first, OnceValue::Encoded(_)));
        for name in ["b", "c"] {
            let o = once
                .tensor(name)
                .unwrap()
                .value_once(step, Mode::Global, None)
                .unwrap();
            assert!(matches!(o, OnceValue::Decoded(_)), "{name} at {step}");
        }
    }
    check_all(&once, &plain, false);
}

fn errors(dir: &Path, step: i64, name: &str) -> (TrialError, TrialError) {
    let once = open(dir)
        .tensor(name)
        .unwrap()
        .value_once(step, Mode::Global, None)
        .unwrap_err();
    let plain = open(dir)
        .tensor(name)
        .unwrap()
        .value(step, Mode::Global, None)
        .unwrap_err();
    (once, plain)
}

fn event(dir: &Path, step: i64) -> std::path::PathBuf {
    dir.join(smdebug_index::event_file_key(step, "worker_0").unwrap())
}

#[test]
fn damaged_records_fail_as_value_fails() {
    let d = tempfile::tempdir().unwrap();
    write_trial(d.path(), 100);
    // A flipped bit in a value: the payload CRC.
    let p = event(d.path(), 1);
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&p, &bytes).unwrap();
    // Cut inside the last record.
    let p = event(d.path(), 2);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
    // Another step's events file under this step's name: records where the index says
    // none are.
    std::fs::copy(event(d.path(), 0), event(d.path(), 3)).unwrap();
    for (step, name, kind) in [(1, "b", "Record"), (2, "c", "Storage"), (3, "a", "Record")] {
        let (once, plain) = errors(d.path(), step, name);
        assert_eq!(once.to_string(), plain.to_string(), "{name} at {step}");
        assert!(format!("{once:?}").starts_with(kind), "{once:?}");
    }
    // A missing events file: the value is unavailable, as smdebug says.
    std::fs::remove_file(event(d.path(), 0)).unwrap();
    let (once, plain) = errors(d.path(), 0, "a");
    assert_eq!(once.kind().as_str(), "TensorUnavailableForStep");
    assert_eq!(once.to_string(), plain.to_string());
}
