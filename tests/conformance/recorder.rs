//! The flight recorder against the real smdebug: save_interval 100, a NaN injected at step
//! 437 → the trial holds steps 427..437 in full, smdebug 1.0.34 reads them, `smdebug
//! health` names step 437 and the tensor, and the manifest says "non-finite". The same
//! with a rule firing in another process (`smdebug rules --stop-training`), locally and on
//! the S3 test server: the recorder sees the signal and writes the steps before it.

use ndarray::Array1;
use smdebug_conformance::{require_s3_server, run_peer_json, smdebug_bin, tempdir};
use smdebug_hook::{FlightRecorder, HookBuilder, SaveConfig, SaveConfigMode, TensorValue};
use smdebug_storage::{BlockingStore, Location};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn weights(step: i64, nan: bool) -> TensorValue {
    let mut v = Array1::from_iter((0..256).map(|i| ((step * 7 + i) % 97) as f32 * 1e-2 - 0.4));
    if nan {
        v[100] = f32::NAN;
    }
    TensorValue::from(v.into_dyn())
}

fn bias(step: i64, zero_from: i64) -> TensorValue {
    let v = if step >= zero_from {
        Array1::<f32>::zeros(16)
    } else {
        Array1::from_iter((0..16).map(|i| (i + 1) as f32 * 0.1))
    };
    TensorValue::from(v.into_dyn())
}

fn manifest(store: &BlockingStore) -> Option<serde_json::Value> {
    let bytes = store.get("flight_recorder/worker_0_manifest.json").ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[test]
fn a_nan_at_step_437_is_recorded_read_by_smdebug_and_named_by_health() {
    let dir = tempdir();
    let t = dir.path().join("t");
    // Built before the clock starts: the wall time measured is the verdict's.
    let bin = smdebug_bin();
    let mut h = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(100)))
        .include_regex(["^fc"])
        .flight_recorder(FlightRecorder::default())
        .build()
        .unwrap();
    for step in 0..440 {
        h.step().unwrap();
        h.save("fc.weight", weights(step, step >= 437)).unwrap();
        h.save("fc.bias", bias(step, i64::MAX)).unwrap();
    }
    h.close().unwrap();
    let closed = Instant::now();
    let o = Command::new(bin)
        .args(["health", "--json"])
        .arg(&t)
        .output()
        .unwrap();
    let verdict_after = closed.elapsed();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &r["first_non_finite"];
    assert_eq!(
        (f["step"].as_i64(), f["tensor"].as_str()),
        (Some(437), Some("fc.weight")),
        "{r}"
    );
    assert_eq!(f["summary"]["nan"], 1, "{r}");
    eprintln!("health verdict {verdict_after:?} after close (detection latency 0 steps)");

    let py = run_peer_json("recorder_read.py", &[t.to_str().unwrap()]);
    let mut want: Vec<i64> = vec![0, 100, 200, 300, 400];
    want.extend(427..=437);
    let steps: Vec<i64> = serde_json::from_value(py["steps"].clone()).unwrap();
    assert_eq!(steps, want, "{py}");
    for name in ["fc.weight", "fc.bias"] {
        let s: Vec<i64> = serde_json::from_value(py["tensors"][name]["steps"].clone()).unwrap();
        assert_eq!(s, want, "{name}: {py}");
    }
    assert_eq!(
        py["tensors"]["fc.weight"]["non_finite_steps"],
        serde_json::json!([437])
    );
    let store = BlockingStore::open(&Location::parse(t.to_str().unwrap()).unwrap()).unwrap();
    let m = manifest(&store).expect("manifest");
    assert_eq!(m["recordings"][0]["trigger"], "non-finite", "{m}");
    assert_eq!(
        m["recordings"][0]["steps"],
        serde_json::json!((427..=437).collect::<Vec<i64>>())
    );
}

/// Trains until the recorder has written (or 3000 steps), with `smdebug rules` watching
/// the trial live in another process; the rule fires at step 300 (the bias is all zero from
/// then on) and writes the stop signal, which the recorder watches.
fn rule_from_another_process(trial: &str) {
    let mut h = HookBuilder::new(trial)
        .save_config(SaveConfig::new(SaveConfigMode::every(100)))
        .include_regex(["^fc"])
        .flight_recorder(FlightRecorder {
            steps: 5,
            signal_interval: Duration::from_millis(10),
            ..Default::default()
        })
        .build()
        .unwrap();
    let store = BlockingStore::open(&Location::parse(trial).unwrap()).unwrap();
    let mut rules = None;
    let mut fired_at = None;
    for step in 0..3000 {
        h.step().unwrap();
        h.save("fc.weight", weights(step, false)).unwrap();
        h.save("fc.bias", bias(step, 300)).unwrap();
        if step == 1 {
            h.flush().unwrap();
            rules = Some(
                Command::new(smdebug_bin())
                    .args([
                        "rules",
                        trial,
                        "--rule",
                        "AllZero:tensor_regex=fc.bias",
                        "--stop-training",
                    ])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
        if step % 20 == 0 {
            h.flush().unwrap();
            if manifest(&store).is_some() {
                fired_at = Some(step);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    h.close().unwrap();
    let out = rules.unwrap().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the rule must fire: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        fired_at.is_some(),
        "the recorder never wrote; rules said {stdout}"
    );
    let m = manifest(&store).unwrap();
    let rec = &m["recordings"][0];
    assert_eq!(rec["trigger"], "signal", "{m}");
    assert_eq!(rec["signal"], "stop_training.smd", "{m}");
    let s = rec["step"].as_i64().unwrap();
    assert!(s > 300, "{m}");
    // The trigger step itself is written whole whether the save config saves it or not (a
    // step it saves is then only completed by the recorder); the steps before it that the
    // save config wrote are left as they are.
    let written: Vec<i64> = serde_json::from_value(rec["steps"].clone()).unwrap();
    let expect: Vec<i64> = (s - 5..s).filter(|x| x % 100 != 0).chain([s]).collect();
    assert_eq!(written, expect, "{m}");
    let already: Vec<i64> = serde_json::from_value(rec["steps_already_saved"].clone()).unwrap();
    let expect: Vec<i64> = (s - 5..s).filter(|x| x % 100 == 0).collect();
    assert_eq!(already, expect, "{m}");
    assert_eq!(rec["mode"], "GLOBAL", "{m}");
    assert_eq!(rec["mode_step"], s, "{m}");
    // The real smdebug reads them as ordinary steps.
    let py = run_peer_json("recorder_read.py", &[trial]);
    let steps: Vec<i64> = serde_json::from_value(py["steps"].clone()).unwrap();
    for w in &written {
        assert!(steps.contains(w), "step {w} not read by smdebug: {py}");
    }
}

#[test]
fn a_rule_in_another_process_fires_the_recorder_locally() {
    let dir = tempdir();
    rule_from_another_process(dir.path().join("t").to_str().unwrap());
}

#[test]
fn a_rule_in_another_process_fires_the_recorder_on_s3() {
    let (_endpoint, bucket) = require_s3_server();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    rule_from_another_process(&format!("s3://{bucket}/recorder-{nanos}"));
}
