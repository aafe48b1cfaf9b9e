//! Live refreshes list incrementally: each listing of `index/` starts after the token (the
//! last complete step), so a refresh of a long job returns only the new files, never the
//! whole history.

use crate::common::{memory_store, spied_trial};
use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::BlockingStore;
use smdebug_synth::steps::{write_collections, write_step, StepWrite};
use smdebug_trial::{TensorValue, TrialOptions};

fn write(store: &BlockingStore, step: i64) {
    let v = TensorValue::Float32(ArrayD::from_elem(IxDyn(&[2]), step as f32));
    write_step(
        store,
        &StepWrite::new(step, "worker_0", Mode::Train, &[("w", v)]),
    )
    .unwrap();
}

#[test]
fn refreshes_list_only_what_follows_the_token() {
    let (url, location, writer) = memory_store("listing");
    write_collections(&writer, "worker_0", 1).unwrap();
    // 2,500 steps span three index buckets (index/000000000/, …001/, …002/).
    for step in 0..2500 {
        write(&writer, step);
    }
    let (recording, trial) = spied_trial(&url, &location, TrialOptions::default());
    assert_eq!(trial.steps(Mode::Global, false).unwrap().len(), 2500);
    for step in 2500..2503 {
        write(&writer, step);
        trial.refresh_data().unwrap();
    }
    assert_eq!(trial.steps(Mode::Global, false).unwrap().len(), 2503);
    let listings = recording.index_listings();
    // The first listing sees everything; every later one starts after the last complete
    // step and sees at most the one new file.
    assert_eq!(listings[0], (None, 2500));
    for (start_after, n) in &listings[1..] {
        assert!(start_after.is_some(), "{listings:?}");
        assert!(*n <= 1, "a refresh listed {n} files: {listings:?}");
    }
    assert_eq!(
        trial.last_index_token().as_deref(),
        Some("index/000000002/000000002502_worker_0.json")
    );
}
