//! Property tests: JSON round trips, layout keys parsing back, hostile names staying inside.

use proptest::prelude::*;
use smdebug_config::Mode;
use smdebug_index::{
    classify_key, collections_file_key, event_file_key, format_index_bucket, format_step,
    index_file_key, parse_step_file_name, python_worker_from_step_file, reduction_tensor_name,
    reverse_reduction_tensor_name, tensorboard_file_key, validate_relative_key, validate_worker,
    IndexFile, IndexMeta, ShapeEntry, TensorEntry, TrialFile, REDUCTIONS_PREFIX,
};

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(Mode::ALL.to_vec())
}

/// Names mixing ASCII, escapes, control characters, non-ASCII and astral characters.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_/:.0-9]{0,20}",
        any::<String>(),
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "/",
                "\"",
                "\\",
                "\n",
                "\t",
                "\u{0}",
                "\u{7f}",
                "é",
                "€",
                "😀",
                "\u{ffff}",
                " ",
                "smdebug/reductions/",
            ]),
            0..12
        )
        .prop_map(|v| v.concat()),
    ]
}

fn tensor_entry() -> impl Strategy<Value = TensorEntry> {
    (
        name(),
        0..=i64::MAX as u64,
        any::<u64>(),
        prop::option::of(any::<u32>()),
    )
        .prop_map(|(name, start_idx, length, crc)| TensorEntry {
            name,
            start_idx,
            // Keep start + length below 2^63, as the reader requires.
            length: length % (i64::MAX as u64 - start_idx + 1),
            payload_crc32c: crc,
        })
}

fn shape_entry() -> impl Strategy<Value = ShapeEntry> {
    (name(), name(), prop::collection::vec(any::<u64>(), 0..6)).prop_map(
        |(name, original_name, shape)| ShapeEntry {
            name,
            original_name,
            shape,
        },
    )
}

fn index_file() -> impl Strategy<Value = IndexFile> {
    (
        mode(),
        any::<i64>(),
        prop::option::of(name()),
        prop::collection::vec(tensor_entry(), 0..5),
        prop::collection::vec(shape_entry(), 0..5),
    )
        .prop_map(|(mode, mode_step, event_file, tensors, shapes)| {
            let event_file_name = if tensors.is_empty() {
                event_file
            } else {
                Some(event_file.unwrap_or_default())
            };
            IndexFile {
                meta: IndexMeta {
                    mode,
                    mode_step,
                    event_file_name,
                },
                tensors,
                shapes,
            }
        })
}

/// Worker names that pass validation (a mix of realistic and arbitrary ones).
fn valid_worker() -> impl Strategy<Value = String> {
    prop_oneof![
        "worker_[0-9]{1,3}",
        "[A-Za-z0-9_.:-]{1,40}",
        "(_[a-z]{1,5}-[0-9A-Z]{1,3}){1,4}",
        any::<String>(),
    ]
    .prop_filter("valid worker", |w| validate_worker(w).is_ok())
}

/// Worker names built to attack paths.
fn hostile_worker() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(
            prop::sample::select(vec![
                "..", "/", "\\", ".", "\0", "\n", "\r", "a", "_", "__", "~", "%2e", "\u{202e}",
                "\u{85}", " ", "C:",
            ]),
            0..10
        )
        .prop_map(|v| v.concat()),
        any::<String>(),
        (1usize..3000).prop_map(|n| "x".repeat(n)),
    ]
}

