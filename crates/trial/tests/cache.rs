//! The value cache: a value read twice is read from storage once; `clear_cache` drops what
//! is held, and the next read goes to storage again with the same result.

mod common;

use common::{memory_store, spied_trial};
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
