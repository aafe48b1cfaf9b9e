//! `smdebug export` against the real smdebug 1.0.34 and the real readers: for every preset
//! the exported rows equal the rows `tests/peer/export_reference.py` builds from the Python
//! `create_trial` values with numpy statistics, and pyarrow, pandas, polars and DuckDB
//! (`tests/peer/export_read.py`, tools venv) read the same rows from our files. Also: a
//! DuckDB query over a partitioned multi-worker export against the Trial API, an export to
//! the S3 test server, `--follow` on a trial being written, and random recipes.

use proptest::prelude::*;
use smdebug_conformance::{
    check, conformance_presets, peer_dir, require_s3_server, run_peer, smdebug_bin, tempdir,
    write_fixture, write_fixture_from_recipe,
};
use smdebug_index::{classify_key, IndexFile, TrialFile};
use smdebug_storage::{BlockingStore, Location};
use smdebug_trial::{create_trial, Mode};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The tools venv's interpreter (pyarrow, pandas, polars, DuckDB).
fn tools_python() -> PathBuf {
    std::env::var_os("SMDEBUG_TOOLS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "SMDEBUG_TOOLS_PYTHON is not set: run the suite with `cargo xtask test` (or \
                 source the exports of `cargo xtask services`)"
            )
        })
}

fn export(trial: &Path, out: &Path, args: &[&str]) -> serde_json::Value {
    let o = check(
        Command::new(smdebug_bin())
            .arg("export")
            .arg(trial)
            .arg(out)
            .arg("--json")
            .args(args)
            .output()
            .expect("run smdebug export"),
        "smdebug export",
    );
    serde_json::from_slice(&o.stdout).expect("the --json summary")
}

/// Runs export_read.py; returns its report.
fn read_back(out: &Path, format: &str, reference: Option<&Path>) -> serde_json::Value {
    let mut cmd = Command::new(tools_python());
    cmd.arg(peer_dir().join("export_read.py"))
        .arg(out)
        .args(["--format", format]);
    if let Some(r) = reference {
        cmd.arg("--reference").arg(r);
    }
    let o = check(cmd.output().expect("run export_read.py"), "export_read.py");
    serde_json::from_slice(&o.stdout).expect("export_read.py prints JSON")
}

fn reference(trial: &Path, to: &Path) -> serde_json::Value {
    let o = run_peer(
        "export_reference.py",
        &[trial.to_str().unwrap(), "--values", "small"],
    );
    std::fs::write(to, &o.stdout).unwrap();
    serde_json::from_slice(&o.stdout).expect("export_reference.py prints JSON")
}

/// Asserts a read-back report: every reader agrees, the rows equal the reference and there
/// are as many as the reference has (no row twice).
fn assert_report(
    what: &str,
    report: &serde_json::Value,
    reference: &serde_json::Value,
    readers: usize,
) {
    assert_eq!(
        report["readers"].as_array().map(Vec::len),
        Some(readers),
        "{what}: {report}"
    );
    assert_eq!(report["disagreements"], serde_json::json!([]), "{what}");
    assert_eq!(report["differences"], serde_json::json!([]), "{what}");
    for table in ["tensors", "reductions", "scalars", "steps"] {
        assert_eq!(
            report["rows"][table].as_u64(),
            reference[table].as_array().map(|a| a.len() as u64),
            "{what}: rows of {table}"
        );
    }
}

#[test]
fn exports_equal_python_for_every_preset_in_every_format() {
    for preset in conformance_presets() {
        let dir = tempdir();
        let trial = write_fixture(&preset, &dir.path().join("trial"));
        let ref_path = dir.path().join("reference.json");
        let want = reference(&trial, &ref_path);
        assert!(
            !want["tensors"].as_array().unwrap().is_empty(),
            "{preset}: no rows"
        );
        let variants: [(&str, &[&str], usize); 3] = [
            (
                "parquet",
                &["--layout", "partitioned", "--bucket-steps", "3"],
                4,
            ),
            ("csv", &["--layout", "single"], 4),
            // DuckDB has no built-in reader of Arrow IPC files.
            ("arrow", &["--threads", "1"], 3),
        ];
        for (format, extra, readers) in variants {
            let out = dir.path().join(format!("out-{format}"));
            let mut args = vec!["--values", "small", "--format", format];
            args.extend_from_slice(extra);
            let summary = export(&trial, &out, &args);
            assert_eq!(
                summary["skipped_records"],
                serde_json::json!([]),
                "{preset}"
            );
            assert!(out.join("_SUCCESS").exists());
            let report = read_back(&out, format, Some(&ref_path));
            assert_report(&format!("{preset} {format}"), &report, &want, readers);
        }
    }
}

