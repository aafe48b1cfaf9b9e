//! Arbitrary recipes: their JSON form parses back to the same recipe, and writing them never
//! panics (a recipe the hook refuses gives an error).

use proptest::prelude::*;
use smdebug_config::{Collection, Mode, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_hook::ReductionShape;
use smdebug_record::DType;
use smdebug_synth::{
    write_trial, Pattern, Phase, Recipe, RecipeNumber, SynthError, TensorSpec, WriteOptions,
};

fn number() -> impl Strategy<Value = RecipeNumber> {
    prop_oneof![
        (-1000i128..1000).prop_map(RecipeNumber::Int),
        any::<i64>().prop_map(|i| RecipeNumber::Int(i.into())),
        (-1e6f64..1e6).prop_map(RecipeNumber::Float),
        prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.5])
            .prop_map(RecipeNumber::Float),
    ]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(Mode::ALL.to_vec())
}

fn save_config_mode() -> impl Strategy<Value = SaveConfigMode> {
    (
        0i64..4,
        0i64..3,
        prop::option::of(0i64..6),
        prop::collection::vec(0i64..6, 0..3),
    )
        .prop_map(
            |(save_interval, start_step, end_step, save_steps)| SaveConfigMode {
                save_interval,
                start_step,
                end_step,
                save_steps,
            },
        )
}

fn save_config() -> impl Strategy<Value = SaveConfig> {
    prop_oneof![
        3 => save_config_mode().prop_map(SaveConfig::new),
        1 => prop::collection::vec((mode(), prop::option::of(save_config_mode())), 1..4)
            .prop_map(SaveConfig::from_modes),
    ]
}

fn reduction_config() -> impl Strategy<Value = ReductionConfig> {
    let reds = prop::collection::vec(
        prop::sample::select(ReductionConfig::ALLOWED_REDUCTIONS.to_vec()),
        0..3,
    );
    let norms = prop::collection::vec(
        prop::sample::select(ReductionConfig::ALLOWED_NORMS.to_vec()),
        0..2,
    );
    (
        reds.clone(),
        reds,
        norms.clone(),
        norms,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(reductions, abs_reductions, norms, abs_norms, save_raw_tensor, save_shape)| {
                ReductionConfig {
                    reductions,
                    abs_reductions,
                    norms,
                    abs_norms,
                    save_raw_tensor,
                    save_shape,
                    ..Default::default()
                }
            },
        )
}

fn collection(name: String) -> impl Strategy<Value = Collection> {
    (
        prop::collection::vec(
            prop::sample::select(vec!["^t", "1$", ".*", ".*", "x|y"]),
            1..3,
        ),
        prop::collection::vec("t[0-3]", 0..2),
        prop::option::of(save_config()),
        prop::option::of(reduction_config()),
        any::<bool>(),
    )
        .prop_map(move |(regexes, names, sc, rc, hist)| {
            let mut c = Collection::new(name.clone());
            for r in regexes {
                c.include(r).unwrap();
            }
            for n in names {
                c.add_tensor_name(n);
            }
            c.save_config = sc;
            c.reduction_config = rc;
            c.save_histogram = hist;
            c
        })
}

