//! The rule invoker against smdebug's own `invoke_rule` (tests/peer/rules_invoke.py runs it
//! with a small rule), on trials written by the Rust hook; and a live rule over the S3 test
//! server.

use smdebug_conformance::{require_s3_server, run_peer_json, tempdir};
use smdebug_hook::{HookBuilder, SaveConfig, SaveConfigMode};
use smdebug_record::TensorValue;
use smdebug_rules::{build_rule, invoke_rule, invoke_rule_with, EndReason, StopTraining};
use smdebug_trial::{PollPolicy, Trial, TrialOptions};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Writes steps 0..10 saving every 2nd (so odd steps are unavailable), with NaN in
/// `gradient/a` at `nan_steps`, and closes (end marker).
fn write_trial(out: &str, nan_steps: &[i64]) {
    let mut hook = HookBuilder::new(out)
        .include_collections(["gradients"])
        .save_config(SaveConfig::new(SaveConfigMode::every(2)))
        .build()
        .unwrap();
    for step in 0..10i64 {
        hook.step().unwrap();
        let x = if nan_steps.contains(&step) {
            f32::NAN
        } else {
            0.5
        };
        for name in ["gradient/a", "gradient/b"] {
            let g = ndarray::arr1(&[x, 1.0f32]).into_dyn();
            hook.save(name, TensorValue::from(g)).unwrap();
        }
    }
    hook.close().unwrap();
}

fn rust_side(out: &str, start: i64, end: Option<i64>) -> (Vec<i64>, u64, &'static str) {
    let trial = Arc::new(smdebug_trial::create_trial(out).unwrap());
    let params: BTreeMap<String, String> = [
        ("tensor_regex".to_string(), "^gradient/".to_string()),
        ("only_nan".to_string(), "True".to_string()),
    ]
    .into();
    let mut rule = build_rule("ExplodingTensor", &params, trial).unwrap();
    let eval = invoke_rule(rule.as_mut(), start, end, false).unwrap();
    let end = match eval.end {
        EndReason::EndStep => "end_step",
        EndReason::EndOfTraining(_) => "no_more_data",
        EndReason::EndOfRule => "end_of_rule",
    };
    (
        eval.firings.iter().map(|f| f.step).collect(),
        eval.steps_evaluated,
        end,
    )
}

#[test]
fn invoker_matches_smdebug_invoke_rule() {
    let dir = tempdir();
    let out = dir.path().join("trial");
    let out_s = out.to_str().unwrap();
    write_trial(out_s, &[2, 6]);
    for (start, end) in [
        (0, None),
        (0, Some(5)),
        (3, None),
        (3, Some(7)),
        (7, Some(9)),
        (20, None),
    ] {
        let end_arg = end.map_or("none".to_string(), |e: i64| e.to_string());
        let py = run_peer_json(
            "rules_invoke.py",
            &[out_s, &start.to_string(), &end_arg, "0", "^gradient/"],
        );
        let (fired, evaluated, how) = rust_side(out_s, start, end);
        let py_fired: Vec<i64> = serde_json::from_value(py["fired"].clone()).unwrap();
        let py_evaluated: Vec<i64> = serde_json::from_value(py["evaluated"].clone()).unwrap();
        assert_eq!(fired, py_fired, "firings over [{start}, {end:?})");
        assert_eq!(
            evaluated as usize,
            py_evaluated.len(),
            "evaluated over [{start}, {end:?}): python {py_evaluated:?}"
        );
        assert_eq!(
            how,
            py["end"].as_str().unwrap(),
            "end over [{start}, {end:?})"
        );
    }
    // raise_eval_cond: both stop at the first firing.
    let py = run_peer_json("rules_invoke.py", &[out_s, "3", "none", "1", "^gradient/"]);
    let trial = Arc::new(smdebug_trial::create_trial(out_s).unwrap());
    let mut rule = build_rule(
        "ExplodingTensor",
        &[("only_nan".to_string(), "True".to_string())].into(),
        trial,
    )
    .unwrap();
    let e = invoke_rule(rule.as_mut(), 3, None, true).unwrap_err();
    assert_eq!(py["end"], "raised");
    assert_eq!(Some(e.firing().unwrap().step), py["raised_step"].as_i64());
}

#[test]
fn live_rule_over_s3_fires_and_stops_the_writer() {
    let (_endpoint, bucket) = require_s3_server();
    let url = format!(
        "s3://{bucket}/rules-conformance/{}-{}/live",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    const VANISH: i64 = 5;
    let landed: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let (landed_w, url_w) = (landed.clone(), url.clone());
    let writer = std::thread::spawn(move || {
        let mut hook = HookBuilder::new(url_w)
            .include_collections(["gradients"])
            .save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .stop_check_interval(Duration::ZERO)
            .build()
            .unwrap();
        let mut last = -1;
        for step in 0..100i64 {
            if hook.should_stop() {
                break;
            }
            if step == VANISH + 1 {
                *landed_w.lock().unwrap() = Some(Instant::now());
            }
            hook.step().unwrap();
            last = step;
            let m = if step >= VANISH { 1e-9f32 } else { 1e-2 };
            let g = ndarray::Array1::<f32>::from_shape_fn(64, |i| if i % 2 == 0 { m } else { -m });
            hook.save("gradient/fc.weight", TensorValue::from(g.into_dyn()))
                .unwrap();
            hook.flush().unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        hook.close().unwrap();
        last
    });
    let options = TrialOptions {
        poll: PollPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(20),
        },
        ..TrialOptions::default()
    };
    let trial = Arc::new(Trial::open(&url, options).unwrap());
    let mut rule = build_rule("VanishingGradient", &BTreeMap::new(), trial).unwrap();
    rule.base_mut()
        .add_action(Box::new(StopTraining::with_default_key().unwrap()));
    let mut verdict = None;
    invoke_rule_with(rule.as_mut(), 0, None, false, &mut |f| {
        verdict.get_or_insert((f.step, Instant::now()));
    })
    .unwrap();
    let last = writer.join().unwrap();
    let (step, at) = verdict.expect("the rule fired");
    let latency = at.saturating_duration_since(landed.lock().unwrap().unwrap());
    println!("live S3 trial: fired at step {step}, {latency:?} after the step landed; writer stopped after step {last}");
    assert_eq!(step, VANISH);
    assert!(latency < Duration::from_secs(1), "latency {latency:?}");
    assert!(
        last > VANISH && last <= VANISH + 10,
        "writer stopped after step {last}"
    );
}
