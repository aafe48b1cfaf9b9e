//! smdebug-index against smdebug 1.0.34: file names and index files of real fixtures are
//! classified and parsed as smdebug parses them, re-serialized byte for byte, and the index
//! files we write (with `payload_crc32c`) are read by smdebug's own `IndexReader`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};
use smdebug_config::Mode;
use smdebug_conformance::{conformance_presets, run_peer, run_peer_json, tempdir, write_fixture};
use smdebug_index::{
    classify_key, collections_file_key, event_file_key, index_file_key,
    python_worker_from_step_file, IndexFile, IndexMeta, ShapeEntry, TensorEntry, TrialFile,
};

/// Every conformance preset written once by the real smdebug writer, shared by the tests.
fn fixtures() -> &'static (tempfile::TempDir, Vec<(String, PathBuf)>) {
    static FIXTURES: OnceLock<(tempfile::TempDir, Vec<(String, PathBuf)>)> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = tempdir();
        let trials = conformance_presets()
            .into_iter()
            .map(|preset| {
                let out = write_fixture(&preset, &dir.path().join(&preset));
                (preset, out)
            })
            .collect();
        (dir, trials)
    })
}

/// Relative `/`-separated paths of every file below `root`, sorted.
fn files_below(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("below root");
                let rel: Vec<_> = rel.iter().map(|c| c.to_str().expect("utf-8")).collect();
                out.push(rel.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// What smdebug's `_update_tensors_from_json` keeps of one index file, built from our parse:
/// entries in file order, the last one of a name wins, shapes after locations.
fn as_smdebug_understands(index: &IndexFile, worker: &str) -> Value {
    let mut flat = BTreeMap::new();
    for t in &index.tensors {
        flat.insert(
            t.name.clone(),
            json!({
                "kind": "location",
                "mode": index.meta.mode.name(),
                "mode_step": index.meta.mode_step,
                "event_file_name": index.meta.event_file_name,
                "start_idx": t.start_idx,
                "length": t.length,
                "worker": worker,
            }),
        );
    }
    for s in &index.shapes {
        flat.insert(
            s.name.clone(),
            json!({
                "kind": "shape",
                "mode": index.meta.mode.name(),
                "mode_step": index.meta.mode_step,
                "original_name": s.original_name,
                "shape": s.shape,
            }),
        );
    }
    serde_json::to_value(flat).expect("json")
}

fn peer_view(trial: &Path) -> Value {
    run_peer_json("index_read.py", &[trial.to_str().expect("utf-8 path")])
}

#[test]
fn fixture_files_are_classified_and_parsed_like_smdebug() {
    let (_, trials) = fixtures();
    let mut index_files = 0;
    for (preset, trial) in trials {
        let peer = peer_view(trial);
        let peer_files = peer["files"].as_object().expect("files");
        let peer_index = peer["index"].as_object().expect("index");
        let trial_str = trial.to_str().expect("utf-8");
        assert!(
            !trial_str.contains("__"),
            "temp path must not trigger the __ quirk"
        );
        let rels = files_below(trial);
        assert_eq!(rels.len(), peer_files.len(), "{preset}: same files seen");
        for rel in &rels {
            let abs = format!("{trial_str}/{rel}");
            let info = &peer_files[rel.as_str()];
            let what = classify_key(rel).unwrap_or_else(|e| panic!("{preset}: {rel}: {e}"));
            match &what {
                TrialFile::Index(f) | TrialFile::Events(f) => {
                    assert_eq!(info["step"], json!(f.step), "{preset}: {rel}");
                    assert_eq!(info["worker"], json!(f.worker()), "{preset}: {rel}");
                    assert_eq!(
                        json!(python_worker_from_step_file(&abs).unwrap()),
                        info["worker"],
                        "{preset}: {rel}"
                    );
                    let canonical = if matches!(what, TrialFile::Index(_)) {
                        index_file_key(f.step, &f.file_worker)
                    } else {
                        event_file_key(f.step, &f.file_worker)
                    };
                    assert_eq!(canonical.as_deref(), Ok(rel.as_str()), "{preset}: layout");
                }
                TrialFile::Collections { worker } => {
                    assert_eq!(info["collections_worker"], json!(worker), "{preset}: {rel}");
                    let file_worker = rel
                        .rsplit('/')
                        .next()
                        .and_then(|n| n.strip_suffix("_collections.json"))
                        .expect("collections name");
                    assert_eq!(
                        collections_file_key(file_worker).as_deref(),
                        Ok(rel.as_str())
                    );
                }
                TrialFile::EndOfJob => assert_eq!(rel, "training_job_end.ts"),
                TrialFile::Ignored => {
                    panic!("{preset}: {rel} is a trial file but was ignored")
                }
            }
            assert_eq!(
                peer_index.contains_key(rel.as_str()),
                matches!(what, TrialFile::Index(_)),
                "{preset}: {rel}: smdebug lists exactly our index files"
            );

            if let TrialFile::Index(f) = &what {
                index_files += 1;
                let bytes = std::fs::read(trial.join(rel)).expect("read index file");
                let index =
                    IndexFile::parse(rel, &bytes).unwrap_or_else(|e| panic!("{preset}: {e}"));
                assert_eq!(
                    index.to_python_json().as_bytes(),
                    &bytes[..],
                    "{preset}: {rel} re-serialized byte for byte"
                );
                assert_eq!(
                    as_smdebug_understands(&index, &f.worker()),
                    peer_index[rel.as_str()],
                    "{preset}: {rel}: what smdebug's IndexReader understood"
                );
                if let Some(key) = index.meta.event_file_key().expect("safe event key") {
                    assert_eq!(Ok(key), event_file_key(f.step, &f.file_worker).as_deref());
                    assert!(trial.join(key).is_file(), "{preset}: {key} exists");
                } else {
                    assert!(index.tensors.is_empty() && !index.shapes.is_empty());
                }
            }
        }
    }
    assert!(index_files > 50, "only {index_files} index files checked");
}

/// Masked CRC32C (docs/src/format.md §5), bitwise: the test must not share code with what it checks.
fn masked_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    let crc = !crc;
    crc.rotate_right(15).wrapping_add(0xA282_EAD8)
}

fn copy_tree(from: &Path, to: &Path) {
    for rel in files_below(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        std::fs::copy(from.join(&rel), dest).expect("copy");
    }
}

#[test]
fn index_files_we_write_are_read_by_smdebug() {
    let (_, trials) = fixtures();
    let out = tempdir();
    let mut crcs = 0;
    for (preset, trial) in trials {
        let ours = out.path().join(preset);
        copy_tree(trial, &ours);
        for rel in files_below(&ours) {
            let Ok(TrialFile::Index(_)) = classify_key(&rel) else {
                continue;
            };
            let path = ours.join(&rel);
            let mut index = IndexFile::parse(&rel, &std::fs::read(&path).expect("read"))
                .expect("parse fixture index");
            if let Some(key) = index.meta.event_file_key().expect("safe key") {
                let events = std::fs::read(ours.join(key)).expect("events file");
                for t in &mut index.tensors {
                    let start = t.start_idx as usize;
                    let end = start + t.length as usize;
                    t.payload_crc32c = Some(masked_crc32c(&events[start + 12..end - 4]));
                    crcs += 1;
                }
            }
            let text = index.to_json();
            std::fs::write(&path, &text).expect("write our index file");
            assert_eq!(
                IndexFile::parse(&rel, text.as_bytes()).expect("parse ours"),
                index,
                "{preset}: {rel}: CRCs read back"
            );
        }
        let theirs = peer_view(trial);
        let mine = peer_view(&ours);
        assert_eq!(
            mine["index"], theirs["index"],
            "{preset}: smdebug reads our index files exactly like its own"
        );
        assert!(!mine["index"].as_object().expect("index").is_empty());
    }
    assert!(crcs > 100, "only {crcs} CRCs written");
}

/// Index files full of awkward names, to compare our text with Python's `json.dumps`.
fn awkward_index_files() -> Vec<IndexFile> {
    let names = [
        "plain",
        "dense/kernel:0",
        "smdebug/reductions/abs_l2/x",
        "quote\"back\\slash",
        "ctl\u{0}\u{1}\u{8}\u{b}\u{c}\n\r\t\u{1f}\u{7f}",
        "latin é ß",
        "euro € and cjk 漢字",
        "astral 😀 𝄞 \u{10ffff}",
        "bom \u{feff} and nel \u{85} and ls \u{2028}",
        "slash / at / ends /",
        "",
    ];
    let mut files = Vec::new();
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let mut f = IndexFile::new(IndexMeta {
            mode,
            mode_step: [0, 1, i64::MAX, -7][i],
            event_file_name: Some(format!(
                "events/000000000003/000000000003_{}.tfevents",
                names[i]
            )),
        });
        for (j, n) in names.iter().enumerate() {
            f.tensors.push(TensorEntry {
                name: (*n).to_owned(),
                start_idx: (j as u64) << (4 * i),
                length: 16 + j as u64 * 1000,
                payload_crc32c: Some((j as u32).wrapping_mul(0x9E37_79B9)),
            });
            f.shapes.push(ShapeEntry {
                name: n.to_string(),
                original_name: format!("{n}:0"),
                shape: (0..j as u64)
                    .map(|d| d * 7 + u64::from(i == 3) * u64::MAX / 2)
                    .collect(),
            });
        }
        files.push(f);
    }
    let mut shape_only = IndexFile::new(IndexMeta {
        mode: Mode::Eval,
        mode_step: 12,
        event_file_name: None,
    });
    shape_only.shapes.push(ShapeEntry {
        name: "s".into(),
        original_name: "s".into(),
        shape: vec![],
    });
    files.push(shape_only);
    files.push(IndexFile::new(IndexMeta {
        mode: Mode::Predict,
        mode_step: 3,
        event_file_name: None,
    }));
    files
}

