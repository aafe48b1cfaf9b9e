//! `invoke` / `invoke_rule` behaviours (docs/src/testing.md O) and actions (P).

use crate::support::*;
use smdebug_config::Mode;
use smdebug_rules::{
    build_rule, invoke, invoke_rule, AnalysisError, EndReason, Message, MessageFormat, Result,
    Rule, RuleBase, RuleError, StopTraining,
};
use smdebug_trial::Trial;
use std::sync::{Arc, Mutex};

fn nan_trial() -> Arc<Trial> {
    let mut w = TrialWriter::new();
    w.collection("gradients", &["foo"]);
    for (s, x) in [(0, f64::NAN), (4, 1.0), (8, f64::NAN)] {
        w.step(s, &[("foo", v(&[x]))]);
    }
    w.finish()
}

#[test]
fn raise_eval_cond_returns_the_condition_with_its_step() {
    let mut r = build_rule("ExplodingTensor", &params(&[]), nan_trial()).unwrap();
    let e = invoke_rule(r.as_mut(), 1, None, true).unwrap_err();
    match e.analysis() {
        Some(AnalysisError::RuleEvaluationConditionMet {
            rule,
            step,
            end_of_rule,
        }) => {
            assert_eq!(
                (rule.as_str(), *step, *end_of_rule),
                ("ExplodingTensor", 8, false)
            );
        }
        other => panic!("{other:?}"),
    }
    let f = e.firing().unwrap();
    assert_eq!(f.tensor.as_deref(), Some("foo"));
    assert!(f.message.contains("NaN"), "{}", f.message);
}

