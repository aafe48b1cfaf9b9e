//! Property test: for random save configs and mode schedules, the steps the hook writes
//! (index files with their mode and mode step) are exactly those an independent model of
//! smdebug's step counting and `should_save_step` predicts.

use ndarray::arr0;
use proptest::prelude::*;
use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use smdebug_index::{index_file_key, IndexFile};

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
                if model_should_save(interval, start, end, &save_steps, ms) {
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
