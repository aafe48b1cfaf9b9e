//! Property tests of steps and modes: for random save configs and mode schedules, the steps
//! the hook writes (index files with their mode and mode step) are exactly those an
//! independent model of smdebug's step counting and `should_save_step` predicts; and for
//! every short sequence of `set_mode`, saves and steps, every index file and event record
//! carries the mode and mode step its step ran in.

use ndarray::arr0;
use proptest::prelude::*;
use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use smdebug_index::{index_file_key, IndexFile};
use smdebug_record::{decode_record_at, decode_tensor_event};

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Train),
        Just(Mode::Eval),
        Just(Mode::Predict),
        Just(Mode::Global)
    ]
}

/// smdebug's rule, written out independently of smdebug-config.
fn model_should_save(interval: i64, start: i64, end: Option<i64>, steps: &[i64], s: i64) -> bool {
    steps.contains(&s) || (start <= s && end.is_none_or(|e| s < e) && s.rem_euclid(interval) == 0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn written_steps_match_the_model(
        interval in 1i64..5,
        start in 0i64..4,
        end in proptest::option::of(2i64..12),
        save_steps in proptest::collection::vec(0i64..10, 0..3),
        schedule in proptest::collection::vec((mode_strategy(), 0usize..5), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let cfg = SaveConfigMode { save_interval: interval, start_step: start, end_step: end, save_steps: save_steps.clone() };
        let mut hook = HookBuilder::new(t.to_str().unwrap())
            .save_config(SaveConfig::new(cfg))
            .build()
            .unwrap();

        // The model: global step and per-mode counters starting at init_step -1.
        let mut expected = Vec::new();
        let mut g = -1i64;
        let mut counters: Vec<(Mode, i64)> = vec![(Mode::Global, -1)];
        let mut mode = Mode::Global;
        for (m, n) in &schedule {
            hook.set_mode(*m);
            mode = *m;
            if !counters.iter().any(|(k, _)| *k == mode) {
                counters.push((mode, -1));
            }
            for _ in 0..*n {
                hook.step().unwrap();
                g += 1;
                let c = counters.iter_mut().find(|(k, _)| *k == mode).unwrap();
                c.1 += 1;
                let ms = c.1;
                if mode != Mode::Global {
                    counters.iter_mut().find(|(k, _)| *k == Mode::Global).unwrap().1 = g;
                }
                let ms = if mode == Mode::Global { g } else { ms };
                prop_assert_eq!((hook.global_step(), hook.mode_step()), (g, ms));
                hook.save("CrossEntropyLoss_output_0", TensorValue::from(arr0(1.0f32).into_dyn())).unwrap();
                let due = model_should_save(interval, start, end, &save_steps, ms);
                prop_assert_eq!(hook.anything_due(), due);
                if due {
                    expected.push((g, mode, ms));
                }
            }
        }
        let _ = mode;
        hook.close().unwrap();
        let mut written = Vec::new();
        for step in 0..=g.max(0) {
            let key = index_file_key(step, "worker_0").unwrap();
            if let Ok(bytes) = std::fs::read(t.join(&key)) {
                let idx = IndexFile::parse(&key, &bytes).unwrap();
                written.push((step, idx.meta.mode, idx.meta.mode_step));
            }
        }
        prop_assert_eq!(written, expected);
    }
}

/// One call of a training loop, as the exhaustive test below drives them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Call {
    /// `set_mode`, alternating TRAIN, EVAL, TRAIN, … (the first call enters TRAIN).
    SetMode,
    /// `save` of a tensor every collection saves.
    Save,
    /// `save_tensor` (written when the step ends).
    SaveTensor,
    /// `save_scalar` (cached, written when a saving step ends).
    SaveScalar,
    /// `step`.
    Step,
}

const CALLS: [Call; 5] = [
    Call::SetMode,
    Call::Save,
    Call::SaveTensor,
    Call::SaveScalar,
    Call::Step,
];

/// Runs `calls` (then `close`) on a hook saving everything at every step and checks every
/// index file and event record written: its mode and mode step are the ones the step was
/// saved in (the mode and mode step in force when the step began, since `set_mode` counts
/// from the next step on), never negative, and each value lands in the step it was given
/// in (a `save_tensor` value given before the first step in the first step).
fn check_calls(calls: &[Call]) {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .include_regex(["^w"])
        .build()
        .unwrap();
    // The model: the mode and per-mode counters as smdebug counts them (init_step −1),
    // the (mode, mode step) each global step ran in, and where each value must land.
    let mut next_mode = Mode::Train;
    let mut mode = Mode::Global;
    let mut counters = vec![(Mode::Global, -1i64)];
    let mut g = -1i64;
    let mut stamps: Vec<(Mode, i64)> = Vec::new();
    let mut due: Vec<(String, i64)> = Vec::new();
    let mut pending_scalars: Vec<String> = Vec::new();
    let mut early_custom: Vec<String> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let name = format!("w{i}");
        match call {
            Call::SetMode => {
                hook.set_mode(next_mode);
                mode = next_mode;
                next_mode = if next_mode == Mode::Train {
                    Mode::Eval
                } else {
                    Mode::Train
                };
                if !counters.iter().any(|(m, _)| *m == mode) {
                    counters.push((mode, -1));
                }
            }
            Call::Save => {
                let saved = hook.save(&name, TensorValue::from(arr0(i as f32).into_dyn()));
                assert_eq!(saved.is_ok(), g >= 0, "{calls:?}: save at step {g}");
                if g >= 0 {
                    due.push((name, g));
                }
            }
            Call::SaveTensor => {
                hook.save_tensor(
                    &name,
                    TensorValue::from(arr0(i as f32).into_dyn()),
                    "custom",
                );
                // One given before the first step belongs to the first step.
                if g >= 0 {
                    due.push((name, g));
                } else {
                    early_custom.push(name);
                }
            }
            Call::SaveScalar => {
                hook.save_scalar(&name, i as f64, None);
                pending_scalars.push(format!("scalar/{name}"));
            }
            Call::Step => {
                // Scalars are flushed when a saving step ends: every step saves here, but
                // the steps before the first have nothing to end.
                if g >= 0 {
                    due.extend(pending_scalars.drain(..).map(|n| (n, g)));
                }
                hook.step().unwrap();
                g += 1;
                if g == 0 {
                    due.extend(early_custom.drain(..).map(|n| (n, 0)));
                }
                let c = counters.iter_mut().find(|(m, _)| *m == mode).unwrap();
                c.1 += 1;
                let ms = if mode == Mode::Global { g } else { c.1 };
                if mode != Mode::Global {
                    counters
                        .iter_mut()
                        .find(|(m, _)| *m == Mode::Global)
                        .unwrap()
                        .1 = g;
                }
                stamps.push((mode, ms));
            }
        }
    }
    if g >= 0 {
        due.extend(pending_scalars.drain(..).map(|n| (n, g)));
    }
    hook.close().unwrap();

    let mut seen: Vec<(String, i64)> = Vec::new();
    for (step, &(mode, mode_step)) in stamps.iter().enumerate() {
        let step = step as i64;
        let key = index_file_key(step, "worker_0").unwrap();
        let Ok(bytes) = std::fs::read(t.join(&key)) else {
            continue;
        };
        let idx = IndexFile::parse(&key, &bytes).unwrap();
        assert!(
            idx.meta.mode_step >= 0,
            "{calls:?}: step {step}: {:?}",
            idx.meta
        );
        assert_eq!(
            (idx.meta.mode, idx.meta.mode_step),
            (mode, mode_step),
            "{calls:?}: index file of step {step}"
        );
        let events = std::fs::read(t.join(idx.meta.event_file_name.as_deref().unwrap())).unwrap();
        for entry in &idx.tensors {
            let rec = decode_record_at(&events, entry.start_idx, entry.length).unwrap();
            let e = decode_tensor_event(rec.payload).unwrap();
            assert_eq!(
                (e.step, e.mode, e.mode_step),
                (step, mode.as_int(), mode_step),
                "{calls:?}: {} at step {step}",
                e.tag
            );
            seen.push((e.tag, step));
        }
    }
    // Nothing written for a step that never began.
    for step in stamps.len() as i64..stamps.len() as i64 + 2 {
        let key = index_file_key(step, "worker_0").unwrap();
        assert!(!t.join(key).exists(), "{calls:?}: step {step}");
    }
    seen.sort();
    due.sort();
    assert_eq!(seen, due, "{calls:?}");
}

