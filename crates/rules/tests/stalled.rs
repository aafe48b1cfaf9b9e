//! StalledTrainingRule with an injected clock.

use crate::support::*;
use smdebug_rules::builtin::{StalledTrainingRule, StalledTrainingRuleConfig};
use smdebug_rules::{invoke_rule, Clock, EndReason};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A clock whose `sleep` advances time and lets the "training job" write what is due.
#[derive(Clone)]
struct FakeClock {
    now: Arc<Mutex<Duration>>,
    on_advance: Arc<dyn Fn(Duration) + Send + Sync>,
}

impl std::fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FakeClock({:?})", self.now.lock().unwrap())
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap()
    }
    fn sleep(&self, d: Duration) {
        let t = {
            let mut now = self.now.lock().unwrap();
            *now += d;
            *now
        };
        (self.on_advance)(t);
    }
}

/// Steps appear at `times` (seconds); the end marker at `end` if given.
fn run(times: Vec<u64>, end: Option<u64>) -> (Vec<i64>, EndReason, Duration) {
    let w = Arc::new(TrialWriter::new());
    w.write_collections();
    w.step(0, &[("x", v(&[0.0]))]);
    let written = Arc::new(Mutex::new(1usize));
    let (w2, written2) = (w.clone(), written.clone());
    let clock = FakeClock {
        now: Arc::new(Mutex::new(Duration::ZERO)),
        on_advance: Arc::new(move |t| {
            let mut n = written2.lock().unwrap();
            while *n < times.len() && Duration::from_secs(times[*n]) <= t {
                w2.step(*n as i64, &[("x", v(&[*n as f64]))]);
                *n += 1;
            }
            if end.is_some_and(|e| Duration::from_secs(e) <= t) {
                smdebug_synth::steps::write_end_marker(&w2.store).unwrap();
            }
        }),
    };
    let now = clock.now.clone();
    let config = StalledTrainingRuleConfig {
        threshold: 60,
        ..Default::default()
    };
    let mut rule = StalledTrainingRule::with_clock(w.trial(), config, Box::new(clock)).unwrap();
    assert_eq!(rule.poll_period(), Duration::from_secs(6));
    let eval = invoke_rule(&mut rule, 0, None, false).unwrap();
    let t = *now.lock().unwrap();
    (eval.firings.iter().map(|f| f.step).collect(), eval.end, t)
}

#[test]
fn stalled_training_fires_after_threshold() {
    let (steps, end, t) = run(vec![0, 10, 20], None);
    assert_eq!(steps, [2]);
    assert_eq!(end, EndReason::EndOfRule);
    // Step 2 lands at 20 s, is seen by the poll at 24 s; more than 60 s later is 84 s+.
    assert!(
        t > Duration::from_secs(80) && t <= Duration::from_secs(80 + 2 * 6),
        "{t:?}"
    );
}

#[test]
fn stalled_training_quiet_while_steps_keep_coming() {
    let times: Vec<u64> = (0..10).map(|i| i * 30).collect();
    let (steps, end, t) = run(times, Some(300));
    assert!(steps.is_empty());
    assert_eq!(end, EndReason::EndOfRule);
    assert!(
        t >= Duration::from_secs(300) && t < Duration::from_secs(310),
        "{t:?}"
    );
}
