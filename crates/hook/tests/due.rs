//! `Hook::anything_due`: the one answer per step a framework hook asks before offering any
//! tensor. It must be yes whenever `should_save` can be yes for some name at that step
//! (else the framework hook would skip a tensor that is due), and no otherwise.

use smdebug_config::{IncludeWorkers, Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{FlightRecorder, Hook, HookBuilder};

/// A tensor name of each collection of the PyTorch hook saved below.
const NAMES: [&str; 3] = [
    "Net_fc.weight",
    "gradient/Net_fc.weight",
    "CrossEntropyLoss_output_0",
];

fn builder(dir: &tempfile::TempDir) -> HookBuilder {
    HookBuilder::new(dir.path().join("t").to_str().unwrap()).include_collections([
        "weights",
        "gradients",
        "losses",
    ])
}

/// Whether `should_save` says yes for one of [`NAMES`].
fn some_name_due(h: &mut Hook) -> bool {
    NAMES.iter().any(|n| h.should_save(n).unwrap())
}

fn steps(cfg: SaveConfigMode) -> SaveConfig {
    SaveConfig::new(cfg)
}

#[test]
fn due_when_any_collection_is_due_under_its_own_save_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = builder(&dir).build().unwrap();
    h.get_collection("weights").save_config = Some(steps(SaveConfigMode::every(3)));
    h.get_collection("gradients").save_config = Some(steps(SaveConfigMode {
        save_steps: vec![4],
        ..SaveConfigMode::every(1000)
    }));
    h.get_collection("losses").save_config = Some(steps(SaveConfigMode::every(5)));
    assert!(!h.anything_due(), "before the first step");
    let mut due = Vec::new();
    for s in 0..16 {
        h.step().unwrap();
        assert_eq!(h.anything_due(), some_name_due(&mut h), "step {s}");
        if h.anything_due() {
            due.push(s);
        }
    }
    // 1000 is a multiple of nothing here but 0: gradients are due at 0 and 4 only.
    assert_eq!(due, [0, 3, 4, 5, 6, 9, 10, 12, 15]);
    h.close().unwrap();
}

#[test]
fn save_all_is_due_at_the_hooks_interval() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = HookBuilder::new(dir.path().join("t").to_str().unwrap())
        .save_all(true)
        .save_config(steps(SaveConfigMode::every(4)))
        .build()
        .unwrap();
    for s in 0..9 {
        h.step().unwrap();
        assert_eq!(h.anything_due(), s % 4 == 0, "step {s}");
        assert_eq!(h.anything_due(), h.should_save("any_name_at_all").unwrap());
    }
    h.close().unwrap();
}

#[test]
fn the_step_keeps_the_answer_of_the_mode_it_began_in() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = HookBuilder::new(dir.path().join("t").to_str().unwrap())
        .include_collections(["gradients"])
        .save_config(steps(SaveConfigMode::every(1)))
        .build()
        .unwrap();
    // Losses (always saved by the PyTorch hook) are kept out of the way.
    h.get_collection("losses").save_config = Some(steps(SaveConfigMode {
        start_step: 1000,
        ..SaveConfigMode::every(1)
    }));
    h.set_mode(Mode::Train);
    h.step().unwrap();
    assert!(h.anything_due());
    // A switch to EVAL during a TRAIN step counts from the next step on.
    h.set_mode(Mode::Eval);
    assert!(h.anything_due() && some_name_due(&mut h));
    // Gradients are never saved in EVAL: nothing is due.
    h.step().unwrap();
    assert!(!h.anything_due() && !some_name_due(&mut h));
    h.set_mode(Mode::Train);
    h.step().unwrap();
    assert!(h.anything_due());
    h.close().unwrap();
}

#[test]
fn a_worker_that_writes_nothing_has_nothing_due() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = builder(&dir)
        .save_config(steps(SaveConfigMode::every(1)))
        .worker("worker_1", 2)
        .include_workers(IncludeWorkers::One)
        .build()
        .unwrap();
    for _ in 0..3 {
        h.step().unwrap();
        assert!(!h.anything_due() && !some_name_due(&mut h));
    }
    h.close().unwrap();
}

#[test]
fn the_flight_recorder_makes_every_step_due() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = builder(&dir)
        .save_config(steps(SaveConfigMode::every(100)))
        .flight_recorder(FlightRecorder::default())
        .build()
        .unwrap();
    assert!(!h.anything_due(), "before the first step");
    for s in 0..5 {
        h.step().unwrap();
        // Recorded at every step though the save config saves only step 0.
        assert!(h.anything_due() && some_name_due(&mut h), "step {s}");
    }
    h.close().unwrap();
}