#[test]
fn without_raise_the_loop_goes_on_skips_unsaved_steps_and_ends_with_training() {
    let mut r = build_rule("ExplodingTensor", &params(&[]), nan_trial()).unwrap();
    let eval = invoke_rule(r.as_mut(), 0, None, false).unwrap();
    let steps: Vec<i64> = eval.firings.iter().map(|f| f.step).collect();
    assert_eq!(steps, [0, 8]);
    assert_eq!(eval.steps_evaluated, 3);
    assert_eq!(eval.steps_skipped, 6, "1-3 and 5-7 were not saved");
    match &eval.end {
        EndReason::EndOfTraining(AnalysisError::NoMoreData {
            step, last_step, ..
        }) => {
            assert_eq!((*step, *last_step), (9, 8));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(eval.next_step, 9);
}

#[test]
fn end_step_is_exclusive_and_start_step_is_honoured() {
    let t = nan_trial();
    let mut r = build_rule("ExplodingTensor", &params(&[]), t.clone()).unwrap();
    let eval = invoke_rule(r.as_mut(), 0, Some(8), false).unwrap();
    assert_eq!(eval.firings.len(), 1);
    assert_eq!(eval.end, EndReason::EndStep);
    assert_eq!(eval.next_step, 8);
    let mut r = build_rule("ExplodingTensor", &params(&[]), t).unwrap();
    let eval = invoke_rule(r.as_mut(), 20, None, false).unwrap();
    assert!(eval.firings.is_empty());
    assert!(matches!(eval.end, EndReason::EndOfTraining(_)));
}

type Seen = Arc<Mutex<Vec<(i64, Vec<String>)>>>;

/// A rule that requires tensors (optionally by regex) and fires when it sees any value
/// above 0.5; records what the invoker fetched for it.
#[derive(Debug)]
struct Needs {
    base: RuleBase,
    name: String,
    regex: bool,
    seen: Seen,
}

impl Rule for Needs {
    fn base(&self) -> &RuleBase {
        &self.base
    }
    fn base_mut(&mut self) -> &mut RuleBase {
        &mut self.base
    }
    fn set_required_tensors(&mut self, step: i64) -> Result<()> {
        let name = self.name.clone();
        self.base.require(&name, &[step], 0, self.regex)
    }
    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let names: Vec<String> = self
            .base
            .required()
            .names(0)
            .iter()
            .map(|s| s.to_string())
            .collect();
        self.seen.lock().unwrap().push((step, names.clone()));
        for n in &names {
            let x = self
                .base
                .base_trial()
                .tensor(n)?
                .value(step, Mode::Global, None)?;
            if x.as_array::<f64>().unwrap().iter().any(|&v| v > 0.5) {
                self.base.note(Some(n), "above 0.5");
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[test]
fn required_tensors_unavailable_tensor_and_step() {
    let w = TrialWriter::new();
    w.step(0, &[("a_1", v(&[0.1])), ("a_2", v(&[0.2]))]);
    w.step(1, &[("a_1", v(&[0.9]))]);
    let t = w.finish();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut by_regex = Needs {
        base: RuleBase::new("Needs", t.clone(), vec![]),
        name: "^a_".into(),
        regex: true,
        seen: seen.clone(),
    };
    let eval = invoke_rule(&mut by_regex, 0, None, false).unwrap();
    // Step 1 lacks a_2: fetching the required value fails with TensorUnavailableForStep,
    // and the invoker skips the whole step, as the original.
    assert!(eval.firings.is_empty());
    assert_eq!(eval.steps_skipped, 1);
    assert_eq!(
        seen.lock().unwrap().clone(),
        [(0, vec!["a_1".to_string(), "a_2".to_string()])]
    );

    let mut missing = Needs {
        base: RuleBase::new("Needs", t.clone(), vec![]),
        name: "nope".into(),
        regex: false,
        seen: Arc::new(Mutex::new(Vec::new())),
    };
    let eval = invoke_rule(&mut missing, 0, None, false).unwrap();
    assert_eq!(
        (eval.steps_evaluated, eval.steps_skipped),
        (0, 2),
        "TensorUnavailable skips"
    );

    let mut one = Needs {
        base: RuleBase::new("Needs", t, vec![]),
        name: "a_1".into(),
        regex: false,
        seen: Arc::new(Mutex::new(Vec::new())),
    };
    // `invoke` itself reports the firing as an error, as Python raises.
    assert!(invoke(&mut one, 0).is_ok());
    let e = invoke(&mut one, 1).unwrap_err();
    assert!(matches!(e, RuleError::ConditionMet { .. }));
    assert_eq!(e.firing().unwrap().message, "above 0.5");
}

/// docs/src/testing.md 108/109: `invoke_at_step` runs with refresh off.
#[derive(Debug)]
struct LooksAhead {
    base: RuleBase,
    result: Option<std::result::Result<(), String>>,
}

impl Rule for LooksAhead {
    fn base(&self) -> &RuleBase {
        &self.base
    }
    fn base_mut(&mut self) -> &mut RuleBase {
        &mut self.base
    }
    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let t = self.base.base_trial().clone();
        self.result = Some(
            t.tensor("x")?
                .value(step + 1, Mode::Global, None)
                .map(|_| ())
                .map_err(|e| e.kind().as_str().to_owned()),
        );
        Ok(false)
    }
}

#[test]
fn invoke_at_step_runs_without_refresh() {
    let w = TrialWriter::new();
    w.write_collections();
    w.step(0, &[("x", v(&[0.0]))]);
    w.step(1, &[("x", v(&[1.0]))]);
    let t = w.trial();
    let mut r = LooksAhead {
        base: RuleBase::new("LooksAhead", t.clone(), vec![]),
        result: None,
    };
    invoke(&mut r, 0).unwrap();
    assert_eq!(
        r.result,
        Some(Ok(())),
        "step 1 was loaded before the rule ran"
    );
    w.step(2, &[("x", v(&[2.0]))]);
    // Step 2 landed after the last refresh; inside `no_refresh` the rule cannot see it.
    t.no_refresh(|_| r.invoke_at_step(1)).unwrap();
    assert_eq!(r.result, Some(Err("StepNotYetAvailable".into())));
    assert!(t.dynamic_refresh(), "refresh is switched back on");
    // A full `invoke(1)` refreshes while waiting for step 1 and then sees step 2.
    invoke(&mut r, 1).unwrap();
    assert_eq!(r.result, Some(Ok(())));
    invoke(&mut r, 2).unwrap(); // waiting for step 2 refreshes and sees it
}

#[test]
fn actions_message_and_stop_signal() {
    let t = nan_trial();
    let mut r = build_rule("ExplodingTensor", &params(&[]), t.clone()).unwrap();
    let buf: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
    #[derive(Clone)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    r.base_mut().add_action(Box::new(Message::new(
        MessageFormat::Json,
        Box::new(Shared(buf.clone())),
    )));
    let stop = StopTraining::new("signals/stop.smd".into());
    r.base_mut().add_action(Box::new(stop));
    invoke_rule(r.as_mut(), 0, Some(1), false).unwrap();
    let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(line["rule"], "ExplodingTensor");
    assert_eq!(line["step"], 0);
    assert_eq!(line["tensor"], "foo");
    let store = smdebug_storage::BlockingStore::new(t.storage().clone()).unwrap();
    let body = store.get("signals/stop.smd").unwrap();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["step"], 0);
}

#[test]
fn stop_action_from_action_json_reaches_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let out_s = out.to_str().unwrap();
    let mut hook = smdebug_hook::HookBuilder::new(out_s)
        .include_collections(["gradients"])
        .stop_check_interval(std::time::Duration::ZERO)
        .build()
        .unwrap();
    hook.step().unwrap();
    let g = smdebug_record::TensorValue::from(ndarray::arr1(&[f64::NAN, 1.0]).into_dyn());
    hook.save("gradient/fc.weight", g).unwrap();
    hook.step().unwrap();
    hook.flush().unwrap();
    assert!(!hook.should_stop());
    let trial = Arc::new(smdebug_trial::create_trial(out_s).unwrap());
    let p = params(&[(
        "action_json",
        r#"{"name": "StopTraining", "training_job_prefix": "job"}"#,
    )]);
    let mut r = build_rule("ExplodingTensor", &p, trial).unwrap();
    assert_eq!(first_fire(r.as_mut(), 0, Some(1)), Some(0));
    hook.step().unwrap();
    assert!(
        hook.should_stop(),
        "the hook sees the stop signal the rule wrote"
    );
    assert_eq!(
        hook.stop_signal_key(),
        smdebug_index::DEFAULT_STOP_SIGNAL_FILE
    );
    hook.close().unwrap();
}
