//! `health`: the first non-finite value, and the report's JSON form.

use crate::support::{s, trial};
use smdebug_diagnose::{health, HealthOptions, Source};
use smdebug_trial::{Mode, TrialOptions};

fn open(t: &std::path::Path) -> smdebug_trial::Trial {
    smdebug_trial::Trial::open(s(t), TrialOptions::default()).unwrap()
}

#[test]
fn a_finite_trial_has_no_first_non_finite() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    let r = health(&open(&t), &HealthOptions::default()).unwrap();
    assert_eq!(r.first_non_finite, None);
    assert_eq!((r.tensors, r.records_read), (2, 16));
    let v = serde_json::to_value(&r).unwrap();
    // The keys `smdebug health --json` prints for a finite trial, no more.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["first_non_finite", "records_read", "tensors", "trial"]
    );
}

#[test]
fn the_first_nan_is_named_with_a_timeline() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), Some(5));
    let options = HealthOptions {
        context: 2,
        ..HealthOptions::default()
    };
    let r = health(&open(&t), &options).unwrap();
    let f = r.first_non_finite.as_ref().unwrap();
    assert_eq!(
        (f.step, f.mode, f.worker.as_str(), f.tensor.as_str()),
        (5, Mode::Global, "worker_0", "gradient/fc.weight")
    );
    assert_eq!((f.summary.source, f.summary.nan), (Source::Raw, 1));
    assert_eq!(f.also_non_finite_at_step, Vec::<String>::new());
    let tl = r.timeline.as_ref().unwrap();
    let steps: Vec<i64> = tl[0].steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, [3, 4, 5, 6, 7]);
    // A NaN l2 is written as the string "NaN": JSON has no NaN.
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["first_non_finite"]["summary"]["l2"], "NaN", "{v}");
    assert_eq!(v["first_non_finite"]["summary"]["source"], "raw value");
    assert_eq!(v["first_non_finite"]["mode"], "GLOBAL");
    assert_eq!(v["timeline"][0]["steps"][0]["step"], 3, "{v}");
    assert!(v["first_grew"].is_array(), "{v}");
}