#[test]
fn duckdb_gradient_l2_of_a_partitioned_multi_worker_export_equals_the_trial_api() {
    let dir = tempdir();
    let trial = write_fixture("workers", &dir.path().join("trial"));
    let out = dir.path().join("out");
    export(
        &trial,
        &out,
        &["--layout", "partitioned", "--bucket-steps", "4"],
    );
    let buckets = std::fs::read_dir(out.join("tensors")).unwrap().count();
    assert!(buckets > 1, "expected several step buckets, got {buckets}");
    let o = check(
        Command::new(tools_python())
            .arg(peer_dir().join("export_read.py"))
            .arg(&out)
            .arg("--gradient-l2")
            .output()
            .unwrap(),
        "export_read.py --gradient-l2",
    );
    let got: Vec<(String, i64, f64)> = serde_json::from_slice(&o.stdout).unwrap();
    let tr = create_trial(trial.to_str().unwrap()).unwrap();
    let mut want = Vec::new();
    for name in tr.tensor_names().unwrap() {
        if !name.starts_with("gradient") {
            continue;
        }
        let t = tr.tensor(&name).unwrap();
        for g in t.steps(Mode::Global, true).unwrap() {
            let mut sq = 0.0f64;
            for w in t.workers(g, Mode::Global).unwrap() {
                let v = t.value(g, Mode::Global, Some(&w)).unwrap();
                let a = v.as_array::<f32>().expect("float32 gradients");
                sq += a.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>();
            }
            want.push((name.clone(), g, sq.sqrt()));
        }
    }
    assert!(!want.is_empty());
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(&want) {
        assert_eq!((&a.0, a.1), (&b.0, b.1));
        assert!(
            (a.2 - b.2).abs() <= 1e-9 * b.2.abs(),
            "{a:?} vs Trial API {b:?}"
        );
    }
}

#[test]
fn an_export_to_s3_reads_back_like_a_local_one() {
    let (_endpoint, bucket) = require_s3_server();
    let dir = tempdir();
    let trial = write_fixture("reductions", &dir.path().join("trial"));
    let ref_path = dir.path().join("reference.json");
    let want = reference(&trial, &ref_path);
    let prefix = format!("export-test-{}", std::process::id());
    let url = format!("s3://{bucket}/{prefix}");
    let summary = export(&trial, Path::new(&url), &["--values", "small"]);
    // Read back with our storage into a folder, then with the four readers.
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    let local = dir.path().join("back");
    let listed = store.list("", None).unwrap();
    assert!(listed.iter().any(|o| o.key == "_SUCCESS"));
    let mut files = 0;
    for obj in listed {
        let dst = local.join(&obj.key);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(&dst, store.get(&obj.key).unwrap()).unwrap();
        files += 1;
    }
    let written: usize = summary["tables"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["files"].as_array().unwrap().len())
        .sum();
    assert_eq!(files, written + 1, "every file and _SUCCESS");
    let report = read_back(&local, "parquet", Some(&ref_path));
    assert_report("s3", &report, &want, 4);
}

/// Every file below `root`, by its path relative to it (`/`-separated).
fn files_below(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
                out.insert(rel.replace(std::path::MAIN_SEPARATOR, "/"));
            }
        }
    }
    out
}

/// A fleet exported to the S3 test server holds the keys and bytes of the same fleet
/// exported to a local folder (runs Hive-partitioned, the marker), also when exported
/// over an earlier export (each run's files replaced, nothing left over).
#[test]
fn a_fleet_export_to_s3_equals_a_local_one() {
    let (_endpoint, bucket) = require_s3_server();
    let dir = tempdir();
    let fleet = dir.path().join("fleet");
    for name in ["job-a", "job-b/debug-output"] {
        write_fixture("reductions", &fleet.join(name));
    }
    let export_fleet = |out: &str, extra: &[&str]| {
        let o = Command::new(smdebug_bin())
            .arg("export")
            .arg(&fleet)
            .arg(out)
            .args(["--json", "-j", "2"])
            .args(extra)
            .output()
            .expect("run smdebug export");
        check(o, "smdebug export of a fleet");
    };
    let local = dir.path().join("local");
    export_fleet(local.to_str().unwrap(), &[]);
    let url = format!("s3://{bucket}/fleet-export-test-{}", std::process::id());
    // First an export of other steps, then the one compared: its runs replace those files.
    export_fleet(&url, &["--steps", "0:2", "--bucket-steps", "1"]);
    export_fleet(&url, &[]);
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    let keys: BTreeSet<String> = store
        .list("", None)
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let want = files_below(&local);
    assert!(want.contains("_SUCCESS"), "{want:?}");
    assert!(
        want.iter()
            .any(|k| k.contains("/run=job-b%2Fdebug-output/")),
        "{want:?}"
    );
    assert_eq!(keys, want);
    for key in &keys {
        let got = store.get(key).unwrap();
        assert_eq!(got, std::fs::read(local.join(key)).unwrap(), "{key}");
    }
}

