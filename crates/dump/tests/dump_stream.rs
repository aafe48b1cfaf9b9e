//! `write_dump` (the document written as it goes) says exactly what `dump_trial_with` (the
//! document built in memory) says, indented or compact, for a trial with tensors, one
//! without, and one that cannot be opened.

use ndarray::{ArrayD, IxDyn};
use serde_json::Value as Json;
use smdebug_dump::{dump_trial_with, write_dump, DumpOptions};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{TensorValue, TrialOptions};
use std::path::Path;
use std::time::Duration;

fn options() -> TrialOptions {
    TrialOptions {
        collections_timeout: Some(Duration::from_secs(5)),
        ..TrialOptions::default()
    }
}

/// Top-level keys whose entries differ (the documents are too large to print).
fn differing(a: &Json, b: &Json) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a
        .as_object()
        .unwrap()
        .keys()
        .chain(b.as_object().unwrap().keys())
        .collect();
    keys.into_iter()
        .filter(|k| a.get(k.as_str()) != b.get(k.as_str()))
        .cloned()
        .collect()
}

/// Both documents with `generator.seconds` taken out (it is the only part that differs).
fn both(path: &Path, compact: bool) -> (Json, Json, String) {
    let path = path.to_str().unwrap();
    let opts = DumpOptions::default();
    // Through text, as the streamed document is: serde_json's number parsing may round
    // the last bit of a float differently from the value it printed.
    let built = dump_trial_with(path, &opts, options());
    let mut built: Json = serde_json::from_str(&built.to_string()).unwrap();
    let mut text = Vec::new();
    write_dump(&mut text, path, &opts, options(), compact).unwrap();
    let text = String::from_utf8(text).unwrap();
    let mut streamed: Json = serde_json::from_str(&text).unwrap();
    for doc in [&mut built, &mut streamed] {
        assert!(doc["generator"]["seconds"].as_f64().is_some());
        doc["generator"]["seconds"] = Json::Null;
    }
    (built, streamed, text)
}

fn write_trial(dir: &Path, tensors: usize) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    write_train_trial(&store, 3, |_| {
        (0..tensors)
            .map(|i| {
                let v = ArrayD::from_shape_fn(IxDyn(&[2, 3]), |ix| (ix[0] + ix[1] + i) as f32);
                (format!("t{i}"), TensorValue::Float32(v))
            })
            .collect()
    })
    .unwrap();
}

#[test]
fn streamed_and_built_documents_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let with = tmp.path().join("with");
    write_trial(&with, 3);
    let without = tmp.path().join("without");
    write_trial(&without, 0);
    let broken = tmp.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("training_job_end.ts"), b"").unwrap();

    for compact in [false, true] {
        let (built, streamed, text) = both(&with, compact);
        assert_eq!(differing(&built, &streamed), Vec::<String>::new());
        assert_eq!(streamed["tensors"].as_object().unwrap().len(), 3);
        assert_eq!(text.lines().count() == 1, compact, "{text}");

        let (built, streamed, _) = both(&without, compact);
        assert_eq!(differing(&built, &streamed), Vec::<String>::new());
        assert_eq!(streamed["tensors"], serde_json::json!({}));

        let (built, streamed, _) = both(&broken, compact);
        assert_eq!(differing(&built, &streamed), Vec::<String>::new());
        assert_eq!(streamed["trial"]["error"]["type"], "MissingCollectionFiles");
    }
}
