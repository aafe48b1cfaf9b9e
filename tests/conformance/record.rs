//! smdebug-record against the real smdebug 1.0.34, in both directions:
//!
//! * every event file of every conformance preset, written by Python's `FileWriter`, decodes
//!   with our streaming reader and at every index entry's `(start_idx, length)` to the tag,
//!   dtype, shape and element bytes Python says it wrote (`fixture.py --manifest`) and that
//!   the recipe model (`smdebug_synth::Recipe`) recomputes independently;
//! * event files we write are read by Python's `EventFileReader` with identical values, and
//!   are byte-identical to what Python's `FileWriter` writes for the same tensors;
//! * a file with real CRC footers (TensorBoard style) is rejected by Python's trial reader,
//!   as documented, and accepted by ours.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::{arr0, arr1, arr2, Array, ArrayD, IxDyn};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use smdebug_conformance::manifest::{write_fixture_with_manifest, ManifestRecord};
use smdebug_conformance::{conformance_presets, peer_python, run_peer_json, tempdir};
use smdebug_record::{
    append_record, decode_record_at, decode_tensor_event, encode_tensor_event, f16, mode_number,
    Complex64, Footer, RecordReader, TensorEvent, TensorValue,
};
use smdebug_synth::Recipe;

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn mode_name(mode: u8) -> &'static str {
    match mode {
        mode_number::TRAIN => "TRAIN",
        mode_number::EVAL => "EVAL",
        mode_number::PREDICT => "PREDICT",
        mode_number::GLOBAL => "GLOBAL",
        _ => panic!("mode number {mode} out of range"),
    }
}

/// Checks one decoded record against the manifest entry Python wrote for it.
fn assert_matches_manifest(ev: &TensorEvent, want: &ManifestRecord, context: &str) {
    let bytes = ev.tensor.to_le_bytes();
    assert_eq!(ev.tag, want.tag, "{context}: tag");
    assert_eq!(
        ev.tensor.dtype().name(),
        want.dtype,
        "{context} {:?}: dtype",
        want.tag
    );
    assert_eq!(
        ev.tensor.shape(),
        &want.shape[..],
        "{context} {:?}: shape",
        want.tag
    );
    assert_eq!(
        sha256_hex(&bytes),
        want.sha256,
        "{context} {:?}: element bytes",
        want.tag
    );
    assert_eq!(ev.step, want.step, "{context} {:?}: step", want.tag);
    assert_eq!(
        mode_name(ev.mode),
        want.mode,
        "{context} {:?}: mode",
        want.tag
    );
    assert_eq!(
        ev.mode_step, want.mode_step,
        "{context} {:?}: mode step",
        want.tag
    );
}

/// `event file -> [(start_idx, length)]` from every index file of a trial, in file order.
fn index_entries(trial: &Path) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![trial.join("index")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read index dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("read index"))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let Some(file) = doc["meta"]["event_file_name"].as_str() else {
                continue; // a step that saved only shapes has no event file
            };
            let ranges = doc["tensor_payload"]
                .as_array()
                .expect("tensor_payload")
                .iter()
                .map(|p| {
                    (
                        p["start_idx"].as_u64().unwrap(),
                        p["length"].as_u64().unwrap(),
                    )
                })
                .collect();
            assert!(
                out.insert(file.to_owned(), ranges).is_none(),
                "two index files name {file}"
            );
        }
    }
    out
}

