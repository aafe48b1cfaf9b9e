//! smdebug-hook against the real smdebug 1.0.34: the trial `smdebug synth` writes with the
//! Rust hook is read by Python's `create_trial` exactly like the trial `tests/peer/fixture.py`
//! writes with smdebug's own writer classes from the same recipe, and differs from it byte
//! for byte only in ways named here; several worker processes writing one trial (local disk
//! and S3) while a reader polls; TensorBoard files read by the real `tensorboard` package;
//! the stop signal across processes; and writers killed with SIGKILL at random points.
//!
//! These tests fail (never skip) when the peer, the S3 server or the tools venv is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use smdebug_conformance::{
    check, conformance_presets, peer_dir, peer_python, presets_dir, require_s3_server, smdebug_bin,
    tempdir, write_fixture, write_fixture_from_recipe,
};
use smdebug_record::{decode_tensor_event, masked_crc32c, records, TensorValue};

fn synth(recipe: &Path, out: &str, extra: &[&str]) {
    let o = Command::new(smdebug_bin())
        .arg("synth")
        .arg(recipe)
        .arg(out)
        .arg("-q")
        .args(extra)
        .output()
        .expect("run smdebug synth");
    check(o, &format!("smdebug synth {} {out}", recipe.display()));
}

/// `tests/peer/dump.py` (what the real `create_trial` sees) into `dest`.
fn dump(trial: &str, dest: &Path) {
    let o = Command::new(peer_python())
        .arg(peer_dir().join("dump.py"))
        .args([trial, "--out", dest.to_str().unwrap(), "--timeout", "300"])
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .expect("run dump.py");
    check(o, &format!("dump.py {trial}"));
}

fn assert_dumps_equal(a: &Path, b: &Path, what: &str) {
    assert_dumps_equal_ignoring(a, b, what, &[]);
}

