//! The value cache: a value read twice is read from storage once; `clear_cache` drops what
//! is held, and the next read goes to storage again with the same result.

use crate::common::{memory_store, spied_trial};
use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_synth::steps::{write_collections, write_step, StepWrite};
use smdebug_trial::{TensorValue, TrialOptions};

#[test]
fn cached_values_are_read_once_and_clear_cache_drops_them() {
    let (url, location, writer) = memory_store("cache");
    write_collections(&writer, "worker_0", 1).unwrap();
    let value = TensorValue::Float32(ArrayD::from_shape_fn(IxDyn(&[3, 2]), |i| i[0] as f32 - 0.5));
    write_step(
        &writer,
        &StepWrite::new(0, "worker_0", Mode::Train, &[("w", value.clone())]),
    )
    .unwrap();
    let (counting, trial) = spied_trial(&url, &location, TrialOptions::default());
    let t = trial.tensor("w").unwrap();
    let reads = || counting.ranged_reads();

    let first = t.value(0, Mode::Global, None).unwrap();
    assert_eq!(*first, value);
    let after_first = reads();
    assert!(after_first >= 1);
    assert_eq!(*t.value(0, Mode::Global, None).unwrap(), value);
    assert_eq!(
        reads(),
        after_first,
        "the second read is served by the cache"
    );

    trial.clear_cache();
    assert_eq!(*first, value, "a value handed out stays valid");
    assert_eq!(*t.value(0, Mode::Global, None).unwrap(), value);
    assert!(
        reads() > after_first,
        "after clear_cache the value is read again"
    );
}

/// Reads of tensor `w` of steps `steps`, one `value` call each; how many ranged reads
/// they cost.
fn reads_of(
    counting: &crate::common::Spy,
    trial: &smdebug_trial::Trial,
    steps: std::ops::Range<i64>,
) -> usize {
    let before = counting.ranged_reads();
    let t = trial.tensor("w").unwrap();
    for s in steps {
        let v = t.value(s, Mode::Global, None).unwrap();
        assert_eq!(*v, value_at(s), "step {s}");
    }
    counting.ranged_reads() - before
}

fn value_at(step: i64) -> TensorValue {
    TensorValue::Float32(ArrayD::from_shape_fn(IxDyn(&[64]), |i| {
        (step * 100) as f32 + i[0] as f32
    }))
}

#[test]
fn a_one_pass_scan_does_not_push_out_what_is_read_again() {
    // One file per step, 256 values of about 330 bytes in the cache's accounting: a
    // cache of 16 KiB holds about 45 of them, its probation part none.
    let (url, location, writer) = memory_store("cache-scan");
    write_collections(&writer, "worker_0", 1).unwrap();
    for s in 0..256 {
        let tensors = [("w", value_at(s))];
        write_step(
            &writer,
            &StepWrite::new(s, "worker_0", Mode::Train, &tensors),
        )
        .unwrap();
    }
    let options = TrialOptions {
        cache_bytes: 16 << 10,
        // Count every record read: no events file read ahead.
        readahead_bytes: 0,
        ..TrialOptions::default()
    };
    let (counting, trial) = spied_trial(&url, &location, options);
    // A working set of 8 values read three times: the first two passes read it (the
    // second keeps it, it was asked for again), the third is served from the cache.
    let set = 0..8;
    assert_eq!(reads_of(&counting, &trial, set.clone()), 8);
    assert_eq!(reads_of(&counting, &trial, set.clone()), 8);
    assert_eq!(reads_of(&counting, &trial, set.clone()), 0);
    // A scan of every other value once, many times the cache: it does not push the
    // working set out (a FIFO of the whole budget would have).
    assert_eq!(reads_of(&counting, &trial, 8..256), 248);
    assert_eq!(
        reads_of(&counting, &trial, set.clone()),
        0,
        "the set stayed"
    );
    // The scanned values were not kept: a second scan reads them again.
    assert_eq!(reads_of(&counting, &trial, 200..256), 56);
    // `prefetch` keeps what it reads at once (within the budget: 128 KiB hold them all).
    let options = TrialOptions {
        cache_bytes: 128 << 10,
        readahead_bytes: 0,
        ..TrialOptions::default()
    };
    let (counting, trial) = spied_trial(&url, &location, options);
    trial.tensor("w").unwrap().prefetch();
    assert_eq!(counting.ranged_reads(), 256);
    assert_eq!(
        reads_of(&counting, &trial, 0..256),
        0,
        "prefetched values are kept"
    );
}