#[test]
fn python_fixtures_decode_to_the_values_python_wrote_and_the_recipe_recomputes() {
    for preset in conformance_presets() {
        let tmp = tempdir();
        let trial = tmp.path().join(&preset);
        let manifest = write_fixture_with_manifest(&preset, &trial);
        let recipe =
            Recipe::load(&smdebug_conformance::presets_dir().join(format!("{preset}.json")))
                .expect("preset parses");
        let index = index_entries(&trial);

        let mut by_file: BTreeMap<&str, Vec<&ManifestRecord>> = BTreeMap::new();
        for rec in &manifest {
            by_file.entry(rec.file.as_str()).or_default().push(rec);
        }
        let files_on_disk: BTreeSet<&str> = index.keys().map(String::as_str).collect();
        assert_eq!(
            by_file.keys().copied().collect::<BTreeSet<_>>(),
            files_on_disk,
            "{preset}: event files listed by the index vs. written by the fixture"
        );

        let mut recomputed = 0usize;
        for (file, want) in &by_file {
            let path = trial.join(file);
            let context = format!("{preset}/{file}");

            // 1. Sequentially, with the streaming reader.
            let reader = RecordReader::new(BufReader::new(File::open(&path).expect("open")))
                .with_name(file.to_string());
            let streamed: Vec<TensorEvent> = reader
                .map(|r| {
                    let rec = r.unwrap_or_else(|e| panic!("{context}: {e}"));
                    assert_eq!(rec.footer, Footer::Magic, "{context}: footer");
                    decode_tensor_event(&rec.payload).unwrap_or_else(|e| panic!("{context}: {e}"))
                })
                .collect();
            assert_eq!(streamed.len(), want.len(), "{context}: record count");
            for (ev, w) in streamed.iter().zip(want) {
                assert_matches_manifest(ev, w, &format!("{context} (streamed)"));
            }

            // 2. Record by record, at the positions the index gives.
            let bytes = std::fs::read(&path).expect("read event file");
            let ranges = &index[*file];
            assert_eq!(ranges.len(), want.len(), "{context}: index entries");
            for ((start, len), w) in ranges.iter().zip(want) {
                let rec = decode_record_at(&bytes, *start, *len)
                    .unwrap_or_else(|e| panic!("{context} @{start}+{len}: {e}"));
                let ev = decode_tensor_event(rec.payload)
                    .unwrap_or_else(|e| panic!("{context} @{start}: {e}"));
                assert_matches_manifest(&ev, w, &format!("{context} (ranged @{start})"));
            }

            // 3. Raw values against the recipe model, independently of Python.
            for (ev, w) in streamed.iter().zip(want) {
                let (t, g, wi) = (w.tensor_index, w.step, w.worker_index);
                let expected = match w.kind.as_str() {
                    "raw" => recipe.values(t, g, wi),
                    "duplicate" => recipe.duplicate_values(t, g, wi),
                    _ => continue, // reductions are numpy's values (smdebug-reduce tests them)
                }
                .unwrap_or_else(|e| panic!("{context}: recipe model: {e}"));
                assert_eq!(
                    ev.tensor.dtype(),
                    expected.dtype(),
                    "{context} {:?} step {g}: dtype vs recipe",
                    w.tag
                );
                assert_eq!(ev.tensor.shape(), expected.shape(), "{context} {:?}", w.tag);
                assert!(
                    ev.tensor.to_le_bytes() == expected.to_le_bytes(),
                    "{context} {:?} step {g} worker {wi}: values differ from the recipe model",
                    w.tag
                );
                assert_eq!(
                    sha256_hex(&expected.to_le_bytes()),
                    w.sha256,
                    "{context}: recipe vs manifest"
                );
                recomputed += 1;
            }
        }
        let raw = manifest.iter().filter(|r| r.kind != "reduction").count();
        assert_eq!(recomputed, raw, "{preset}: every raw record was recomputed");
        eprintln!(
            "record: {preset}: {} records in {} files decoded twice; {recomputed} recomputed",
            manifest.len(),
            by_file.len()
        );
    }
}

/// One tensor record we write and Python reads (or writes).
struct Case {
    tag: &'static str,
    tensor: TensorValue,
    mode: u8,
    mode_step: i64,
    /// The dtype Python's reader returns (int8 comes back as uint8).
    python_dtype: &'static str,
}

fn case(tag: &'static str, tensor: TensorValue, mode: u8, mode_step: i64) -> Case {
    let python_dtype = tensor.dtype().name();
    Case {
        tag,
        tensor,
        mode,
        mode_step,
        python_dtype,
    }
}