fn expected_worker(file_worker: &str) -> String {
    if file_worker.starts_with('_') {
        file_worker.replace('_', "/").replace('-', ":")
    } else {
        file_worker.to_owned()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn index_json_roundtrips(index in index_file()) {
        let ours = index.to_json();
        prop_assert!(ours.is_ascii());
        prop_assert_eq!(IndexFile::parse("f.json", ours.as_bytes()).unwrap(), index.clone());

        let python = index.to_python_json();
        prop_assert!(python.is_ascii());
        prop_assert!(!python.contains("payload_crc32c"));
        let back = IndexFile::parse("f.json", python.as_bytes()).unwrap();
        let mut without_crc = index.clone();
        for t in &mut without_crc.tensors {
            t.payload_crc32c = None;
        }
        prop_assert_eq!(&back, &without_crc);
        prop_assert_eq!(back.to_python_json(), python);
        // serde_json agrees it is JSON with the same strings.
        let v: serde_json::Value = serde_json::from_str(&ours).unwrap();
        for (i, t) in index.tensors.iter().enumerate() {
            prop_assert_eq!(v["tensor_payload"][i]["tensorname"].as_str(), Some(t.name.as_str()));
        }
    }

    #[test]
    fn layout_keys_parse_back(step in any::<i64>(), worker in valid_worker(), mode in mode()) {
        let key = index_file_key(step, &worker).unwrap();
        let bucket_dir = format!("index/{}/", format_index_bucket(step));
        prop_assert!(key.starts_with(&bucket_dir), "{:?}", key);
        match classify_key(&key).unwrap() {
            TrialFile::Index(f) => {
                prop_assert_eq!(f.step, step);
                prop_assert_eq!(&f.file_worker, &worker);
                prop_assert_eq!(f.worker().into_owned(), expected_worker(&worker));
            }
            other => prop_assert!(false, "{:?}", other),
        }
        let key = event_file_key(step, &worker).unwrap();
        match classify_key(&key).unwrap() {
            TrialFile::Events(f) => {
                prop_assert_eq!(f.step, step);
                prop_assert_eq!(&f.file_worker, &worker);
            }
            other => prop_assert!(false, "{:?}", other),
        }
        // smdebug's own parser agrees on non-negative steps when no "__" is involved.
        if step >= 0 && !worker.contains("__") && !worker.starts_with('_') && !worker.contains('\n') {
            prop_assert_eq!(python_worker_from_step_file(&format!("/trial/{key}")).unwrap(), worker.clone());
        }
        let key = collections_file_key(&worker).unwrap();
        prop_assert_eq!(
            classify_key(&key).unwrap(),
            TrialFile::Collections { worker: expected_worker(&worker) }
        );
        let tb = tensorboard_file_key(mode, step, &worker).unwrap();
        let f = parse_step_file_name(&tb).unwrap();
        prop_assert_eq!((f.step, f.file_worker), (step, worker));
    }

    #[test]
    fn hostile_workers_never_leave_the_trial(step in any::<i64>(), worker in hostile_worker()) {
        let keys = [
            (index_file_key(step, &worker), "index", 3),
            (event_file_key(step, &worker), "events", 3),
            (collections_file_key(&worker), "collections", 3),
            (tensorboard_file_key(Mode::Train, step, &worker), "TRAIN", 2),
        ];
        for (key, dir, depth) in keys {
            match key {
                Err(e) => prop_assert!(validate_worker(&worker).is_err(), "{}", e),
                Ok(key) => {
                    prop_assert!(validate_relative_key(&key).is_ok(), "{:?}", key);
                    let dir_slash = format!("{dir}/");
                    prop_assert!(key.starts_with(&dir_slash), "{:?}", key);
                    prop_assert_eq!(key.split('/').count(), depth, "{:?}", key);
                    prop_assert!(!key.contains('\\'));
                    prop_assert!(key.rsplit('/').next().unwrap().len() <= 255);
                }
            }
        }
    }

    #[test]
    fn step_names_sort_like_steps_below_1e12(a in 0i64..1_000_000_000_000, b in 0i64..1_000_000_000_000) {
        prop_assert_eq!(format_step(a).cmp(&format_step(b)), a.cmp(&b));
        prop_assert_eq!(
            index_file_key(a, "w").unwrap().cmp(&index_file_key(b, "w").unwrap()),
            a.cmp(&b)
        );
    }

    #[test]
    fn reduction_names_read_back(
        tensor in "[a-z/_:. 0-9\u{e9}]{0,24}",
        op in "[a-z0-9]{1,8}",
        abs in any::<bool>(),
    ) {
        let name = reduction_tensor_name(&tensor, &op, abs);
        prop_assert!(name.starts_with(REDUCTIONS_PREFIX));
        prop_assert!(!name.chars().zip(name.chars().skip(1)).any(|(a, b)| a == ':' && b.is_ascii_digit()), "{:?}", name);
        let back = reverse_reduction_tensor_name(&name).unwrap();
        prop_assert_eq!((back.op, back.abs), (op.as_str(), abs));
        // The tensor comes back without its `:<digits>` parts.
        prop_assert_eq!(reduction_tensor_name(back.tensor, &op, abs), name.clone());
        if !tensor.contains(':') {
            prop_assert_eq!(back.tensor, tensor.as_str());
        }
    }

    #[test]
    fn classify_never_panics(key in any::<String>()) {
        let _ = classify_key(&key);
        let _ = python_worker_from_step_file(&key);
        let _ = reverse_reduction_tensor_name(&key);
    }

    #[test]
    fn parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = IndexFile::parse("f", &bytes);
    }
}

/// A text edit that turns a valid index file into an unusual or invalid one.
fn mutation() -> impl Strategy<Value = (String, String)> {
    let keys = prop::sample::select(vec![
        "\"meta\"",
        "\"mode\"",
        "\"mode_step\"",
        "\"event_file_name\"",
        "\"tensor_payload\"",
        "\"shape_payload\"",
        "\"tensorname\"",
        "\"start_idx\"",
        "\"length\"",
        "\"payload_crc32c\"",
        "\"originalname\"",
        "\"shape\"",
    ]);
    let values = prop::sample::select(vec![
        "null",
        "1.0",
        "-1",
        "\"7\"",
        "[]",
        "{}",
        "true",
        "4294967296",
        "9223372036854775807",
        "18446744073709551615",
        "1e3",
        "\" TRAIN \"",
        "\"train\"",
    ]);
    prop_oneof![
        // Rename a key (as good as removing it).
        keys.clone()
            .prop_map(|k| (k.to_owned(), format!("\"x{}", &k[1..]))),
        // Duplicate a key with another value in front of it.
        (keys.clone(), values.clone())
            .prop_map(|(k, v)| (format!("{k}: "), format!("{k}: {v}, {k}: "))),
        // Replace what follows a key.
        (keys, values).prop_map(|(k, v)| (format!("{k}: "), format!("{k}: {v}, \"zz\": "))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The typed fast path of `IndexFile::parse` never accepts what the tree parser rejects,
    /// and never reads anything differently.
    #[test]
    fn fast_and_tree_parsers_agree(
        index in index_file(),
        crc in any::<bool>(),
        edits in prop::collection::vec(mutation(), 0..3),
        which in any::<prop::sample::Index>(),
    ) {
        let mut text = if crc { index.to_json() } else { index.to_python_json() };
        for (from, to) in &edits {
            let hits: Vec<usize> = text.match_indices(from.as_str()).map(|(i, _)| i).collect();
            if !hits.is_empty() {
                let at = hits[which.index(hits.len())];
                text.replace_range(at..at + from.len(), to);
            }
        }
        let fast = IndexFile::parse("f.json", text.as_bytes());
        let tree = IndexFile::parse_tree("f.json", text.as_bytes());
        prop_assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "{}", text);
    }
}