fn copy_rel(from: &Path, to: &Path, rel: &str) {
    let dst = to.join(rel);
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    // Published the way the writers do: a temporary name, then a rename.
    let tmp = dst.with_extension("tmp-copy");
    std::fs::copy(from.join(rel), &tmp).unwrap();
    std::fs::rename(&tmp, &dst).unwrap();
}

#[test]
fn follow_exports_each_step_of_a_live_trial_exactly_once() {
    let dir = tempdir();
    let recipe = serde_json::json!({
        "seed": 11,
        "workers": 2,
        "schedule": [{"mode": "TRAIN", "steps": 6}, {"mode": "EVAL", "steps": 2}],
        "default_save_config": {"save_interval": 1},
        "collections": [{"name": "losses", "include_regex": ["loss"]}],
        "tensors": [{"name": "w", "shape": [3], "dtype": "float32"},
                    {"name": "loss_output_0", "shape": [], "dtype": "float32"}],
    });
    let recipe_path = dir.path().join("recipe.json");
    std::fs::write(&recipe_path, recipe.to_string()).unwrap();
    let full = write_fixture_from_recipe(&recipe_path, &dir.path().join("full"));
    let ref_path = dir.path().join("reference.json");
    let want = reference(&full, &ref_path);
    let live = dir.path().join("live");
    for w in 0..2 {
        copy_rel(
            &full,
            &live,
            &format!("collections/000000000/worker_{w}_collections.json"),
        );
    }
    let out = dir.path().join("out");
    let follower = Command::new(smdebug_bin())
        .arg("export")
        .arg(&live)
        .arg(&out)
        .args([
            "--follow",
            "--poll",
            "0.05",
            "--bucket-steps",
            "3",
            "--values",
            "small",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start smdebug export --follow");
    // The writer: a step of each worker at a time, event file before index file.
    for s in 0..8 {
        for w in 0..2 {
            let ev = format!("events/{s:012}/{s:012}_worker_{w}.tfevents");
            if full.join(&ev).exists() {
                copy_rel(&full, &live, &ev);
            }
            copy_rel(
                &full,
                &live,
                &format!("index/000000000/{s:012}_worker_{w}.json"),
            );
        }
        std::thread::sleep(Duration::from_millis(120));
    }
    copy_rel(&full, &live, "training_job_end.ts");
    let o = check(
        follower.wait_with_output().unwrap(),
        "smdebug export --follow",
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let parts = summary["tables"]["tensors"]["files"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        parts > 1,
        "expected several part files, got {parts}: {summary}"
    );
    let report = read_back(&out, "parquet", Some(&ref_path));
    assert_report("follow", &report, &want, 4);
}

/// `(tensor, step, worker)` entries and reduction records the index files of a trial list.
fn index_entries(trial: &Path) -> (usize, usize) {
    let mut rows = BTreeSet::new();
    let mut reductions = 0;
    let mut stack = vec![trial.join("index")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(trial).unwrap().to_str().unwrap().to_owned();
            let Ok(TrialFile::Index(name)) = classify_key(&rel) else {
                continue;
            };
            let index = IndexFile::parse(&rel, &std::fs::read(&p).unwrap()).unwrap();
            let worker = name.worker().into_owned();
            for t in &index.tensors {
                match smdebug_index::reverse_reduction_tensor_name(&t.name) {
                    Some(r) if t.name.starts_with(smdebug_index::REDUCTIONS_PREFIX) => {
                        reductions += 1;
                        rows.insert((r.tensor.to_owned(), name.step, worker.clone()));
                    }
                    _ => {
                        rows.insert((t.name.clone(), name.step, worker.clone()));
                    }
                }
            }
            for s in &index.shapes {
                rows.insert((s.name.clone(), name.step, worker.clone()));
            }
        }
    }
    (rows.len(), reductions)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random recipes written by the real smdebug writer classes export without error, with
    /// one `tensors` row per index entry and one `reductions` row per saved reduction.
    #[test]
    fn random_recipes_export_one_row_per_index_entry(recipe in crate::trial::recipe_strategy()) {
        let dir = tempdir();
        let recipe_path = dir.path().join("recipe.json");
        std::fs::write(&recipe_path, serde_json::to_string(&recipe).unwrap()).unwrap();
        let trial = write_fixture_from_recipe(&recipe_path, &dir.path().join("trial"));
        let summary = export(&trial, &dir.path().join("out"), &["--layout", "partitioned", "--bucket-steps", "2"]);
        let (rows, reductions) = index_entries(&trial);
        prop_assert_eq!(summary["tables"]["tensors"]["rows"].as_u64(), Some(rows as u64), "{}", recipe);
        prop_assert_eq!(summary["tables"]["reductions"]["rows"].as_u64(), Some(reductions as u64), "{}", recipe);
        prop_assert_eq!(&summary["skipped_records"], &serde_json::json!([]));
    }
}