#[test]
fn our_json_text_is_python_json_dumps_text() {
    let mut lines = Vec::new();
    for f in awkward_index_files() {
        lines.push(f.to_python_json());
        lines.push(f.to_json());
    }
    let dir = tempdir();
    let input = dir.path().join("docs.jsonl");
    std::fs::write(&input, lines.join("\n")).expect("write");
    let out = run_peer("index_dumps.py", &[input.to_str().expect("utf-8")]);
    let redumped = String::from_utf8(out.stdout).expect("ascii");
    let redumped: Vec<&str> = redumped.lines().collect();
    assert_eq!(redumped.len(), lines.len());
    for (ours, python) in lines.iter().zip(redumped) {
        assert_eq!(ours, python, "json.dumps(json.loads(ours)) == ours");
    }
}

#[test]
fn unusual_steps_and_paths_match_smdebug_or_its_documented_failure() {
    let dir = tempdir();
    // A trial whose own path contains "__" (smdebug's quirk), with negative and ≥ 10^12 steps
    // and a TF device worker.
    let trial = dir.path().join("run__1");
    let cases: &[(i64, &str)] = &[
        (0, "worker_0"),
        (1_000_000_000_000, "worker_1"),
        (i64::MAX, "w"),
        (-1, "worker_0"),
        (5, "_job-worker_replica-0_task-1_device-GPU-0"),
        (6, "algo-1"),
    ];
    for (step, worker) in cases {
        let key = index_file_key(*step, worker).expect("valid");
        let path = trial.join(&key);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let mut index = IndexFile::new(IndexMeta {
            mode: Mode::Train,
            mode_step: *step,
            event_file_name: Some(event_file_key(*step, worker).expect("valid")),
        });
        index.tensors.push(TensorEntry {
            name: "t".into(),
            start_idx: 0,
            length: 100,
            payload_crc32c: Some(1),
        });
        std::fs::write(&path, index.to_json()).expect("write");
    }
    let peer = peer_view(&trial);
    let trial_str = trial.to_str().expect("utf-8");
    for (step, worker) in cases {
        let key = index_file_key(*step, worker).expect("valid");
        let info = &peer["files"][key.as_str()];
        let abs = format!("{trial_str}/{key}");
        // smdebug parses the step from the name exactly like us, negative or huge.
        assert_eq!(info["step"], json!(step), "{key}");
        match python_worker_from_step_file(&abs) {
            Ok(w) => assert_eq!(info["worker"], json!(w), "{key}: quirk reproduced"),
            Err(_) => {
                assert!(*step < 0, "{key}: only negative steps fail");
                assert_eq!(info["worker"]["error"], "IndexReaderException", "{key}");
            }
        }
        // The consistent variant ignores the trial path.
        let Ok(TrialFile::Index(f)) = classify_key(&key) else {
            panic!("{key} is an index file")
        };
        assert_eq!(f.step, *step);
        assert_eq!(&f.file_worker, worker);
    }
    // The quirk itself: smdebug turns worker_0 into worker/0 under a "__" path.
    assert_eq!(
        peer["files"]["index/000000000/000000000000_worker_0.json"]["worker"],
        "worker/0"
    );
}

