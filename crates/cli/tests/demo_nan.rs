//! `smdebug demo --scenario nan-at-step`: the flight recorder (on by default in the demo)
//! keeps the steps before the NaN in full, its manifest says "non-finite", and `smdebug
//! health` names TRAIN step 137.

use std::process::Command;

#[test]
fn the_recorder_keeps_the_steps_before_the_nan_and_health_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args([
            "demo",
            "--scenario",
            "nan-at-step",
            "--steps",
            "145",
            "--json",
            "--out",
        ])
        .arg(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let firings = String::from_utf8_lossy(&o.stdout);
    assert!(firings.contains("ExplodingTensor"), "{firings}");

    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(t.join("flight_recorder/worker_0_manifest.json")).unwrap(),
    )
    .unwrap();
    let rec = &m["recordings"][0];
    assert_eq!(rec["trigger"], "non-finite", "{m}");
    assert_eq!(
        (rec["mode"].as_str(), rec["mode_step"].as_i64()),
        (Some("TRAIN"), Some(137))
    );
    let step = rec["step"].as_i64().unwrap();
    // Steps S-10..S: in full, or already saved by the save config (every 5 TRAIN steps).
    let mut covered: Vec<i64> = serde_json::from_value(rec["steps"].clone()).unwrap();
    covered.extend(serde_json::from_value::<Vec<i64>>(rec["steps_already_saved"].clone()).unwrap());
    covered.sort();
    assert_eq!(covered, (step - 10..=step).collect::<Vec<_>>(), "{m}");

    let o = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .args(["health", "--json"])
        .arg(&t)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &r["first_non_finite"];
    assert_eq!(
        (f["mode"].as_str(), f["mode_step"].as_i64()),
        (Some("TRAIN"), Some(137)),
        "{r}"
    );
    assert_eq!(f["step"].as_i64(), Some(step), "{r}");
    // The NaN enters through the first layer's input.
    assert_eq!(f["tensor"], "layer1.relu_input_0", "{r}");
}
