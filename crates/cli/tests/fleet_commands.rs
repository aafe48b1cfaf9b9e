//! Fleets for every command that reads a trial: `inspect`, `health`, `doctor` and `dump`
//! over several trials give each trial's own output in a section named after it, a
//! corrupt trial is named and skipped (`--strict` fails), and `export` of a fleet writes
//! one dataset whose runs hold the rows of each trial's own export.

use serde_json::Value;
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::path::Path;
use std::process::{Command, Output};

fn smdebug(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(args)
        .output()
        .unwrap()
}

const TRIALS: [&str; 3] = ["modes", "small", "workers"];

/// Peer presets under `root/jobs/NAME`, and with `broken`, a trial whose index is corrupt.
fn fleet(root: &Path, broken: bool) {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    for name in TRIALS {
        let recipe = Recipe::load(&presets.join(format!("{name}.json"))).unwrap();
        let out = root.join("jobs").join(name);
        write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default()).unwrap();
    }
    if broken {
        let recipe = Recipe::load(&presets.join("small.json")).unwrap();
        let out = root.join("jobs/broken");
        write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default()).unwrap();
        for dir in std::fs::read_dir(out.join("index")).unwrap() {
            for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
                std::fs::write(f.unwrap().path(), "{not json").unwrap();
            }
        }
    }
}

/// The sections of a fleet's text output: (trial, its lines), and the summary line.
fn sections(text: &str) -> (Vec<(String, String)>, String) {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut summary = String::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("== trial ")
            .and_then(|l| l.strip_suffix(" =="))
        {
            out.push((name.to_owned(), String::new()));
        } else if line.starts_with("== ") {
            summary = line.to_owned();
        } else {
            let section = &mut out.last_mut().expect("a line before any header").1;
            section.push_str(line);
            section.push('\n');
        }
    }
    (out, summary)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn text_commands_over_a_fleet_equal_each_trial_alone() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), true);
    let jobs = dir.path().join("jobs");
    let jobs_s = jobs.to_str().unwrap();
    for (command, extra) in [
        ("inspect", &["--timeout", "1"][..]),
        ("health", &["--timeout", "1"][..]),
        ("doctor", &[][..]),
    ] {
        let fleet_out = smdebug(&[&[command, jobs_s, "-j", "2"][..], extra].concat());
        let (got, summary) = sections(&stdout(&fleet_out));
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["broken", "modes", "small", "workers"], "{command}");
        for (name, section) in &got {
            let alone =
                smdebug(&[&[command, jobs.join(name).to_str().unwrap()][..], extra].concat());
            if name == "broken" && command != "doctor" {
                assert!(section.starts_with("skipped: "), "{command}: {section}");
                assert!(!alone.status.success(), "{command}");
                let err = String::from_utf8_lossy(&fleet_out.stderr);
                assert!(err.contains("trial broken skipped"), "{command}: {err}");
                continue;
            }
            assert_eq!(section, &stdout(&alone), "{command} {name}");
        }
        let skipped = usize::from(command != "doctor");
        assert_eq!(summary, format!("== 4 trial(s), {skipped} skipped =="));
        // The doctor finds the corrupt records (status 1); the others skip the trial.
        let code = if command == "doctor" { 1 } else { 0 };
        assert_eq!(fleet_out.status.code(), Some(code), "{command}");
        if command != "doctor" {
            let strict = smdebug(&[&[command, jobs_s, "--strict"][..], extra].concat());
            // `health` fails with status 2 (1 means found); `inspect` with 1, as alone.
            let failed = if command == "health" { 2 } else { 1 };
            assert_eq!(strict.status.code(), Some(failed), "{command}");
            let err = String::from_utf8_lossy(&strict.stderr);
            assert!(err.contains("trial broken"), "{command}: {err}");
        }
    }
}