/// The steps, workers, locations, TF devices and reduction names the layout tests ask the
/// peer about, and its answer (one Python start for all of them).
struct LayoutCase {
    names: Vec<(i64, String)>,
    locations: Vec<&'static str>,
    devices: Vec<&'static str>,
    reductions: Vec<(&'static str, &'static str, bool)>,
    reduction_records: Vec<&'static str>,
    peer: Value,
}

fn layout_case() -> &'static LayoutCase {
    static CASE: OnceLock<LayoutCase> = OnceLock::new();
    CASE.get_or_init(|| {
        let steps = [
            0,
            1,
            999,
            1000,
            1234,
            999_999_999_999,
            1_000_000_000_000,
            i64::MAX,
            -1,
            -999,
            -1000,
            -1001,
            i64::MIN,
        ];
        let long = "w".repeat(smdebug_index::MAX_WORKER_NAME_BYTES);
        let workers = [
            "worker_0",
            "algo-1",
            "chief_0",
            "_job-worker_replica-0_task-1_device-GPU-0",
            "1234_ip-10-0-0-1.ec2.internal",
            "wörker ünïcode 😀",
            "a:b",
            long.as_str(),
        ];
        let mut names = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            for (j, worker) in workers.iter().enumerate() {
                // A sample of the product keeps the request small but covers every step and worker.
                if (i + j) % 3 == 0 || j == 0 {
                    names.push((*step, worker.to_string()));
                }
            }
        }
        let locations = vec![
            "s3://a",
            "s3://a/",
            "s3://a/b",
            "s3://a/b/c/",
            "s3://a//b",
            "s3://a/b//c///d",
            "s3://bucket.with.dots/p r e",
            "s3://b/ünï cöde/😀",
            "a/b/c",
            "/abs/path",
            "/abs/path/",
            "~",
            "~/runs/a",
            "~nosuchuser-smdebug/x",
            "/data/a://b",
            "rel with space",
            " s3://a/b \n",
            "\u{1f}/abs/p\u{85}",
            "\t\u{1c}\u{3000}",
            // This project's extensions and refusals: smdebug reads each as a local path.
            "gs://g/p",
            "az://c/p",
            "memory://m/p",
            "file:///tmp/x",
            "ftp://x",
            "S3://a/b",
        ];
        let devices = vec![
            "/job:worker/replica:0/task:1/device:GPU:0",
            "/device:CPU:0",
            "/replica:0/task:0/device:GPU:0",
        ];
        let reductions = vec![
            ("dense/kernel:0", "l2", true),
            ("a:1/b:22", "mean", false),
            ("x:y", "min", false),
            ("température:3", "max", true),
            ("digits:\u{663}\u{ff11}/z", "std", false),
            ("trailing:", "variance", false),
            ("", "sum", true),
        ];
        let reduction_records = vec![
            "smdebug/reductions/abs_l2/dense/kernel",
            "outer/smdebug/reductions/abs_min/inner",
            "smdebug/reductions/myabs_foo/x/y",
            "smdebug/reductions/min/smdebug/reductions/max/x",
            "smdebug/reductions/abs_abs_x/t",
            "smdebug/reductions/min",
            "smdebug/reductions/",
        ];
        let request = json!({
            "names": names.iter().map(|(s, w)| json!([s, w])).collect::<Vec<_>>(),
            "locations": locations,
            "devices": devices,
            "reductions": reductions.iter().map(|(t, op, abs)| json!([t, op, abs])).collect::<Vec<_>>(),
            "reduction_records": reduction_records,
        });
        let dir = tempdir();
        let path = dir.path().join("request.json");
        std::fs::write(&path, request.to_string()).expect("write request");
        let peer = run_peer_json("index_layout.py", &[path.to_str().expect("utf-8")]);
        for (field, n) in [
            ("names", names.len()),
            ("locations", locations.len()),
            ("devices", devices.len()),
            ("reduction_names", reductions.len()),
            ("reversed", reduction_records.len()),
        ] {
            assert_eq!(peer[field].as_array().map(Vec::len), Some(n), "{field}");
        }
        LayoutCase {
            names,
            locations,
            devices,
            reductions,
            reduction_records,
            peer,
        }
    })
}

