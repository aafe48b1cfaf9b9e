//! A rule evaluated while the job writes: a hook in a thread saves gradients that vanish
//! from step `VANISH` on; a rule on a live trial fires at that step, and its stop action
//! makes the writer's `should_stop()` turn true.

use smdebug_hook::{HookBuilder, SaveConfig, SaveConfigMode};
use smdebug_record::TensorValue;
use smdebug_rules::{build_rule, invoke_rule_with, EndReason, StopTraining};
use smdebug_trial::{PollPolicy, Trial, TrialOptions};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const VANISH: i64 = 6;

/// Runs the writer and the rule concurrently on `out`; returns (fired step, latency from
/// the vanishing step landing to the verdict, last step the writer started).
pub fn live_run(out: &str, step_pause: Duration) -> (i64, Duration, i64) {
    let landed: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let landed_w = landed.clone();
    let out_w = out.to_owned();
    let writer = std::thread::spawn(move || {
        let mut hook = HookBuilder::new(out_w)
            .include_collections(["gradients"])
            .save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .stop_check_interval(Duration::ZERO)
            .build()
            .unwrap();
        let mut last = -1;
        for step in 0..200i64 {
            if hook.should_stop() {
                break;
            }
            if step == VANISH + 1 {
                // This call publishes step VANISH: the earliest a reader can see it.
                *landed_w.lock().unwrap() = Some(Instant::now());
            }
            hook.step().unwrap();
            last = step;
            let m = if step >= VANISH { 1e-9f32 } else { 1e-2 };
            for layer in 0..4 {
                let g = ndarray::Array2::<f32>::from_shape_fn((8, 8), |(i, j)| {
                    if (i + j) % 2 == 0 {
                        m
                    } else {
                        -m
                    }
                });
                hook.save(
                    &format!("gradient/fc{layer}.weight"),
                    TensorValue::from(g.into_dyn()),
                )
                .unwrap();
            }
            hook.flush().unwrap();
            std::thread::sleep(step_pause);
        }
        hook.close().unwrap();
        last
    });

    let options = TrialOptions {
        poll: PollPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(5),
        },
        ..TrialOptions::default()
    };
    let trial = Arc::new(Trial::open(out, options).unwrap());
    let mut rule = build_rule("VanishingGradient", &Default::default(), trial).unwrap();
    rule.base_mut()
        .add_action(Box::new(StopTraining::with_default_key().unwrap()));
    let mut verdict: Option<(i64, Instant)> = None;
    let eval = invoke_rule_with(rule.as_mut(), 0, None, false, &mut |f| {
        verdict.get_or_insert((f.step, Instant::now()));
    })
    .unwrap();
    assert!(
        matches!(eval.end, EndReason::EndOfTraining(_)),
        "{:?}",
        eval.end
    );
    let last = writer.join().unwrap();
    let (step, at) = verdict.expect("the rule fired");
    let landed = landed.lock().unwrap().expect("the step landed");
    (step, at.saturating_duration_since(landed), last)
}

#[test]
fn live_vanishing_gradient_fires_and_stops_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live");
    let (step, latency, last) = live_run(
        out.to_str().unwrap(),
        Duration::from_millis(
            std::env::var("LIVE_PAUSE_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(40),
        ),
    );
    println!("live local trial: fired at step {step}, {latency:?} after the step landed; writer stopped after step {last}");
    assert_eq!(step, VANISH);
    assert!(latency < Duration::from_secs(1), "latency {latency:?}");
    assert!(
        last > VANISH && last < VANISH + 20,
        "writer stopped after step {last}"
    );
}