#[test]
fn json_commands_over_a_fleet_carry_the_trial() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), true);
    let jobs = dir.path().join("jobs");
    let jobs_s = jobs.to_str().unwrap();
    for command in ["health", "doctor", "dump"] {
        let mut args = vec![command, jobs_s, "--json", "--timeout", "1"];
        match command {
            "doctor" => args.truncate(3),
            "dump" => {
                args.remove(2);
            }
            _ => {}
        }
        let o = smdebug(&args);
        let lines: Vec<Value> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let names: Vec<&str> = lines.iter().map(|l| l["trial"].as_str().unwrap()).collect();
        assert_eq!(names, ["broken", "modes", "small", "workers"], "{command}");
        for line in &lines {
            let name = line["trial"].as_str().unwrap();
            let path = jobs.join(name);
            let mut alone_args = args.clone();
            alone_args[1] = path.to_str().unwrap();
            let alone = smdebug(&alone_args);
            if line.get("error").is_some() {
                assert_eq!(name, "broken");
                assert!(!alone.status.success(), "{command}");
                continue;
            }
            let mut alone: Value = serde_json::from_slice(&alone.stdout).unwrap();
            let mut got = line.clone();
            if command == "dump" {
                got = got["dump"].take();
            } else {
                got.as_object_mut().unwrap().remove("trial");
                alone.as_object_mut().unwrap().remove("trial");
            }
            if command == "dump" {
                // Timings and the trial's own path differ; the tensors do not.
                assert_eq!(got["tensors"], alone["tensors"], "{command} {name}");
                assert_eq!(got["steps"], alone["steps"], "{command} {name}");
            } else {
                assert_eq!(got, alone, "{command} {name}");
            }
        }
    }
}

/// The rows of each table of one export, from its `--json` summary.
fn rows(summary: &Value) -> Vec<(String, u64)> {
    summary["tables"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, w)| (t.clone(), w["rows"].as_u64().unwrap()))
        .collect()
}

#[test]
fn fleet_export_is_one_dataset_partitioned_by_run() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), false);
    let jobs = dir.path().join("jobs");
    let out = dir.path().join("dataset");
    let o = smdebug(&[
        "export",
        jobs.to_str().unwrap(),
        out.to_str().unwrap(),
        "--json",
        "-j",
        "2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let marker: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("_SUCCESS")).unwrap()).unwrap();
    assert_eq!(marker["schema"], "smdebug-fleet-export/v1");
    assert!(!out.join("_staging").exists());
    let runs = marker["runs"].as_array().unwrap();
    assert_eq!(runs.len(), TRIALS.len());
    for (run, name) in runs.iter().zip(TRIALS) {
        assert_eq!(run["run"], name);
        let alone_out = dir.path().join("alone").join(name);
        let alone = smdebug(&[
            "export",
            jobs.join(name).to_str().unwrap(),
            alone_out.to_str().unwrap(),
            "--json",
            "--layout",
            "partitioned",
        ]);
        assert!(alone.status.success());
        let alone: Value = serde_json::from_slice(&alone.stdout).unwrap();
        let want = rows(&alone);
        let got: Vec<(String, u64)> = run["rows"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(t, r)| (t.clone(), r.as_u64().unwrap()))
            .collect();
        assert_eq!(got, want, "{name}");
        for (table, n) in want {
            let part = out.join(&table).join(format!("run={name}"));
            assert!(part.exists() || n == 0, "{}", part.display());
        }
    }
    read_back_with_pyarrow(&out, &marker);
}

/// Reads each table back as one dataset with pyarrow (when a Python with pyarrow is at
/// hand) and checks the `run` column's row counts against the marker.
fn read_back_with_pyarrow(out: &Path, marker: &Value) {
    let python = std::env::var_os("SMDEBUG_TOOLS_PYTHON")
        .map(std::path::PathBuf::from)
        .expect("SMDEBUG_TOOLS_PYTHON is not set: run the suite with `cargo xtask test`");
    assert!(
        python.exists(),
        "the tools venv ({}) is missing",
        python.display()
    );
    let script = r#"
import json, sys, pyarrow.dataset as ds, pyarrow.parquet as pq
out = sys.argv[1]
counts = {}
for table in ("tensors", "reductions", "scalars", "steps"):
    try:
        t = ds.dataset(f"{out}/{table}", format="parquet", partitioning="hive").to_table()
    except FileNotFoundError:
        continue
    counts[table] = {}
    for run in t.column("run").to_pylist():
        counts[table][run] = counts[table].get(run, 0) + 1
print(json.dumps(counts))
"#;
    let o = Command::new(python)
        .args(["-c", script, out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let counts: Value = serde_json::from_slice(&o.stdout).unwrap();
    for run in marker["runs"].as_array().unwrap() {
        let name = run["run"].as_str().unwrap();
        for (table, n) in run["rows"].as_object().unwrap() {
            if n.as_u64() == Some(0) {
                continue;
            }
            assert_eq!(&counts[table][name], n, "{table} {name}");
        }
    }
}
