//! Reading events files ahead from object stores: a file is fetched whole on its second
//! miss (its first when small), so reading a trial tensor by tensor costs about two requests
//! per events file instead of one per record; with `readahead_bytes: 0`, or when a file is
//! bigger than the budget, only the records asked for are read. Values are the same either
//! way.

use crate::common::{memory_store, spied_trial};
use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::Location;
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{TensorValue, TrialOptions};
use std::sync::Arc;

const STEPS: i64 = 4;
const TENSORS: usize = 12;

/// A trial in memory whose events files hold TENSORS records of `side`² float32 each.
fn write_trial(name: &str, side: usize) -> (String, Location) {
    let (url, location, store) = memory_store(&format!("readahead-{name}"));
    write_train_trial(&store, STEPS, |step| {
        (0..TENSORS)
            .map(|i| {
                let v = ArrayD::from_shape_fn(IxDyn(&[side, side]), |ix| {
                    (ix[0] * side + ix[1] + i) as f32 + step as f32 * 0.5
                });
                (format!("t{i:02}"), TensorValue::Float32(v))
            })
            .collect()
    })
    .unwrap();
    (url, location)
}

/// Every value, tensor by tensor, and how many ranged reads it took.
fn read_all(
    url: &str,
    location: &Location,
    readahead_bytes: usize,
) -> (Vec<Arc<TensorValue>>, usize) {
    let options = TrialOptions {
        cache_bytes: 0,
        readahead_bytes,
        ..TrialOptions::default()
    };
    let (spy, trial) = spied_trial(url, location, options);
    let mut values = Vec::new();
    for name in trial.tensor_names().unwrap() {
        let t = trial.tensor(&name).unwrap();
        for step in t.steps(Mode::Global, false).unwrap() {
            values.push(t.value(step, Mode::Global, None).unwrap());
        }
    }
    (values, spy.ranged_reads())
}

#[test]
fn files_are_read_whole_on_their_second_miss() {
    // 12 × 300² float32 = 4.3 MB per events file: above the first-miss size.
    let (url, location) = write_trial("large", 300);
    let (ahead, ahead_reads) = read_all(&url, &location, 64 << 20);
    let (plain, plain_reads) = read_all(&url, &location, 0);
    assert_eq!(ahead, plain);
    assert_eq!(ahead.len(), STEPS as usize * TENSORS);
    assert_eq!(
        plain_reads,
        STEPS as usize * TENSORS,
        "without read-ahead, one ranged read per record"
    );
    assert_eq!(
        ahead_reads,
        2 * STEPS as usize,
        "first tensor: one ranged read per file; second: each file whole; then none"
    );
}

#[test]
fn small_files_are_read_whole_on_their_first_miss() {
    let (url, location) = write_trial("small", 8);
    let (ahead, ahead_reads) = read_all(&url, &location, 64 << 20);
    let (plain, _) = read_all(&url, &location, 0);
    assert_eq!(ahead, plain);
    assert_eq!(ahead_reads, STEPS as usize, "one read per events file");
}

#[test]
fn files_larger_than_the_budget_are_read_by_record() {
    let (url, location) = write_trial("budget", 300);
    let (_, reads) = read_all(&url, &location, 1 << 20);
    assert_eq!(reads, STEPS as usize * TENSORS);
}