#[test]
fn layout_keys_are_the_ones_smdebug_builds() {
    let case = layout_case();
    let peer = &case.peer;
    for ((step, worker), theirs) in case
        .names
        .iter()
        .zip(peer["names"].as_array().expect("names"))
    {
        assert_eq!(
            theirs["index"],
            json!(index_file_key(*step, worker).unwrap())
        );
        assert_eq!(
            theirs["events"],
            json!(event_file_key(*step, worker).unwrap())
        );
        assert_eq!(
            theirs["tensorboard_train"],
            json!(format!(
                "{}/{}",
                smdebug_index::DEFAULT_TENSORBOARD_DIR,
                smdebug_index::tensorboard_file_key(Mode::Train, *step, worker).unwrap()
            ))
        );
        assert_eq!(
            theirs["collections"],
            json!(collections_file_key(worker).unwrap())
        );
    }
    for (device, theirs) in case
        .devices
        .iter()
        .zip(peer["devices"].as_array().expect("devices"))
    {
        assert_eq!(json!(smdebug_index::serialize_tf_device(device)), *theirs);
    }
    let constants = &peer["constants"];
    assert_eq!(constants["end_of_job"], smdebug_index::END_OF_JOB_FILE);
    assert_eq!(constants["claim"], smdebug_index::CLAIM_FILE);
    assert_eq!(
        constants["stop_signal_env"],
        smdebug_index::RULE_STOP_SIGNAL_ENV
    );
    assert_eq!(
        constants["default_tensorboard_dir"],
        smdebug_index::DEFAULT_TENSORBOARD_DIR
    );
}