fn dyn_array<T>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    Array::from_shape_vec(IxDyn(shape), values).expect("shape matches")
}

/// Tensors of every dtype Python smdebug can read back, with awkward values and names.
fn python_readable_cases() -> Vec<Case> {
    let f16s = [
        1.5,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        65504.0,
        5.960464477539063e-8,
    ]
    .map(f16::from_f64);
    let mut cases = vec![
        case(
            "f16/specials",
            arr1(&f16s).into_dyn().into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "dense/kernel:0",
            arr2(&[
                [1.0f32, -0.0, f32::NAN],
                [f32::MAX, f32::MIN_POSITIVE, 1e-45],
            ])
            .into_dyn()
            .into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "f64/0d",
            arr0(0.1f64).into_dyn().into(),
            mode_number::EVAL,
            2,
        ),
        case(
            "f32/3d",
            dyn_array(&[2, 1, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).into(),
            mode_number::PREDICT,
            0,
        ),
        case(
            "f32/one",
            arr1(&[42.5f32]).into_dyn().into(),
            mode_number::GLOBAL,
            7,
        ),
        case(
            "int/i32",
            arr1(&[i32::MIN, -1, 0, i32::MAX]).into_dyn().into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "int/i64",
            arr1(&[i64::MIN, (1 << 53) + 1, -1, i64::MAX])
                .into_dyn()
                .into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "int/u8",
            arr2(&[[0u8, 1], [128, 255]]).into_dyn().into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "flags",
            arr1(&[true, false, true]).into_dyn().into(),
            mode_number::EVAL,
            3,
        ),
        case(
            "complex/c128",
            arr1(&[
                Complex64::new(1.5, -2.0),
                Complex64::new(f64::NAN, f64::INFINITY),
            ])
            .into_dyn()
            .into(),
            mode_number::TRAIN,
            7,
        ),
        case(
            "température/权重 [0] (x+y)*z?",
            arr1(&[
                "".to_owned(),
                "héllo".to_owned(),
                "权重".to_owned(),
                "a b".to_owned(),
            ])
            .into_dyn()
            .into(),
            mode_number::TRAIN,
            7,
        ),
    ];
    // Python's as_dtype maps DT_INT8 to np.uint8: the bytes survive, the sign does not.
    let mut int8 = case(
        "int/i8",
        arr1(&[-128i8, -1, 0, 127]).into_dyn().into(),
        mode_number::TRAIN,
        7,
    );
    int8.python_dtype = "uint8";
    cases.push(int8);
    cases
}

const STEP: i64 = 7;
const WALL_TIME: f64 = 1_700_000_123.25;

/// An event file of `cases` at global step [`STEP`], written by us.
fn write_rust_file(cases: &[Case], footer: Footer) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut file = Vec::new();
    let mut ranges = Vec::new();
    for c in cases {
        let payload = encode_tensor_event(c.tag, &c.tensor, STEP, c.mode, c.mode_step, WALL_TIME)
            .unwrap_or_else(|e| panic!("encode {}: {e}", c.tag));
        let info = append_record(&mut file, &payload, footer);
        ranges.push((info.offset, info.len));
    }
    (file, ranges)
}

fn read_with_python(path: &Path) -> Value {
    let out = run_peer_json("read_events.py", &[path.to_str().expect("utf-8 path")]);
    out.as_array().expect("a list")[0].clone()
}

