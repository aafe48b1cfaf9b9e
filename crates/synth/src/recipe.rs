//! The recipe model: a fixture recipe (`tests/peer/presets/*.json`, the format of
//! `tests/peer/fixture.py`) normalized as `fixture.py`'s `normalize` does it. It is read in
//! `recipe_read.rs` and written back as JSON in `recipe_write.rs`.

use std::collections::BTreeMap;

use smdebug_config::{Collection, Mode, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_hook::ReductionShape;
use smdebug_record::TensorValue;

use crate::error::{Result, SynthError};
use crate::spec::{Phase, TensorSpec};
use crate::values::generate;

/// A recipe, normalized as `fixture.py` normalizes it: defaults filled in, worker names made
/// from `workers`, `tensor_templates` expanded after `tensors` (that order gives each tensor
/// its index, which seeds its values), collections named by a tensor created.
///
/// ```
/// use smdebug_synth::Recipe;
/// let r = Recipe::from_json(
///     r#"{"seed": 7, "workers": 2,
///         "tensor_templates": [{"name": "layer_{i:02d}.w", "count": 3, "shape": [4]}]}"#,
///     "inline",
/// )?;
/// assert_eq!(r.worker_names, ["worker_0", "worker_1"]);
/// assert_eq!(r.tensors[2].name, "layer_02.w");
/// // The JSON form parses back to the same recipe.
/// assert_eq!(Recipe::from_json(&r.to_json(), "again")?, r);
/// # Ok::<(), smdebug_synth::SynthError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    /// Free text.
    pub description: String,
    /// Seed of the value generator (Python masks it to 64 bits).
    pub seed: u64,
    /// Worker names; a worker's index is its position here.
    pub worker_names: Vec<String>,
    /// The `_meta.num_workers` written in the collections files.
    pub num_workers_meta: i64,
    /// Indices of the workers that write a collections file.
    pub collections_written_by: Vec<usize>,
    /// The number of the first step.
    pub init_step: i64,
    /// The mode phases, in order.
    pub schedule: Vec<Phase>,
    /// The hook's default save config.
    pub default_save_config: SaveConfig,
    /// The hook's default reduction config.
    pub default_reduction_config: ReductionConfig,
    /// The collections, in order.
    pub collections: Vec<Collection>,
    /// Every tensor, in index order.
    pub tensors: Vec<TensorSpec>,
    /// Global steps at which a worker (by index) writes nothing.
    pub worker_skip_steps: BTreeMap<usize, Vec<i64>>,
    /// Whether `training_job_end.ts` is written.
    pub training_ended: bool,
    /// The shape of reduction values (`"0d"` or `"1d"`).
    pub reduction_shape: ReductionShape,
    /// Event wall time `base + per_step * global step`, or `None` for the time of writing
    /// (`"now"`).
    pub wall_time: Option<(f64, f64)>,
}

impl Default for Recipe {
    /// The recipe `{}`: one worker, five TRAIN steps saved every step, raw tensors only, no
    /// collections or tensors.
    fn default() -> Recipe {
        Recipe {
            description: String::new(),
            seed: 0,
            worker_names: vec!["worker_0".into()],
            num_workers_meta: 1,
            collections_written_by: vec![0],
            init_step: 0,
            schedule: vec![Phase {
                mode: Mode::Train,
                steps: 5,
            }],
            default_save_config: SaveConfig::new(SaveConfigMode::every(1)),
            default_reduction_config: ReductionConfig::raw_only(),
            collections: Vec::new(),
            tensors: Vec::new(),
            worker_skip_steps: BTreeMap::new(),
            training_ended: true,
            reduction_shape: ReductionShape::Scalar,
            wall_time: Some((1_700_000_000.0, 1.0)),
        }
    }
}