/// The one location parser (`smdebug_storage::Location`, used by the hook, the reader and
/// the CLI) against smdebug's own path handling: `is_s3`, the key its S3 writer computes,
/// `os.path.expanduser`, and `create_trial`'s `strip()`. Where they differ on purpose, the
/// difference is named here and in the storage crate's docs.
#[test]
fn locations_are_read_as_smdebug_reads_them() {
    use smdebug_storage::Location;
    let case = layout_case();
    let key_of = "index/000000000/000000000000_worker_0.json";
    for (loc, theirs) in case
        .locations
        .iter()
        .zip(case.peer["locations"].as_array().expect("locations"))
    {
        // What the reader strips before parsing (the hook parses the string as given).
        assert_eq!(
            json!(smdebug_config::python_strip(loc)),
            theirs["stripped"],
            "{loc:?}"
        );
        let ours = Location::parse(loc);
        if theirs["is_s3"][0] == json!(true) {
            let Ok(Location::S3 { bucket, prefix }) = &ours else {
                panic!("{loc:?}: smdebug reads an S3 location, we read {ours:?}");
            };
            assert_eq!(json!(bucket), theirs["is_s3"][1], "{loc:?}");
            let our_key = if prefix.is_empty() {
                key_of.to_owned()
            } else {
                format!("{prefix}/{key_of}")
            };
            let their_key = theirs["key"].as_str().expect("key");
            // Named difference: smdebug keeps a leading `/` of the prefix (`s3://a//b` writes
            // under `/b/`), which an object store key cannot start with here.
            assert_eq!(
                our_key,
                their_key.strip_prefix('/').unwrap_or(their_key),
                "{loc:?}"
            );
            continue;
        }
        let their_path = theirs["path"].as_str().expect("path");
        match (*loc, &ours) {
            // Named difference: our extensions, which smdebug reads as local folders.
            ("gs://g/p", Ok(Location::Gcs { .. }))
            | ("az://c/p", Ok(Location::Azure { .. }))
            | ("memory://m/p", Ok(Location::Memory { .. })) => {}
            ("file:///tmp/x", Ok(Location::Local(p))) => assert_eq!(p, Path::new("/tmp/x")),
            // Named difference: an unknown scheme is refused, not taken for a folder `ftp:`.
            (
                "ftp://x" | "S3://a/b",
                Err(smdebug_storage::StorageError::InvalidLocation { .. }),
            ) => {}
            (_, Ok(Location::Local(p))) => {
                assert_eq!(p.to_str(), Some(their_path), "{loc:?}");
            }
            _ => panic!("{loc:?}: smdebug reads the local path {their_path:?}, we read {ours:?}"),
        }
    }
}

#[test]
fn reduction_names_are_the_ones_smdebug_builds() {
    let case = layout_case();
    for ((tensor, op, abs), theirs) in case.reductions.iter().zip(
        case.peer["reduction_names"]
            .as_array()
            .expect("reduction_names"),
    ) {
        let ours = smdebug_index::reduction_tensor_name(tensor, op, *abs);
        assert_eq!(json!(ours), *theirs, "{tensor:?} {op} {abs}");
    }
    for (name, theirs) in case
        .reduction_records
        .iter()
        .zip(case.peer["reversed"].as_array().expect("reversed"))
    {
        let ours = smdebug_index::reverse_reduction_tensor_name(name)
            .map(|r| json!([r.tensor, r.op, r.abs]))
            .unwrap_or(Value::Null);
        assert_eq!(ours, *theirs, "{name:?}");
    }
}

#[test]
fn python_whitespace_is_str_strip() {
    let ours: Vec<u32> = (0..=0x10ffff)
        .filter_map(char::from_u32)
        .filter(|&c| smdebug_config::is_python_whitespace(c))
        .map(u32::from)
        .collect();
    assert_eq!(json!(ours), layout_case().peer["python_whitespace"]);
}