fn tensor(i: usize) -> impl Strategy<Value = TensorSpec> {
    (
        prop::collection::vec(0usize..4, 0..3),
        prop::sample::select(DType::ALL.to_vec()),
        prop::sample::select(vec![Pattern::Random, Pattern::Step, Pattern::Const]),
        prop::option::of((number(), number())),
        number(),
        prop::collection::vec((0usize..8, number()), 0..3),
        prop::collection::vec(prop::sample::select(vec!["c0", "c1", "c1", "extra"]), 0..2),
        (
            prop::option::weighted(0.2, prop::collection::vec(0usize..3, 0..3)),
            prop::option::weighted(0.2, prop::collection::vec(mode(), 0..3)),
            prop::collection::vec(0i64..6, 0..2),
            prop::option::weighted(0.2, prop::collection::vec(0i64..6, 0..3)),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            move |(shape, dtype, pattern, range, constant, inject, colls, rest)| {
                let (workers, modes, skip_steps, only_steps, write_empty_raw, duplicate) = rest;
                TensorSpec {
                    name: format!("t{i}"),
                    // smdebug writes only 1-d string tensors.
                    shape: if dtype == DType::Str {
                        vec![shape.len()]
                    } else {
                        shape
                    },
                    dtype,
                    pattern,
                    range,
                    constant: (pattern == Pattern::Const).then_some(constant),
                    inject,
                    collections: colls.into_iter().map(String::from).collect(),
                    workers,
                    modes,
                    skip_steps,
                    only_steps,
                    write_empty_raw,
                    duplicate,
                }
            },
        )
}

fn recipe() -> impl Strategy<Value = Recipe> {
    (
        (
            any::<u64>(),
            1usize..3,
            -2i64..3,
            any::<bool>(),
            any::<bool>(),
        ),
        prop::collection::vec(
            (mode(), 1u64..4).prop_map(|(mode, steps)| Phase { mode, steps }),
            1..3,
        ),
        save_config(),
        reduction_config(),
        (0usize..3).prop_flat_map(|n| {
            (0..n)
                .map(|i| collection(format!("c{i}")))
                .collect::<Vec<_>>()
        }),
        (1usize..4).prop_flat_map(|n| (0..n).map(tensor).collect::<Vec<_>>()),
        prop::option::of((0f64..2e9, 0f64..10.0)),
        prop::collection::btree_map(0usize..2, prop::collection::vec(0i64..6, 0..2), 0..2),
    )
        .prop_map(
            |(
                (seed, workers, init_step, ended, one_d),
                schedule,
                sc,
                rc,
                colls,
                tensors,
                wall,
                skip,
            )| {
                let mut r = Recipe {
                    description: "proptest".into(),
                    seed,
                    worker_names: (0..workers).map(|i| format!("worker_{i}")).collect(),
                    num_workers_meta: workers as i64,
                    collections_written_by: (0..workers).collect(),
                    init_step,
                    schedule,
                    default_save_config: sc,
                    default_reduction_config: rc,
                    collections: colls,
                    tensors,
                    worker_skip_steps: skip,
                    training_ended: ended,
                    reduction_shape: if one_d {
                        ReductionShape::OneElement
                    } else {
                        ReductionShape::Scalar
                    },
                    wall_time: wall,
                };
                // Normalization creates the collections tensors name; do it here so that
                // the generated recipe is already normal.
                for t in &r.tensors {
                    for c in &t.collections {
                        if !r.collections.iter().any(|x| &x.name == c) {
                            r.collections.push(Collection::new(c.clone()));
                        }
                    }
                }
                r
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn json_form_parses_back_to_the_same_recipe(r in recipe()) {
        let text = r.to_json();
        let back = Recipe::from_json(&text, "proptest").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(back.to_json(), text);
    }

    #[test]
    fn arbitrary_recipes_write_or_fail_with_an_error(r in recipe()) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("trial");
        match write_trial(&r, out.to_str().unwrap(), WriteOptions::default()) {
            Ok(_) => {}
            // A zero save interval, NaN in an integer tensor, an empty range...: refused
            // with a message, never a panic.
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        for t in 0..r.tensors.len() {
            if let Err(e) = r.values(t, 3, 1) {
                prop_assert!(matches!(e, SynthError::Value { .. }), "{}", e);
            }
        }
    }
}

#[test]
fn every_key_of_a_preset_survives_the_round_trip() {
    let presets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    let mut seen = 0;
    for entry in std::fs::read_dir(&presets).unwrap() {
        let path = entry.unwrap().path();
        let r = Recipe::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let back = Recipe::from_json(&r.to_json(), "again").unwrap();
        assert_eq!(back, r, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} presets in {}", presets.display());
}