impl Recipe {
    /// The index of the first tensor with this name.
    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }

    /// The value tensor `t` holds at global step `g` for worker index `w`: what its raw
    /// record at that step holds.
    pub fn values(&self, t: usize, g: i64, w: usize) -> Result<TensorValue> {
        let spec = self.tensors.get(t).ok_or(SynthError::NoSuchTensor(t))?;
        generate(spec, self.seed, t as u64, g, w as u64)
    }

    /// The second value of a `duplicate` tensor (generated with worker index `w + 1000`).
    pub fn duplicate_values(&self, t: usize, g: i64, w: usize) -> Result<TensorValue> {
        self.values(t, g, w + 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RecipeNumber;
    use smdebug_record::DType;

    fn field(text: &str) -> String {
        match Recipe::from_json(text, "inline").unwrap_err() {
            SynthError::Recipe { field, .. } => field,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_their_place() {
        assert_eq!(field(r#"{"sead": 1}"#), "sead");
        assert_eq!(field("[]"), "recipe");
        assert_eq!(
            field(r#"{"tensors": [{"name": "a", "shpe": []}]}"#),
            "tensors[0].shpe"
        );
        assert_eq!(field(r#"{"tensors": [{"shape": []}]}"#), "tensors[0]");
        assert_eq!(
            field(r#"{"default_save_config": {"TRAIN": {"save_interval": 1.5}}}"#),
            "default_save_config.TRAIN.save_interval"
        );
        assert_eq!(
            field(r#"{"tensor_templates": [{"name": "t{i}", "count": -1}]}"#),
            "tensor_templates[0].count"
        );
        assert_eq!(
            field(r#"{"worker_skip_steps": {"w": [1]}}"#),
            "worker_skip_steps.w"
        );
        assert_eq!(
            field(r#"{"collections": [{"name": "c", "include_regex": ["("]}]}"#),
            "collections[0].include_regex"
        );
        assert_eq!(
            field(r#"{"tensors": [{"name": "a", "dtype": "float8"}]}"#),
            "tensors[0].dtype"
        );
        assert_eq!(
            field(
                r#"{"collections": [{"name": "c", "reduction_config": {"reductions": ["median"]}}]}"#
            ),
            "collections[0].reduction_config.reductions[0]"
        );
        assert_eq!(
            field(r#"{"schedule": [{"mode": "train", "steps": 1}]}"#),
            "schedule[0].mode"
        );
        assert_eq!(
            field(r#"{"tensors": [{"name": "c", "pattern": "const"}]}"#),
            "tensors[0]"
        );
        assert!(matches!(
            Recipe::from_json("{", "inline"),
            Err(SynthError::Json { .. })
        ));
    }

    #[test]
    fn python_readings_of_values_are_kept() {
        let r = |text: &str| Recipe::from_json(text, "inline").unwrap();
        // `int(seed) & MASK64`, for any int.
        assert_eq!(r(r#"{"seed": 18446744073709551621}"#).seed, 5);
        assert_eq!(r(r#"{"seed": -1}"#).seed, u64::MAX);
        // A repeated key keeps its last value, as a dict does.
        assert_eq!(r(r#"{"seed": 1, "seed": 2}"#).seed, 2);
        // `True` is the int 1.
        assert_eq!(r(r#"{"workers": true}"#).worker_names, ["worker_0"]);
        // `workers` is not read when `worker_names` is given.
        assert_eq!(
            r(r#"{"worker_names": ["a"], "workers": "x"}"#).worker_names,
            ["a"]
        );
        // `null` is `SaveConfig()`; absent is the recipe's default.
        assert_eq!(
            r(r#"{"default_save_config": null}"#).default_save_config,
            SaveConfig::default()
        );
        assert_eq!(
            r("{}").default_save_config,
            SaveConfig::new(SaveConfigMode::every(1))
        );
        assert!(field(r#"{"description": null}"#) == "description");
        let w = r(r#"{"wall_time": {"base": "inf", "per_step": NaN}}"#)
            .wall_time
            .unwrap();
        assert!(w.0 == f64::INFINITY && w.1.is_nan());
        assert_eq!(
            r(r#"{"wall_time": {"per_step": 2}}"#).wall_time,
            Some((0.0, 2.0))
        );
        // A tensor's `index` and `count` are read back and ignored.
        assert_eq!(
            r(r#"{"tensors": [{"name": "a", "index": [1], "count": "x"}]}"#)
                .tensors
                .len(),
            1
        );
        let t = &r(r#"{"tensors": [{"name": "a", "range": [1, 2.5], "inject": [{"index": 0, "value": true}]}]}"#).tensors[0];
        assert_eq!(
            t.range,
            Some((RecipeNumber::Int(1), RecipeNumber::Float(2.5)))
        );
        assert_eq!(t.inject, [(0, RecipeNumber::Int(1))]);
    }

    #[test]
    fn normalization_is_fixture_pys() {
        let r = Recipe::from_json(
            r#"{"workers": 2, "tensors": [{"name": "a", "collections": ["new"]}],
                "tensor_templates": [{"name": "t{i}", "count": 2, "dtype": "int8"}],
                "default_save_config": {"TRAIN": {"save_interval": 2}, "EVAL": null}}"#,
            "inline",
        )
        .unwrap();
        assert_eq!(r.num_workers_meta, 2);
        assert_eq!(r.collections_written_by, [0, 1]);
        assert_eq!(r.collections.len(), 1);
        assert_eq!(r.collections[0].name, "new");
        let names: Vec<&str> = r.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "t0", "t1"]);
        assert_eq!(r.tensors[2].dtype, DType::Int8);
        let modes: Vec<Mode> = r.default_save_config.modes().map(|(m, _)| m).collect();
        assert_eq!(
            modes,
            [Mode::Train, Mode::Eval, Mode::Predict, Mode::Global]
        );
        assert!(r.default_save_config.get(Mode::Eval).is_none());
        assert_eq!(Recipe::from_json(&r.to_json(), "again").unwrap(), r);
    }

    #[test]
    fn injected_specials_and_int_extremes_are_stored_exactly() {
        let recipe = Recipe::from_json(
            r#"{"tensors": [
                {"name": "f", "shape": [4], "dtype": "float32",
                 "inject": [{"index": 0, "value": "nan"}, {"index": 1, "value": "-0.0"},
                            {"index": 9, "value": 1.0}]},
                {"name": "i", "shape": [2], "dtype": "int64",
                 "inject": [{"index": 0, "value": -9223372036854775808},
                            {"index": 1, "value": 9223372036854775807}]},
                {"name": "n", "shape": [1], "dtype": "int32",
                 "inject": [{"index": 0, "value": "nan"}]}]}"#,
            "inline",
        )
        .unwrap();
        let f = recipe.values(0, 0, 0).unwrap().to_le_bytes();
        assert!(f32::from_le_bytes(f[0..4].try_into().unwrap()).is_nan());
        assert_eq!(&f[4..8], &(-0.0f32).to_le_bytes());
        let i = recipe.values(1, 0, 0).unwrap().to_le_bytes();
        assert_eq!(&i[0..8], &i64::MIN.to_le_bytes());
        assert_eq!(&i[8..16], &i64::MAX.to_le_bytes());
        assert!(matches!(
            recipe.values(2, 0, 0),
            Err(SynthError::Value { .. })
        ));
        assert!(matches!(
            recipe.values(3, 0, 0),
            Err(SynthError::NoSuchTensor(3))
        ));
    }

    #[test]
    fn random_values_stay_in_range() {
        let recipe = Recipe::from_json(
            r#"{"tensors": [{"name": "u", "shape": [1000], "dtype": "uint8", "range": [3, 9]},
                            {"name": "d", "shape": [1000], "dtype": "float64", "range": [2, 3]}]}"#,
            "inline",
        )
        .unwrap();
        let u = recipe.values(0, 5, 1).unwrap().to_le_bytes();
        assert!(u.iter().all(|b| (3..=9).contains(b)));
        assert!(u.contains(&3) && u.contains(&9));
        let d = recipe.values(1, 5, 1).unwrap().to_le_bytes();
        for c in d.chunks(8) {
            let v = f64::from_le_bytes(c.try_into().unwrap());
            assert!((2.0..3.0).contains(&v), "{v}");
        }
    }
}