#[test]
fn python_smdebug_reads_our_event_files_with_identical_values() {
    let cases = python_readable_cases();
    let tmp = tempdir();
    let path = tmp.path().join("ours.tfevents");
    std::fs::write(&path, write_rust_file(&cases, Footer::Magic).0).unwrap();

    let seen = read_with_python(&path);
    assert!(seen.get("error").is_none(), "Python smdebug failed: {seen}");
    let records = seen["records"].as_array().expect("records");
    assert_eq!(records.len(), cases.len(), "record count: {seen}");
    for (c, r) in cases.iter().zip(records) {
        let context = format!("{}: {r}", c.tag);
        assert_eq!(r["tag"], c.tag, "{context}");
        assert_eq!(r["step"], STEP, "{context}");
        assert_eq!(r["mode"], mode_name(c.mode), "{context}");
        assert_eq!(r["mode_step"], c.mode_step, "{context}");
        assert_eq!(r["dtype"], c.python_dtype, "{context}");
        assert_eq!(r["shape"], json!(c.tensor.shape()), "{context}");
        assert_eq!(
            r["sha256"],
            sha256_hex(&c.tensor.to_le_bytes()),
            "{context}"
        );
    }
    // The int8 quirk, spelled out: Python sees the two's-complement bytes as unsigned.
    let int8 = records.iter().find(|r| r["tag"] == "int/i8").unwrap();
    assert_eq!(int8["data"], json!([128, 255, 0, 127]));
}

#[test]
fn crc_footers_are_rejected_by_python_smdebug_and_accepted_by_us() {
    let cases = python_readable_cases();
    let tmp = tempdir();
    let path = tmp.path().join("crc.tfevents");
    let (bytes, _) = write_rust_file(&cases, Footer::Crc);
    std::fs::write(&path, &bytes).unwrap();

    // smdebug's readers check footers with check="minimal": only the magic constant passes.
    let seen = read_with_python(&path);
    assert_eq!(
        seen["error"]["type"], "SMDebugRuntimeError",
        "Python smdebug should reject real CRC footers: {seen}"
    );
    assert_eq!(seen["records"], json!([]), "{seen}");

    let ours: Vec<_> = RecordReader::new(&bytes[..])
        .collect::<Result<_, _>>()
        .expect("ours reads it");
    assert_eq!(ours.len(), cases.len());
    for (rec, c) in ours.iter().zip(&cases) {
        assert_eq!(rec.footer, Footer::Crc);
        let ev = decode_tensor_event(&rec.payload).unwrap();
        assert_eq!((ev.tag.as_str(), ev.step, ev.mode), (c.tag, STEP, c.mode));
        assert_eq!(ev.tensor.to_le_bytes(), c.tensor.to_le_bytes(), "{}", c.tag);
    }
}

fn spec_record(c: &Case, wall_time: f64) -> Value {
    let mut r = json!({
        "tag": c.tag,
        "dtype": c.tensor.dtype().name(),
        "shape": c.tensor.shape(),
        "mode": mode_name(c.mode),
        "mode_step": c.mode_step,
        "wall_time": wall_time,
    });
    match &c.tensor {
        TensorValue::Str(strings) => r["strings"] = json!(strings.iter().collect::<Vec<_>>()),
        _ => r["hex"] = json!(hex::encode(c.tensor.to_le_bytes())),
    }
    r
}

/// docs/src/format.md §6.2, verified there against smdebug: `a` = [1, 2] float32, step 3, TRAIN,
/// mode step 1, wall_time 1600000000.0 — one 88-byte record.
const WORKED_EXAMPLE: &str = concat!(
    "4800000000000000fe92489d",             // len = 72, masked length CRC
    "090000000084d7d741",                   // wall_time
    "1003",                                 // step = 3
    "2a3b0a39",                             // summary { value {
    "0a0161",                               //   tag "a"
    "421708011209120708021203615f32",       //   tensor { dtype 1, shape { dim { 2, "a_2" } }
    "22080000803f00000040",                 //     tensor_content 1.0f, 2.0f }
    "4a1b0a0e0a096d6f64655f73746570120131", //   metadata { plugin { "mode_step", "1" }
    "0a090a046d6f6465120131",               //              plugin { "mode", "1" } } } }
    "b3c02d06",                             // magic footer
);

