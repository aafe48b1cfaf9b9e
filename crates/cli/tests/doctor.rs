//! `smdebug doctor` and `smdebug seal` as commands: the exit status, the JSON and text forms
//! of the diagnosis library's report (whose findings `smdebug-diagnose`'s own tests cover
//! one by one), and sealing a trial the original wrote. `tests/conformance/doctor.rs` runs
//! doctor on every peer preset.

use serde_json::Value;
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `small` peer preset written by our writer into `dir/t`: a trial with no finding.
fn good(dir: &Path) -> PathBuf {
    let preset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets/small.json");
    let t = dir.join("t");
    let recipe = Recipe::load(&preset).unwrap();
    write_trial(&recipe, t.to_str().unwrap(), WriteOptions::default()).unwrap();
    t
}

fn smdebug(args: &[&str], trial: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(args)
        .arg(trial)
        .output()
        .unwrap()
}

fn doctor_json(trial: &Path) -> (i32, Value) {
    let o = smdebug(&["doctor", "--json"], trial);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap(), v)
}

fn kinds(v: &Value) -> Vec<&str> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect()
}

#[test]
fn a_good_trial_exits_zero_in_both_forms() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path());
    let (code, v) = doctor_json(&t);
    assert_eq!((code, kinds(&v)), (0, vec![]), "{v}");
    assert_eq!(v["payloads_verifiable"]["all"], true, "{v}");
    assert_eq!(v["trial"], t.to_str().unwrap(), "{v}");
    let text = smdebug(&["doctor"], &t);
    let out = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.status.code(), Some(0), "{out}");
    assert!(out.contains("no problem found"), "{out}");
}

#[test]
fn a_finding_exits_one_with_what_why_and_next() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path());
    std::fs::remove_file(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    let (code, v) = doctor_json(&t);
    assert_eq!((code, kinds(&v)), (1, vec!["missing-collections"]), "{v}");
    let f = &v["findings"][0];
    assert!(f["what"].as_str().unwrap().contains("worker_0"), "{v}");
    assert!(
        f["why"]
            .as_str()
            .unwrap()
            .contains("MissingCollectionFiles"),
        "{v}"
    );
    assert!(!f["next"].as_str().unwrap().is_empty(), "{v}");
    let text = smdebug(&["doctor"], &t);
    let out = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.status.code(), Some(1), "{out}");
    assert!(
        out.contains("worker_0") && out.contains("missing-collections"),
        "{out}"
    );
}

#[test]
fn a_bad_location_exits_two() {
    let o = smdebug(&["doctor"], Path::new("nosuchscheme://x/y"));
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nosuchscheme://x/y"),
        "{o:?}"
    );
}

#[test]
fn seal_makes_an_unsealed_trial_verifiable() {
    let d = tempfile::tempdir().unwrap();
    let t = good(d.path());
    // The index files as the original smdebug writes them: no payload CRC.
    for dir in std::fs::read_dir(t.join("index")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let i = smdebug_index::IndexFile::parse("i", &std::fs::read(&p).unwrap()).unwrap();
            std::fs::write(&p, i.to_python_json()).unwrap();
        }
    }
    let (code, v) = doctor_json(&t);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["payloads_verifiable"]["with_crc"], 0, "{v}");
    let seal = smdebug(&["seal"], &t);
    assert!(seal.status.success(), "{seal:?}");
    let (_, v) = doctor_json(&t);
    assert_eq!(v["payloads_verifiable"]["all"], true, "{v}");
}