fn assert_dumps_equal_ignoring(a: &Path, b: &Path, what: &str, ignore: &[&str]) {
    let mut cmd = Command::new(peer_python());
    cmd.arg(peer_dir().join("compare_dumps.py")).args([a, b]);
    for g in ignore {
        cmd.args(["--ignore", g]);
    }
    let o = cmd.output().expect("run compare_dumps.py");
    assert!(
        o.status.success(),
        "{what}: smdebug reads the two trials differently\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A byte difference between the Python-written and the Rust-written trial that is
/// understood and accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KnownDifference {
    /// Our index entries carry an extra `"payload_crc32c": N` key (checked to be the masked
    /// CRC32C of the record's payload); the Python reader ignores unknown keys.
    IndexPayloadCrc,
    /// An `l2`/`abs_l2` reduction differs in its last bits: numpy computes the 1-d 2-norm
    /// with BLAS `dot` and the 2-d one with LAPACK's SVD, whose summation order is the
    /// library's; smdebug-reduce is within a few ulp (same tag, dtype and shape; relative
    /// difference below 1e-6).
    L2LastBits,
}

fn files(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeSet<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

fn as_f64s(t: &TensorValue) -> Vec<f64> {
    match t {
        TensorValue::Float16(a) => a.iter().map(|v| f64::from(*v)).collect(),
        TensorValue::Float32(a) => a.iter().map(|v| f64::from(*v)).collect(),
        TensorValue::Float64(a) => a.iter().copied().collect(),
        other => panic!("an l2 reduction of dtype {:?}", other.dtype()),
    }
}

/// Removes every `, "payload_crc32c": N` from an index file, checking each N against the
/// record it describes.
fn strip_and_check_crcs(index_text: &str, events: Option<&[u8]>, file: &Path) -> String {
    let doc: serde_json::Value = serde_json::from_str(index_text).unwrap();
    for entry in doc["tensor_payload"].as_array().unwrap() {
        let crc = entry["payload_crc32c"]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: an entry without payload_crc32c", file.display()));
        let (start, len) = (
            entry["start_idx"].as_u64().unwrap() as usize,
            entry["length"].as_u64().unwrap() as usize,
        );
        let ev = events.expect("index entries without an events file");
        let payload = &ev[start + 12..start + len - 4];
        assert_eq!(
            masked_crc32c(payload) as u64,
            crc,
            "{}: payload_crc32c of {}",
            file.display(),
            entry["tensorname"]
        );
    }
    let mut out = String::new();
    let mut rest = index_text;
    while let Some(i) = rest.find(", \"payload_crc32c\": ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + ", \"payload_crc32c\": ".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Compares two trial folders byte for byte and returns the kinds of difference found;
/// panics on any difference that is not a [`KnownDifference`].
fn byte_diff(py: &Path, rs: &Path) -> BTreeSet<KnownDifference> {
    let (pf, rf) = (files(py), files(rs));
    assert_eq!(pf, rf, "the two trials hold different files");
    let mut found = BTreeSet::new();
    for f in &pf {
        let (a, b) = (
            std::fs::read(py.join(f)).unwrap(),
            std::fs::read(rs.join(f)).unwrap(),
        );
        let name = f.to_string_lossy();
        if name.starts_with("index/") {
            let events = {
                let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
                v["meta"]["event_file_name"]
                    .as_str()
                    .map(|e| std::fs::read(rs.join(e)).unwrap())
            };
            let stripped =
                strip_and_check_crcs(std::str::from_utf8(&b).unwrap(), events.as_deref(), f);
            if stripped.as_bytes() != a.as_slice() {
                panic!(
                    "{name}: index files differ beyond payload_crc32c:\n{}\n{stripped}",
                    String::from_utf8_lossy(&a)
                );
            }
            if stripped.len() != b.len() {
                found.insert(KnownDifference::IndexPayloadCrc);
            }
            continue;
        }
        if a == b {
            continue;
        }
        assert!(name.starts_with("events/"), "{name} differs");
        let ra: Vec<_> = records(&a).map(Result::unwrap).collect();
        let rb: Vec<_> = records(&b).map(Result::unwrap).collect();
        assert_eq!(ra.len(), rb.len(), "{name}: record counts differ");
        for (x, y) in ra.iter().zip(&rb) {
            if x.payload == y.payload && x.offset == y.offset {
                continue;
            }
            let (ex, ey) = (
                decode_tensor_event(x.payload).unwrap(),
                decode_tensor_event(y.payload).unwrap(),
            );
            let is_l2 = ex.tag.starts_with("smdebug/reductions/l2/")
                || ex.tag.starts_with("smdebug/reductions/abs_l2/");
            assert!(
                is_l2
                    && ex.tag == ey.tag
                    && ex.tensor.dtype() == ey.tensor.dtype()
                    && ex.tensor.shape() == ey.tensor.shape()
                    && (ex.step, ex.mode, ex.mode_step, ex.wall_time)
                        == (ey.step, ey.mode, ey.mode_step, ey.wall_time),
                "{name}: record {} differs: {ex:?} vs {ey:?}",
                ex.tag
            );
            for (u, v) in as_f64s(&ex.tensor).into_iter().zip(as_f64s(&ey.tensor)) {
                assert!(
                    (u - v).abs() <= 1e-6 * u.abs().max(v.abs()),
                    "{name}: {} is {u} in Python, {v} here",
                    ex.tag
                );
            }
            found.insert(KnownDifference::L2LastBits);
        }
    }
    found
}

/// For every conformance preset: the real smdebug reads our trial exactly as it reads the
/// fixture of the same recipe, and the bytes differ only in the known ways.
#[test]
fn synth_trials_read_like_fixtures_for_every_preset() {
    let dir = tempdir();
    let mut report = BTreeMap::new();
    for preset in conformance_presets() {
        // Same folder name on both sides: the dump records the trial's name.
        let py = dir.path().join("py").join(&preset);
        let rs = dir.path().join("rs").join(&preset);
        write_fixture(&preset, &py);
        let recipe = presets_dir().join(format!("{preset}.json"));
        synth(&recipe, rs.to_str().unwrap(), &[]);
        let (dp, dr) = (
            dir.path().join(format!("{preset}.py.json")),
            dir.path().join(format!("{preset}.rs.json")),
        );
        dump(py.to_str().unwrap(), &dp);
        dump(rs.to_str().unwrap(), &dr);
        let l2_sha = [
            "*/reduction_value*/l2/sha256",
            "*/reduction_value*/abs_l2/sha256",
        ];
        let ignore: &[&str] = if matches!(preset.as_str(), "reductions" | "edge") {
            // Saved l2 reductions differ in their last bits (see KnownDifference); their
            // values are still compared, with compare_dumps' tolerance.
            &l2_sha
        } else {
            &[]
        };
        assert_dumps_equal_ignoring(&dp, &dr, &preset, ignore);
        report.insert(preset, byte_diff(&py, &rs));
    }
    use KnownDifference::*;
    let expected: BTreeMap<String, BTreeSet<KnownDifference>> = report
        .keys()
        .map(|p| {
            let l2 = matches!(p.as_str(), "reductions" | "edge");
            let set: BTreeSet<_> = if l2 {
                [IndexPayloadCrc, L2LastBits].into()
            } else {
                [IndexPayloadCrc].into()
            };
            (p.clone(), set)
        })
        .collect();
    assert_eq!(report, expected);
}

/// float16 values are numpy's `astype(float16)`: rounded once from the generated double.
/// Converting through f32 (or with `half::f16::from_f64`, which does on x86) rounds twice
/// and lands one ulp off for doubles just above an f16 midpoint; this recipe holds such
/// values (checked below), and the trial `smdebug synth` writes must be byte for byte the
/// fixture's, apart from the index CRC key.
#[test]
fn synth_float16_values_are_numpys_rounding() {
    // Just above the midpoints between neighbouring halves, by less than f32 can hold.
    let above_midpoint = [
        1.0 + 2f64.powi(-11) + 2f64.powi(-30),
        -(1.0 + 2f64.powi(-11) + 2f64.powi(-40)),
        1000.25 + 2f64.powi(-25),
        2f64.powi(-25) * (1.0 + 2f64.powi(-35)),
    ];
    let inject: Vec<serde_json::Value> = above_midpoint
        .iter()
        .enumerate()
        .map(|(i, v)| serde_json::json!({"index": i, "value": v}))
        .collect();
    let recipe_json = |dtype: &str| {
        serde_json::json!({
            "seed": 16,
            "schedule": [{"mode": "TRAIN", "steps": 2}],
            "collections": [{"name": "all", "include_regex": [".*"]}],
            "tensors": [
                {"name": "h", "shape": [256, 256], "dtype": dtype, "range": [-70000, 70000]},
                {"name": "near_midpoints", "shape": [4], "dtype": dtype, "inject": inject},
            ]
        })
    };
    let dir = tempdir();
    let recipe = dir.path().join("f16.json");
    std::fs::write(&recipe, recipe_json("float16").to_string()).unwrap();

    // The recipe does exercise double rounding: the same recipe in float64 gives the
    // doubles before the cast.
    let doubles =
        smdebug_synth::Recipe::from_json(&recipe_json("float64").to_string(), "f64").unwrap();
    let twice = |x: f64| half::f16::from_f32(x as f32).to_bits();
    let once = |x: f64| smdebug_synth::f64_to_f16(x).to_bits();
    let mut differ = 0;
    for t in 0..2 {
        for g in 0..2 {
            let v = doubles.values(t, g, 0).unwrap();
            let v = v.as_array::<f64>().unwrap();
            differ += v.iter().filter(|&&x| twice(x) != once(x)).count();
        }
    }
    assert!(
        differ > 2 * above_midpoint.len(),
        "only {differ} values where double rounding differs"
    );

    let py = write_fixture_from_recipe(&recipe, &dir.path().join("py"));
    let rs = dir.path().join("rs");
    synth(&recipe, rs.to_str().unwrap(), &[]);
    assert_eq!(
        byte_diff(&py, &rs),
        [KnownDifference::IndexPayloadCrc].into(),
        "float16 trial"
    );
}

/// A recipe of `n` workers, each writing every step (used by the multi-process tests).
fn workers_recipe(dir: &Path, n: usize, steps: usize) -> PathBuf {
    let recipe = serde_json::json!({
        "description": "hook conformance: concurrent workers",
        "seed": 4242,
        "workers": n,
        "schedule": [{"mode": "TRAIN", "steps": steps}, {"mode": "EVAL", "steps": 2}],
        "default_save_config": {"save_interval": 1},
        "collections": [
            {"name": "weights", "include_regex": ["^(?!gradient).*weight"]},
            {"name": "gradients", "include_regex": ["^gradient"],
             "reduction_config": {"reductions": ["mean", "max"], "save_raw_tensor": true}},
            {"name": "losses", "include_regex": ["[Ll]oss_(?!input).*output"]}
        ],
        "tensors": [
            {"name": "fc.weight", "shape": [16, 8], "dtype": "float32"},
            {"name": "gradient/fc.weight", "shape": [16, 8], "dtype": "float32"},
            {"name": "CrossEntropyLoss_output_0", "shape": [], "dtype": "float32"}
        ]
    });
    let p = dir.join(format!("workers{n}.json"));
    std::fs::write(&p, serde_json::to_string_pretty(&recipe).unwrap()).unwrap();
    p
}

/// Index files visible under a local trial, as a reader polls them.
fn visible_index_files(trial: &Path) -> usize {
    let idx = trial.join("index");
    if !idx.exists() {
        return 0;
    }
    files(&idx)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .count()
}

/// Every worker process must have written each visible step completely: an index file
/// whose records all decode from its events file.
fn assert_visible_steps_complete(trial: &Path) {
    let idx = trial.join("index");
    if !idx.exists() {
        return;
    }
    for f in files(&idx) {
        if f.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read(idx.join(&f)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("index file {} is not complete JSON: {e}", f.display()));
        if let Some(ev) = v["meta"]["event_file_name"].as_str() {
            let events = std::fs::read(trial.join(ev))
                .unwrap_or_else(|e| panic!("{ev} listed by {} is missing: {e}", f.display()));
            for entry in v["tensor_payload"].as_array().unwrap() {
                let (s, l) = (
                    entry["start_idx"].as_u64().unwrap(),
                    entry["length"].as_u64().unwrap(),
                );
                let rec = smdebug_record::decode_record_at(&events, s, l).unwrap();
                rec.verify_payload_crc32c(entry["payload_crc32c"].as_u64().unwrap() as u32)
                    .unwrap();
                let ev = decode_tensor_event(rec.payload).unwrap();
                assert_eq!(ev.tag, entry["tensorname"].as_str().unwrap());
            }
        }
    }
}

/// Eight worker processes write one trial at the same time while this thread polls it: every
/// step a poller sees is complete, and at the end smdebug reads the trial exactly as the
/// fixture of the same recipe.
#[test]
fn eight_worker_processes_write_one_trial_while_a_reader_polls() {
    let dir = tempdir();
    let recipe = workers_recipe(dir.path(), 8, 12);
    let rs = dir.path().join("rs").join("trial");
    // Workers never end the trial themselves (a worker starting after another ended it
    // would refuse the finished trial); the job ends it once all of them are done.
    let mut children: Vec<_> = (0..8)
        .map(|w| spawn_worker(&recipe, rs.to_str().unwrap(), w))
        .collect();
    let mut polls = 0;
    let mut max_seen = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut running = || {
        children
            .iter_mut()
            .any(|c| c.try_wait().map(|s| s.is_none()).unwrap_or(false))
    };
    while running() && Instant::now() < deadline {
        let n = visible_index_files(&rs);
        assert!(n >= max_seen, "index files disappeared");
        max_seen = n;
        assert_visible_steps_complete(&rs);
        polls += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    for c in children {
        check(c.wait_with_output().unwrap(), "synth worker");
    }
    end_trial(&recipe, rs.to_str().unwrap());
    assert!(polls > 1, "the reader never polled while the workers wrote");
    assert_visible_steps_complete(&rs);
    assert_eq!(visible_index_files(&rs), 8 * 14);

    let py = dir.path().join("py").join("trial");
    write_fixture_from_recipe(&recipe, &py);
    let (dp, dr) = (dir.path().join("py.json"), dir.path().join("rs.json"));
    dump(py.to_str().unwrap(), &dp);
    dump(rs.to_str().unwrap(), &dr);
    assert_dumps_equal(&dp, &dr, "8 concurrent workers");
    let collections =
        std::fs::read_to_string(rs.join("collections/000000000/worker_7_collections.json"))
            .unwrap();
    assert!(
        collections.ends_with(r#""_meta": {"num_workers": 8}}"#),
        "{collections}"
    );
}

/// Starts the process of one worker of the recipe writing into `out`. Workers never end the
/// trial themselves (see [`end_trial`]).
fn spawn_worker(recipe: &std::path::Path, out: &str, worker: usize) -> std::process::Child {
    Command::new(smdebug_bin())
        .arg("synth")
        .arg(recipe)
        .arg(out)
        .args(["-q", "--end-marker", "never", "--only-worker"])
        .arg(worker.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Writes the end-of-training marker once every worker process has finished.
fn end_trial(recipe: &std::path::Path, out: &str) {
    let o = Command::new(smdebug_bin())
        .arg("synth")
        .arg(recipe)
        .arg(out)
        .args(["-q", "--end-marker", "only"])
        .output()
        .unwrap();
    check(o, "synth --end-marker only");
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("hook-conformance/{prefix}-{}-{nanos}", std::process::id())
}

/// Three worker processes write one trial on S3; smdebug reads it from S3 exactly as the
/// local fixture of the same recipe.
#[test]
fn worker_processes_write_one_trial_on_s3() {
    let (endpoint, bucket) = require_s3_server();
    let dir = tempdir();
    let recipe = workers_recipe(dir.path(), 3, 4);
    let url = format!("s3://{bucket}/{}/trial", unique("s3-workers"));
    let children: Vec<_> = (0..3).map(|w| spawn_worker(&recipe, &url, w)).collect();
    for c in children {
        check(c.wait_with_output().unwrap(), "synth worker on S3");
    }
    end_trial(&recipe, &url);
    let py = dir.path().join("py").join("trial");
    write_fixture_from_recipe(&recipe, &py);
    let (dp, dr) = (dir.path().join("py.json"), dir.path().join("s3.json"));
    dump(py.to_str().unwrap(), &dp);
    let o = Command::new(peer_python())
        .arg(peer_dir().join("dump.py"))
        .args([
            url.as_str(),
            "--out",
            dr.to_str().unwrap(),
            "--timeout",
            "300",
        ])
        .env("SMDEBUG_LOG_LEVEL", "error")
        .env("AWS_ENDPOINT_URL_S3", &endpoint)
        .env("AWS_ENDPOINT_URL", &endpoint)
        .output()
        .unwrap();
    check(o, "dump.py on S3");
    assert_dumps_equal(&dp, &dr, "3 workers on S3");
}

/// TensorBoard files (scalars of losses and `save_scalar`, histograms of a chosen
/// collection) are loaded by the real `tensorboard` package's EventAccumulator.
#[test]
fn tensorboard_files_load_in_tensorboard() {
    let dir = tempdir();
    let trial = dir.path().join("trial");
    write_tensorboard_trial(&trial);
    let python = std::env::var_os("SMDEBUG_TOOLS_PYTHON")
        .map(PathBuf::from)
        .expect("SMDEBUG_TOOLS_PYTHON is not set: run the suite with `cargo xtask test`");
    assert!(
        python.exists(),
        "the tools venv ({}) is missing: run the suite with `cargo xtask test`",
        python.display()
    );
    let out = check(
        Command::new(&python)
            .arg(peer_dir().join("hook_tensorboard_read.py"))
            .arg(trial.join("tensorboard"))
            .output()
            .unwrap(),
        "hook_tensorboard_read.py",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Five TRAIN steps: the loss and the lr scalar at every step, histograms of weights.
    let train = &v["TRAIN"];
    let loss = train["scalars"]["CrossEntropyLoss_output_0"]
        .as_array()
        .unwrap();
    assert_eq!(loss.len(), 5, "{v}");
    for (i, p) in loss.iter().enumerate() {
        assert_eq!(p["step"], i);
        let expected = 1.0 / (1.0 + i as f64);
        assert!(
            (p["value"].as_f64().unwrap() - expected).abs() < 1e-6,
            "{p}"
        );
    }
    // Cached scalars are flushed at the start of the next step, after set_mode, and at
    // close: each still lands in the folder of the mode its step ran in (smdebug puts the
    // last TRAIN step's in the EVAL folder, the mode current when it flushes them).
    // docs/src/semantics.md §1.2.
    let steps = |mode: &str| -> Vec<u64> {
        v[mode]["scalars"]["scalar/lr"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["step"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(steps("TRAIN"), [0, 1, 2, 3, 4]);
    assert_eq!(steps("EVAL"), [5, 6]);
    let hist = train["histograms"]["weights/fc1.weight"]
        .as_array()
        .unwrap();
    assert_eq!(hist.len(), 5);
    for (i, h) in hist.iter().enumerate() {
        assert_eq!(h["num"], 12.0);
        assert_eq!(h["min"], 0.0);
        assert_eq!(h["max"], 11.0 * i as f64);
        assert_eq!(h["bucket_counts_total"], 12.0);
    }
    assert!(train["histograms"]
        .get("gradients/gradient/fc1.weight")
        .is_none());
    assert_eq!(
        v["EVAL"]["scalars"]["CrossEntropyLoss_output_0"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

fn write_tensorboard_trial(trial: &Path) {
    use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};
    let mut hook = HookBuilder::new(trial.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .include_collections(["weights", "gradients"])
        .export_tensorboard(true)
        .build()
        .unwrap();
    hook.get_collection("gradients").save_histogram = false;
    for (mode, steps) in [(Mode::Train, 5), (Mode::Eval, 2)] {
        hook.set_mode(mode);
        for s in 0..steps {
            hook.step().unwrap();
            let w = ndarray::Array::from_shape_fn((4, 3), |(r, c)| ((r * 3 + c) * s) as f32);
            hook.save("fc1.weight", TensorValue::from(w.into_dyn()))
                .unwrap();
            let g = ndarray::Array::from_elem((4, 3), 0.5f32);
            hook.save("gradient/fc1.weight", TensorValue::from(g.into_dyn()))
                .unwrap();
            let loss = ndarray::arr0(1.0f32 / (1.0 + s as f32));
            hook.save(
                "CrossEntropyLoss_output_0",
                TensorValue::from(loss.into_dyn()),
            )
            .unwrap();
            hook.save_scalar("lr", 0.1 * f64::from(s as u8), None);
        }
    }
    hook.close().unwrap();
}

/// A writer process killed with SIGKILL at random points (100 times by default;
/// `SMDEBUG_HOOK_CRASH_RUNS` changes it) leaves a trial that either has not started (no
/// collections file and no index file) or opens in the real smdebug, with every step it
/// shows complete and equal to the same step of an uninterrupted run.
#[test]
fn writers_killed_at_random_points_leave_readable_trials() {
    let runs: usize = std::env::var("SMDEBUG_HOOK_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempdir();
    let recipe = dir.path().join("crash.json");
    std::fs::write(
        &recipe,
        serde_json::to_string(&serde_json::json!({
            "seed": 77,
            "schedule": [{"mode": "TRAIN", "steps": 40}, {"mode": "EVAL", "steps": 5}],
            "default_save_config": {"save_interval": 1},
            "collections": [
                {"name": "weights", "include_regex": ["weight"]},
                {"name": "gradients", "include_regex": ["^gradient"],
                 "reduction_config": {"reductions": ["mean", "max"], "norms": ["l2"],
                                      "save_raw_tensor": true, "save_shape": true}},
                {"name": "losses", "include_regex": ["[Ll]oss_(?!input).*output"]}
            ],
            "tensors": [
                {"name": "fc.weight", "shape": [64, 32]},
                {"name": "gradient/fc.weight", "shape": [64, 32]},
                {"name": "CrossEntropyLoss_output_0", "shape": []}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let reference = dir.path().join("reference");
    smdebug_bin(); // built before timing: the first call runs cargo
    let t0 = Instant::now();
    synth(&recipe, reference.to_str().unwrap(), &[]);
    let full = t0.elapsed();

    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut started = Vec::new();
    let (mut not_started, mut interrupted) = (0, 0);
    for i in 0..runs {
        let out = dir.path().join(format!("k{i:03}"));
        let mut child = Command::new(smdebug_bin())
            .arg("synth")
            .arg(&recipe)
            .arg(&out)
            .arg("-q")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Anywhere from before the first file to just after the end.
        let delay = full.mul_f64((next() % 1100) as f64 / 1000.0);
        std::thread::sleep(delay);
        let status = Command::new("kill")
            .args(["-9", &child.id().to_string()])
            .status()
            .unwrap();
        child.wait().unwrap();
        let _ = status; // the process may have finished already: kill then fails, harmlessly
        let has_collections = out
            .join("collections/000000000/worker_0_collections.json")
            .exists();
        if !has_collections {
            assert_eq!(
                visible_index_files(&out),
                0,
                "run {i} (seed {seed}): index files without a collections file"
            );
            not_started += 1;
            continue;
        }
        if !out.join("training_job_end.ts").exists() {
            interrupted += 1;
        }
        assert_visible_steps_complete(&out);
        started.push(out);
    }
    for batch in started.chunks(25) {
        let o = Command::new(peer_python())
            .arg(peer_dir().join("hook_open_trials.py"))
            .arg(&reference)
            .args(batch)
            .env("SMDEBUG_LOG_LEVEL", "error")
            .output()
            .unwrap();
        check(o, &format!("hook_open_trials.py (seed {seed})"));
    }
    eprintln!(
        "crash test (seed {seed}): {runs} kills, {not_started} before the first file, \
         {interrupted} mid-run, {} after the end",
        started.len() - interrupted
    );
    assert!(
        interrupted > 0 || runs < 10,
        "no kill landed while the writer was writing (seed {seed}); the test proved nothing"
    );
}

/// The stop signal on S3: another client creates the marker object, the hook sees it at
/// its next (rate-limited) check.
#[test]
fn the_stop_signal_is_seen_on_s3() {
    let (_endpoint, bucket) = require_s3_server();
    let url = format!("s3://{bucket}/{}/trial", unique("s3-stop"));
    let mut hook = smdebug_hook::HookBuilder::new(url.as_str())
        .stop_check_interval(Duration::ZERO)
        .build()
        .unwrap();
    hook.step().unwrap();
    assert!(!hook.should_stop());
    let other =
        smdebug_storage::BlockingStore::open(&smdebug_storage::Location::parse(&url).unwrap())
            .unwrap();
    other
        .put(
            hook.stop_signal_key(),
            smdebug_storage::Bytes::from_static(b"1"),
        )
        .unwrap();
    hook.step().unwrap();
    assert!(hook.should_stop());
    hook.close().unwrap();
    assert!(other.exists("training_job_end.ts").unwrap());
}