#[test]
fn our_event_files_are_byte_identical_to_python_filewriter() {
    // (step, records) per file; each file is one Python FileWriter.
    let worked = case(
        "a",
        arr1(&[1.0f32, 2.0]).into_dyn().into(),
        mode_number::TRAIN,
        1,
    );
    let zero = case(
        "zero/i64",
        arr0(7i64).into_dyn().into(),
        mode_number::GLOBAL,
        0,
    );
    let files: Vec<(i64, f64, Vec<Case>)> = vec![
        (3, 1_600_000_000.0, vec![worked]),
        (0, 1_600_000_001.5, vec![zero]),
        (STEP, WALL_TIME, python_readable_cases()),
    ];

    let spec = json!({"files": files.iter().map(|(step, wall, cases)| json!({
        "step": step,
        "worker": "worker_0",
        "records": cases.iter().map(|c| spec_record(c, *wall)).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()});
    let tmp = tempdir();
    let spec_path = tmp.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let trial = tmp.path().join("trial");
    let written = run_peer_json(
        "write_events.py",
        &[spec_path.to_str().unwrap(), trial.to_str().unwrap()],
    );
    let written: Vec<String> = serde_json::from_value(written).expect("list of paths");
    let index = index_entries(&trial);

    for ((step, wall, cases), rel) in files.iter().zip(&written) {
        let python = std::fs::read(trial.join(rel)).expect("Python's event file");
        let mut ours = Vec::new();
        let mut ranges = Vec::new();
        for c in cases {
            let payload =
                encode_tensor_event(c.tag, &c.tensor, *step, c.mode, c.mode_step, *wall).unwrap();
            let info = append_record(&mut ours, &payload, Footer::Magic);
            ranges.push((info.offset, info.len));
        }
        assert!(
            ours == python,
            "{rel}: our bytes differ from Python's FileWriter\n ours:   {}\n python: {}",
            hex::encode(&ours),
            hex::encode(&python)
        );
        assert_eq!(index[rel.as_str()], ranges, "{rel}: index start_idx/length");
    }

    let python_worked = std::fs::read(trial.join(&written[0])).unwrap();
    assert_eq!(
        hex::encode(python_worked),
        WORKED_EXAMPLE,
        "docs/src/format.md §6.2 worked example"
    );
}

/// The shared peer's folder (`SMDEBUG_SHARED_PEER`). These checks are ignored by default and
/// run only when asked for (`cargo xtask test` asks when `../shared/peer` exists); asked for
/// without the folder, they fail rather than pass without having compared anything.
fn shared_peer() -> PathBuf {
    let dir = std::env::var_os("SMDEBUG_SHARED_PEER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "SMDEBUG_SHARED_PEER is not set: this check compares with ../shared/peer; \
                 `cargo xtask test` runs it when that folder exists"
            )
        });
    assert!(
        dir.is_dir(),
        "SMDEBUG_SHARED_PEER={} is not a folder",
        dir.display()
    );
    dir
}

/// `make_fixture.py` of the shared peer and our `fixture.py` write the same bytes for every
/// conformance preset: an independent check against `../shared/peer`, ignored by default
/// (see [`shared_peer`]).
#[test]
#[ignore = "needs ../shared/peer: run by `cargo xtask test` when it exists"]
fn shared_peer_make_fixture_and_our_fixture_write_identical_trees() {
    let shared = shared_peer();
    let make_fixture = shared.join("make_fixture.py");
    assert!(
        make_fixture.is_file(),
        "{} not found",
        make_fixture.display()
    );
    for preset in conformance_presets() {
        let tmp = tempdir();
        let recipe = smdebug_conformance::presets_dir().join(format!("{preset}.json"));
        let theirs = tmp.path().join("shared");
        let out = Command::new(peer_python())
            .arg(&make_fixture)
            .arg(&theirs)
            .arg("--recipe")
            .arg(&recipe)
            .arg("-q")
            .env("PEER_NO_REEXEC", "1")
            .output()
            .expect("run make_fixture.py");
        assert!(
            out.status.success(),
            "make_fixture.py failed for {preset}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours =
            smdebug_conformance::write_fixture_from_recipe(&recipe, &tmp.path().join("ours"));
        let a = tree(&theirs);
        let b = tree(&ours);
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{preset}: file lists differ"
        );
        for (rel, bytes) in &a {
            assert!(bytes == &b[rel], "{preset}: {rel} differs");
        }
        eprintln!("record: shared peer: {preset}: {} files identical", a.len());
    }
}

/// Every file under `root` (relative path -> bytes).
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn recipe_model_agrees_with_every_manifest_value_of_a_template_recipe() {
    // tensor_templates, duplicate, const/step patterns and every dtype through the recipe
    // model, checked against what Python generated and wrote.
    let recipe_json = json!({
        "seed": 4242,
        "workers": 2,
        "schedule": [{"mode": "TRAIN", "steps": 2}, {"mode": "EVAL", "steps": 1}],
        "collections": [{"name": "all", "include_regex": [".*"]}],
        "tensor_templates": [
            {"count": 3, "name": "layer_{i:02d}/w", "shape": [2, 2], "dtype": "float16"}
        ],
        "tensors": [
            {"name": "f32", "shape": [3], "range": [-5, 5]},
            {"name": "f64", "shape": [2], "dtype": "float64", "pattern": "step"},
            {"name": "c64", "shape": [2], "dtype": "complex64"},
            {"name": "c128", "shape": [2], "dtype": "complex128", "pattern": "const", "const": "-inf"},
            {"name": "i8", "shape": [5], "dtype": "int8"},
            {"name": "u8", "shape": [5], "dtype": "uint8"},
            {"name": "i16", "shape": [3], "dtype": "int16", "inject": [{"index": 1, "value": -32768}]},
            {"name": "u16", "shape": [3], "dtype": "uint16"},
            {"name": "i32", "shape": [3], "dtype": "int32", "inject": [{"index": 0, "value": 2.9}]},
            {"name": "u32", "shape": [3], "dtype": "uint32", "range": [0, 4294967295u64]},
            {"name": "i64", "shape": [3], "dtype": "int64", "range": [-9223372036854775807i64, 9223372036854775807i64]},
            {"name": "u64", "shape": [3], "dtype": "uint64"},
            {"name": "b", "shape": [9], "dtype": "bool", "duplicate": true},
            {"name": "s", "shape": [3], "dtype": "str"},
            {"name": "f16_inject", "shape": [4], "dtype": "float16",
             "inject": [{"index": 0, "value": 1e-8}, {"index": 1, "value": 70000.0}, {"index": 2, "value": 3}]}
        ]
    });
    let tmp = tempdir();
    let recipe_path = tmp.path().join("recipe.json");
    std::fs::write(&recipe_path, recipe_json.to_string()).unwrap();
    let trial = tmp.path().join("trial");
    let manifest_path = tmp.path().join("manifest.json");
    smdebug_conformance::run_peer(
        "fixture.py",
        &[
            trial.to_str().unwrap(),
            "--recipe",
            recipe_path.to_str().unwrap(),
            "-q",
            "--manifest",
            manifest_path.to_str().unwrap(),
        ],
    );
    let manifest: Vec<ManifestRecord> =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let recipe = Recipe::load(&recipe_path).unwrap();
    assert_eq!(
        recipe.tensors[15].name, "layer_00/w",
        "templates come after tensors"
    );
    let mut checked = BTreeSet::new();
    for w in manifest.iter().filter(|r| r.kind != "reduction") {
        let expected = if w.kind == "duplicate" {
            recipe.duplicate_values(w.tensor_index, w.step, w.worker_index)
        } else {
            recipe.values(w.tensor_index, w.step, w.worker_index)
        }
        .unwrap();
        assert_eq!(expected.dtype().name(), w.dtype, "{}", w.tag);
        assert_eq!(expected.shape(), w.shape, "{}", w.tag);
        assert_eq!(
            sha256_hex(&expected.to_le_bytes()),
            w.sha256,
            "{} step {} worker {} ({}): recipe model {:?} vs Python {:?}",
            w.tag,
            w.step,
            w.worker,
            w.kind,
            expected,
            w.data
        );
        checked.insert((w.tag.clone(), w.kind.clone()));
    }
    // Every tensor and the duplicate were compared.
    assert_eq!(checked.len(), recipe.tensors.len() + 1, "{checked:?}");
}

fn run_compare(a: &Path, b: &Path) -> (i32, String) {
    let out = Command::new(peer_python())
        .arg(smdebug_conformance::peer_dir().join("compare_dumps.py"))
        .arg(a)
        .arg(b)
        .output()
        .expect("run compare_dumps.py");
    let code = out
        .status
        .code()
        .expect("compare_dumps.py exited by signal");
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Our `dump.py` and `compare_dumps.py`, which later tests use to judge the Rust dump: a dump
/// equals itself, and one changed digest, a changed error type or a NaN turned into a number
/// is reported at its JSON Pointer path.
#[test]
fn dump_and_compare_dumps_find_real_differences_only() {
    let tmp = tempdir();
    let trial = smdebug_conformance::write_fixture("small", &tmp.path().join("small"));
    let dump = run_peer_json("dump.py", &[trial.to_str().unwrap(), "--compact"]);
    assert_eq!(dump["schema"], "smdebug-trial-dump/v1");
    let a = tmp.path().join("a.json");
    std::fs::write(&a, dump.to_string()).unwrap();

    let mut same = dump.clone();
    same["generator"]["seconds"] = json!(12345.0); // ignored by default
    let b = tmp.path().join("b.json");
    std::fs::write(&b, same.to_string()).unwrap();
    assert_eq!(run_compare(&a, &b).0, 0, "{}", run_compare(&a, &b).1);

    let value = &mut same["tensors"]["fc1.weight"]["at"]["3"]["by_worker"]["worker_0"]["value"];
    value["sha256"] = json!("0".repeat(64));
    value["data"][0] = json!("NaN");
    std::fs::write(&b, same.to_string()).unwrap();
    let (code, report) = run_compare(&a, &b);
    assert_eq!(code, 1, "{report}");
    assert!(report.contains("DIFFERENT: 2 difference(s)"), "{report}");
    assert!(
        report.contains("/tensors/fc1.weight/at/3/by_worker/worker_0/value/sha256"),
        "{report}"
    );
    assert!(
        report.contains("/tensors/fc1.weight/at/3/by_worker/worker_0/value/data/0"),
        "{report}"
    );
}

/// Our `dump.py` agrees with the shared peer's `dump_trial.py` on every conformance preset:
/// like the fixture check above, ignored by default (see [`shared_peer`]).
#[test]
#[ignore = "needs ../shared/peer: run by `cargo xtask test` when it exists"]
fn shared_peer_dump_trial_and_our_dump_agree() {
    let shared = shared_peer();
    let dump_trial = shared.join("dump_trial.py");
    assert!(dump_trial.is_file(), "{} not found", dump_trial.display());
    for preset in conformance_presets() {
        let tmp = tempdir();
        let trial = smdebug_conformance::write_fixture(&preset, &tmp.path().join(&preset));
        let theirs = tmp.path().join("theirs.json");
        let out = Command::new(peer_python())
            .arg(&dump_trial)
            .arg(&trial)
            .arg("--out")
            .arg(&theirs)
            .env("PEER_NO_REEXEC", "1")
            .output()
            .expect("run dump_trial.py");
        assert!(
            out.status.success(),
            "dump_trial.py failed for {preset}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = tmp.path().join("ours.json");
        let doc = run_peer_json("dump.py", &[trial.to_str().unwrap(), "--compact"]);
        std::fs::write(&ours, doc.to_string()).unwrap();
        let (code, report) = run_compare(&theirs, &ours);
        assert_eq!(
            code, 0,
            "{preset}: our dump differs from dump_trial.py's:\n{report}"
        );
        eprintln!("record: shared peer: {preset}: dumps equal");
    }
}