/// Every sequence of up to five calls among `set_mode`, `save`, `save_tensor`,
/// `save_scalar` and `step` (3,906 loops, the empty one included), each closed at the end: the step a value is
/// saved in is written with the mode and mode step that step ran in, whenever its files
/// are flushed — also when `set_mode` comes between the value and the step's end.
#[test]
fn every_order_of_calls_stamps_data_with_the_mode_its_step_ran_in() {
    let mut calls = Vec::new();
    let mut stack = vec![Vec::new()];
    while let Some(seq) = stack.pop() {
        if seq.len() == 5 {
            calls.push(seq);
            continue;
        }
        calls.push(seq.clone());
        for c in CALLS {
            let mut next = seq.clone();
            next.push(c);
            stack.push(next);
        }
    }
    assert_eq!(calls.len(), 3906);
    // A hook's start and close wait on its threads more than they compute: several loops
    // at once keep the test's wall time down on two cores.
    let threads = 8;
    let chunk = calls.len().div_ceil(threads);
    std::thread::scope(|s| {
        for part in calls.chunks(chunk) {
            s.spawn(move || part.iter().for_each(|seq| check_calls(seq)));
        }
    });
}

/// The user's loop: `save_tensor` then `step` for TRAIN steps, then `set_mode(EVAL)` and
/// close: the last TRAIN step is still written as a TRAIN step.
#[test]
fn set_mode_after_the_last_step_keeps_its_mode() {
    let mut calls = vec![Call::SetMode];
    for _ in 0..4 {
        calls.extend([Call::SaveTensor, Call::SaveScalar, Call::Step]);
    }
    calls.extend([Call::SaveTensor, Call::SetMode, Call::Save]);
    check_calls(&calls);
}
