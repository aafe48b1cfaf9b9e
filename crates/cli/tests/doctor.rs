//! `smdebug doctor` on a matrix of broken trials, each built from a good one our hook
//! writes: every problem is named (with file and offset where it has them), and the good
//! trial has none. (`tests/conformance/doctor.rs` runs it on every peer preset.)

use ndarray::arr1;
use serde_json::Value;
use smdebug_config::{Collection, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A good trial: steps 0..8 every step, a weight and its gradient changing every step.
/// With `accumulate`, the weight changes only every second step (the optimizer steps once
/// per two hook steps).
fn good(dir: &Path, accumulate: bool) -> PathBuf {
    let t = dir.join("t");
    let mut weights = Collection::new("weights");
    weights.include("weight$").unwrap();
    let mut grads = Collection::new("gradients");
    grads.include("^gradient/").unwrap();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .without_default_collections()
        .collection(weights)
        .collection(grads)
        .include_collections(["weights", "gradients"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .build()
        .unwrap();
    for step in 0..8 {
        hook.step().unwrap();
        let update = if accumulate { step / 2 } else { step } as f32;
        let w = arr1(&[1.0f32 + update, 2.0, 3.0]).into_dyn();
        let g = arr1(&[0.1f32 * (step + 1) as f32, 0.2, 0.3]).into_dyn();
        hook.save("fc.weight", TensorValue::from(w)).unwrap();
        hook.save("gradient/fc.weight", TensorValue::from(g))
            .unwrap();
    }
    hook.close().unwrap();
    t
}

fn doctor(trial: &Path) -> (i32, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(["doctor", "--json"])
        .arg(trial)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap(), v)
}

/// The findings' kinds, and their texts joined.
fn kinds(v: &Value) -> (Vec<String>, String) {
    let f = v["findings"].as_array().unwrap();
    (
        f.iter()
            .map(|f| f["kind"].as_str().unwrap().to_owned())
            .collect(),
        f.iter()
            .map(|f| f["what"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn step_file(t: &Path, kind: &str, step: i64, worker: &str) -> PathBuf {
    let key = match kind {
        "index" => smdebug_index::index_file_key(step, worker).unwrap(),
        _ => smdebug_index::event_file_key(step, worker).unwrap(),
    };
    t.join(key)
}

#[test]
fn a_good_trial_has_no_finding_and_verifiable_payloads() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    let (code, v) = doctor(&t);
    assert_eq!((code, kinds(&v).0), (0, Vec::<String>::new()), "{v}");
    assert_eq!(v["payloads_verifiable"]["all"], true, "{v}");
}

#[test]
fn missing_collections_file() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    std::fs::remove_file(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!(
        (code, k),
        (1, vec!["missing-collections".to_owned()]),
        "{v}"
    );
    assert!(what.contains("worker_0"), "{what}");
    assert!(v["findings"][0]["why"]
        .as_str()
        .unwrap()
        .contains("MissingCollectionFiles"));
}

#[test]
fn incomplete_steps_name_the_lagging_worker() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    // A second worker: worker_0's files copied under worker_1, its last two steps missing.
    let coll = t.join("collections/000000000/worker_0_collections.json");
    let text = std::fs::read_to_string(&coll)
        .unwrap()
        .replace(r#""num_workers": 1"#, r#""num_workers": 2"#);
    std::fs::write(&coll, &text).unwrap();
    std::fs::write(
        t.join("collections/000000000/worker_1_collections.json"),
        &text,
    )
    .unwrap();
    for step in 0..6 {
        let idx = std::fs::read_to_string(step_file(&t, "index", step, "worker_0"))
            .unwrap()
            .replace("_worker_0.tfevents", "_worker_1.tfevents");
        std::fs::write(step_file(&t, "index", step, "worker_1"), idx).unwrap();
        std::fs::copy(
            step_file(&t, "events", step, "worker_0"),
            step_file(&t, "events", step, "worker_1"),
        )
        .unwrap();
    }
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!((code, k), (1, vec!["incomplete-steps".to_owned()]), "{v}");
    assert!(what.contains("worker_1 lacks steps 6-7"), "{what}");
}

#[test]
fn writer_stopped_without_end_marker() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    std::fs::remove_file(t.join("training_job_end.ts")).unwrap();
    let (code, v) = doctor(&t);
    assert_eq!(
        (code, kinds(&v).0),
        (1, vec!["no-end-marker".to_owned()]),
        "{v}"
    );
}

#[test]
fn steps_skipped_against_the_save_config() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    for step in [3, 4] {
        std::fs::remove_file(step_file(&t, "index", step, "worker_0")).unwrap();
        std::fs::remove_file(step_file(&t, "events", step, "worker_0")).unwrap();
    }
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!((code, k), (1, vec!["skipped-steps".to_owned()]), "{v}");
    assert!(what.contains("GLOBAL mode steps 3-4"), "{what}");
}

#[test]
fn truncated_events_file_names_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    let ev = step_file(&t, "events", 5, "worker_0");
    let bytes = std::fs::read(&ev).unwrap();
    std::fs::write(&ev, &bytes[..bytes.len() - 10]).unwrap();
    let idx = smdebug_index::IndexFile::parse(
        "i",
        &std::fs::read(step_file(&t, "index", 5, "worker_0")).unwrap(),
    )
    .unwrap();
    let last = idx.tensors.last().unwrap().start_idx;
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!((code, k), (1, vec!["corrupt-record".to_owned()]), "{v}");
    assert!(
        what.contains("events/000000000005/000000000005_worker_0.tfevents")
            && what.contains(&format!("at byte {last}")),
        "{what}"
    );
}

#[test]
fn flipped_byte_is_a_crc_mismatch_with_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    let ev = step_file(&t, "events", 2, "worker_0");
    let idx = smdebug_index::IndexFile::parse(
        "i",
        &std::fs::read(step_file(&t, "index", 2, "worker_0")).unwrap(),
    )
    .unwrap();
    let e = &idx.tensors[0];
    let mut bytes = std::fs::read(&ev).unwrap();
    bytes[(e.start_idx + e.length - 6) as usize] ^= 1;
    std::fs::write(&ev, bytes).unwrap();
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!((code, k), (1, vec!["crc-mismatch".to_owned()]), "{v}");
    assert!(
        what.contains("000000000002_worker_0.tfevents at byte 0"),
        "{what}"
    );
}

#[test]
fn gradient_accumulation_semantics() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), true);
    let (code, v) = doctor(&t);
    let (k, what) = kinds(&v);
    assert_eq!(
        (code, k),
        (1, vec!["gradient-accumulation".to_owned()]),
        "{v}"
    );
    assert!(
        what.contains("fc.weight") && what.contains("1,3,5,7"),
        "{what}"
    );
}

#[test]
fn unsealed_payloads_are_reported_as_not_verifiable() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path(), false);
    // The index files as the original smdebug writes them: no payload CRC.
    for step in 0..8 {
        let p = step_file(&t, "index", step, "worker_0");
        let i = smdebug_index::IndexFile::parse("i", &std::fs::read(&p).unwrap()).unwrap();
        std::fs::write(&p, i.to_python_json()).unwrap();
    }
    let (code, v) = doctor(&t);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["payloads_verifiable"]["with_crc"], 0, "{v}");
    let seal = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .arg("seal")
        .arg(&t)
        .output()
        .unwrap();
    assert!(seal.status.success(), "{seal:?}");
    let (_, v) = doctor(&t);
    assert_eq!(v["payloads_verifiable"]["all"], true, "{v}");
}
