//! `smdebug demo`: the trial it writes (candle adapter + hook, TensorBoard beside it) is read
//! identically by the real Python smdebug (`tests/peer/dump.py`) and by
//! `smdebug_dump`, compared with `tests/peer/compare_dumps.py`.

use smdebug_conformance::{check, peer_dir, peer_python, smdebug_bin, tempdir};
use smdebug_dump::{dump_trial, DumpOptions};
use std::path::Path;
use std::process::Command;

fn demo_trial(scenario: &str, steps: &str, out: &Path) -> Vec<serde_json::Value> {
    let o = Command::new(smdebug_bin())
        .args([
            "demo",
            "--json",
            "--scenario",
            scenario,
            "--steps",
            steps,
            "--out",
        ])
        .arg(out)
        .output()
        .expect("run smdebug demo");
    let o = check(o, &format!("smdebug demo --scenario {scenario}"));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn python_reads_like_rust(scenario: &str, steps: &str, ignore: &[&str]) {
    let dir = tempdir();
    let trial = dir.path().join(scenario);
    demo_trial(scenario, steps, &trial);
    assert!(trial.join("training_job_end.ts").exists());
    assert!(
        trial.join("tensorboard").is_dir(),
        "TensorBoard logs beside the trial"
    );
    let py = dir.path().join("py.json");
    let o = Command::new(peer_python())
        .arg(peer_dir().join("dump.py"))
        .args([
            trial.to_str().unwrap(),
            "--out",
            py.to_str().unwrap(),
            "--timeout",
            "300",
        ])
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .expect("run dump.py");
    check(o, "dump.py");
    let rs = dir.path().join("rs.json");
    let doc = dump_trial(trial.to_str().unwrap(), &DumpOptions::default());
    std::fs::write(&rs, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let o = Command::new(peer_python())
        .arg(peer_dir().join("compare_dumps.py"))
        .args([&py, &rs])
        .args(
            COMMON_IGNORES
                .iter()
                .chain(ignore)
                .flat_map(|g| ["--ignore", g]),
        )
        .output()
        .expect("run compare_dumps.py");
    check(o, &format!("compare_dumps.py on the {scenario} demo trial"));
}

/// Differences of the two readers' *computed* values, not of the trial (which both read
/// alike): an `l2` computed on the fly differs from numpy's in its last bits (the values are
/// still compared, with compare_dumps' tolerance; the hook suite names the same
/// difference), and `tensor_names(mode=PREDICT)` on a trial without PREDICT steps is a
/// `KeyError` in smdebug but an empty list in smdebug-trial.
const COMMON_IGNORES: &[&str] = &[
    "*/reduction_value*/l2/sha256",
    "*/reduction_value*/abs_l2/sha256",
    "/trial/tensor_names_by_mode/PREDICT",
];

/// The healthy demo: weights, biases, gradients, ReLU inputs/outputs, losses and scalars in
/// TRAIN and EVAL steps.
#[test]
fn healthy_demo_trial_reads_the_same_in_python_and_rust() {
    python_reads_like_rust("healthy", "60", &[]);
}

/// The exploding demo: NaN and ±Inf values and reductions.
#[test]
fn exploding_demo_trial_reads_the_same_in_python_and_rust() {
    // numpy's min/max of a NaN loss is a NaN with other payload bits than ours: the
    // values (NaN) are compared, their digests are not.
    python_reads_like_rust(
        "exploding",
        "30",
        &[
            "*/reduction_value/min/sha256",
            "*/reduction_value/max/sha256",
        ],
    );
}
