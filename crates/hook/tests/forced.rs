//! `Hook::save_forced`: smdebug's forced save (the Keras hook's losses and metrics at the
//! end of an epoch), written into the current step whether or not it is due.

use ndarray::arr1;
use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, HookError, Saved, TensorValue};
use smdebug_index::IndexFile;
use smdebug_record::{decode_record_at, decode_tensor_event};
use std::path::Path;

fn scalar(v: f64) -> TensorValue {
    TensorValue::from(arr1(&[v]).into_dyn())
}

/// `(name, value, mode, mode step)` of every record of global step `step`, in file order;
/// `None` when the step was not published.
fn step_records(trial: &Path, step: i64) -> Option<Vec<(String, TensorValue, Mode, i64)>> {
    let key = smdebug_index::index_file_key(step, "worker_0").unwrap();
    let bytes = std::fs::read(trial.join(&key)).ok()?;
    let idx = IndexFile::parse(&key, &bytes).unwrap();
    let Some(ev) = idx.meta.event_file_name.as_deref() else {
        return Some(Vec::new());
    };
    let file = std::fs::read(trial.join(ev)).unwrap();
    Some(
        idx.tensors
            .iter()
            .map(|t| {
                let rec = decode_record_at(&file, t.start_idx, t.length).unwrap();
                let e = decode_tensor_event(rec.payload).unwrap();
                (e.tag, e.tensor, idx.meta.mode, idx.meta.mode_step)
            })
            .collect(),
    )
}

#[test]
fn a_forced_value_is_written_into_a_step_that_is_not_due() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trial");
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(3)))
        .include_collections(["metrics", "losses"])
        .build()
        .unwrap();
    assert!(matches!(
        hook.save_forced("loss", scalar(1.0), "losses"),
        Err(HookError::NoStep { .. })
    ));
    hook.set_mode(Mode::Train);
    for _ in 0..2 {
        hook.step().unwrap();
    }
    hook.save_scalar("lr", 0.5, Some(7.0));
    hook.save_tensor("custom", scalar(9.0), "default");
    hook.set_mode(Mode::Eval);
    // Step 1 (TRAIN 1) is not due: the forced values go into it, stamped TRAIN 1.
    assert_eq!(hook.save("loss", scalar(0.1)).unwrap(), Saved::NotDue);
    assert_eq!(
        hook.save_forced("loss", scalar(0.25), "losses").unwrap(),
        Saved::Queued
    );
    hook.save_forced("accuracy", scalar(0.75), "metrics")
        .unwrap();
    hook.step().unwrap();
    hook.close().unwrap();
    assert!(
        step_records(&t, 0).is_none(),
        "step 0 is due but saved nothing"
    );
    let s1 = step_records(&t, 1).expect("the forced step is published");
    let got: Vec<(&str, &TensorValue)> = s1.iter().map(|r| (r.0.as_str(), &r.1)).collect();
    // The cached scalar comes with the step; the custom tensor of a step that is not due
    // does not.
    assert_eq!(
        got,
        [
            ("loss", &scalar(0.25)),
            ("accuracy", &scalar(0.75)),
            ("scalar/lr", &scalar(0.5))
        ]
    );
    assert!(s1.iter().all(|r| r.2 == Mode::Train && r.3 == 1));
    let coll =
        std::fs::read_to_string(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    assert!(coll.contains(r#""tensor_names": ["accuracy"]"#), "{coll}");
    // EVAL 0 (global 2) is due but saved nothing: no files.
    assert!(step_records(&t, 2).is_none());
}

#[test]
fn in_a_due_step_the_forced_value_comes_after_the_steps_own() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trial");
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .include_collections(["metrics", "losses"])
        .build()
        .unwrap();
    hook.step().unwrap();
    hook.save("loss", scalar(0.1)).unwrap();
    hook.save_tensor("accuracy", scalar(0.2), "metrics");
    hook.save_forced("loss", scalar(0.3), "losses").unwrap();
    hook.save_forced("accuracy", scalar(0.4), "metrics")
        .unwrap();
    hook.close().unwrap();
    let records = step_records(&t, 0).unwrap();
    // Readers take a name's last record in a step: the forced values.
    let last = |name: &str| {
        records
            .iter()
            .rev()
            .find(|r| r.0 == name)
            .map(|r| r.1.clone())
    };
    assert_eq!(last("loss"), Some(scalar(0.3)));
    assert_eq!(last("accuracy"), Some(scalar(0.4)));
    // The step's own save_tensor value was written before the forced one.
    assert_eq!(
        records.iter().filter(|r| r.0 == "accuracy").count(),
        2,
        "{records:?}"
    );
}

#[test]
fn a_collection_that_saves_no_raw_values_takes_no_forced_value() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trial");
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(5)))
        .build()
        .unwrap();
    let norms = smdebug_config::ReductionConfig {
        save_raw_tensor: false,
        norms: vec![smdebug_config::Reduction::L2],
        ..Default::default()
    };
    hook.get_collection("norms").reduction_config = Some(norms);
    hook.get_collection("norms").include("^w").unwrap();
    hook.step().unwrap();
    hook.step().unwrap();
    assert_eq!(
        hook.save_forced("w", scalar(1.0), "norms").unwrap(),
        Saved::NotDue
    );
    hook.step().unwrap();
    hook.close().unwrap();
    assert!(
        step_records(&t, 1).is_none(),
        "nothing forced: step 1 stays unpublished"
    );
}
