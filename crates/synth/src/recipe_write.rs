//! A recipe written back as JSON, as `fixture.py --print-recipe` shows it (Python's `json`
//! text: see `smdebug_config::pyjson`).

use smdebug_config::pyjson::{self, PyValue};
use smdebug_config::{ReductionConfig, SaveConfig};
use smdebug_hook::ReductionShape;

use crate::recipe::Recipe;
use crate::spec::RecipeNumber;

impl Recipe {
    /// The normalized recipe as JSON (every key explicit, tensors with their `index`, as
    /// `fixture.py --print-recipe` shows it); [`Recipe::from_json`] reads it back to an
    /// equal recipe.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    fn to_json_value(&self) -> PyValue {
        let ints = |v: &[i64]| PyValue::Array(v.iter().map(|&i| PyValue::Int(i)).collect());
        let usizes = |v: &[usize]| PyValue::Array(v.iter().map(|&i| int(i)).collect());
        let strs = |v: &mut dyn Iterator<Item = &str>| {
            PyValue::Array(v.map(|s| PyValue::Str(s.to_owned())).collect())
        };
        let obj = |items: Vec<(&str, PyValue)>| {
            PyValue::Object(items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        };
        let tensors = self
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut items = vec![
                    ("name", PyValue::Str(t.name.clone())),
                    ("shape", usizes(&t.shape)),
                    ("dtype", PyValue::Str(t.dtype.name().into())),
                    ("pattern", PyValue::Str(t.pattern.name().into())),
                ];
                if let Some((lo, hi)) = t.range {
                    items.push((
                        "range",
                        PyValue::Array(vec![number_json(lo), number_json(hi)]),
                    ));
                }
                if let Some(c) = t.constant {
                    items.push(("const", number_json(c)));
                }
                items.extend([
                    (
                        "inject",
                        PyValue::Array(
                            t.inject
                                .iter()
                                .map(|&(index, value)| {
                                    obj(vec![("index", int(index)), ("value", number_json(value))])
                                })
                                .collect(),
                        ),
                    ),
                    (
                        "collections",
                        strs(&mut t.collections.iter().map(String::as_str)),
                    ),
                    (
                        "workers",
                        t.workers.as_deref().map_or(PyValue::Null, usizes),
                    ),
                    (
                        "modes",
                        t.modes
                            .as_ref()
                            .map_or(PyValue::Null, |m| strs(&mut m.iter().map(|m| m.name()))),
                    ),
                    ("skip_steps", ints(&t.skip_steps)),
                    (
                        "only_steps",
                        t.only_steps.as_deref().map_or(PyValue::Null, ints),
                    ),
                    ("write_empty_raw", PyValue::Bool(t.write_empty_raw)),
                    ("duplicate", PyValue::Bool(t.duplicate)),
                    ("index", int(i)),
                ]);
                obj(items)
            })
            .collect();
        let collections = self
            .collections
            .iter()
            .map(|c| {
                obj(vec![
                    ("name", PyValue::Str(c.name.clone())),
                    (
                        "include_regex",
                        strs(&mut c.include_regex().iter().map(String::as_str)),
                    ),
                    (
                        "tensor_names",
                        strs(&mut c.tensor_names.iter().map(String::as_str)),
                    ),
                    (
                        "save_config",
                        c.save_config
                            .as_ref()
                            .map_or(PyValue::Null, SaveConfig::to_json_value),
                    ),
                    (
                        "reduction_config",
                        c.reduction_config
                            .as_ref()
                            .map_or(PyValue::Null, reduction_config_json),
                    ),
                    ("save_histogram", PyValue::Bool(c.save_histogram)),
                ])
            })
            .collect();
        obj(vec![
            ("description", PyValue::Str(self.description.clone())),
            ("seed", seed_json(self.seed)),
            (
                "worker_names",
                strs(&mut self.worker_names.iter().map(String::as_str)),
            ),
            ("workers", int(self.worker_names.len())),
            ("num_workers_meta", PyValue::Int(self.num_workers_meta)),
            (
                "collections_written_by",
                usizes(&self.collections_written_by),
            ),
            ("init_step", PyValue::Int(self.init_step)),
            (
                "schedule",
                PyValue::Array(
                    self.schedule
                        .iter()
                        .map(|p| {
                            obj(vec![
                                ("mode", PyValue::Str(p.mode.name().into())),
                                ("steps", int(p.steps)),
                            ])
                        })
                        .collect(),
                ),
            ),
            (
                "default_save_config",
                self.default_save_config.to_json_value(),
            ),
            (
                "default_reduction_config",
                reduction_config_json(&self.default_reduction_config),
            ),
            ("collections", PyValue::Array(collections)),
            ("tensors", PyValue::Array(tensors)),
            (
                "worker_skip_steps",
                PyValue::Object(
                    self.worker_skip_steps
                        .iter()
                        .map(|(w, s)| (w.to_string(), ints(s)))
                        .collect(),
                ),
            ),
            ("training_ended", PyValue::Bool(self.training_ended)),
            (
                "reduction_shape",
                PyValue::Str(
                    match self.reduction_shape {
                        ReductionShape::Scalar => "0d",
                        ReductionShape::OneElement => "1d",
                    }
                    .into(),
                ),
            ),
            (
                "wall_time",
                match self.wall_time {
                    None => PyValue::Str("now".into()),
                    Some((base, per_step)) => obj(vec![
                        ("base", PyValue::Float(base)),
                        ("per_step", PyValue::Float(per_step)),
                    ]),
                },
            ),
        ])
    }
}

/// A recipe number as the recipe writes it: special floats as their strings.
fn number_json(n: RecipeNumber) -> PyValue {
    match n {
        RecipeNumber::Int(i) => match i64::try_from(i) {
            Ok(i) => PyValue::Int(i),
            Err(_) => PyValue::BigInt(i.to_string()),
        },
        RecipeNumber::Float(f) if f.is_nan() => PyValue::Str("nan".into()),
        RecipeNumber::Float(f) if f == f64::INFINITY => PyValue::Str("inf".into()),
        RecipeNumber::Float(f) if f == f64::NEG_INFINITY => PyValue::Str("-inf".into()),
        RecipeNumber::Float(f) if f == 0.0 && f.is_sign_negative() => PyValue::Str("-0.0".into()),
        RecipeNumber::Float(f) => PyValue::Float(f),
    }
}

fn int<T: TryInto<i64> + ToString + Copy>(x: T) -> PyValue {
    match x.try_into() {
        Ok(i) => PyValue::Int(i),
        Err(_) => PyValue::BigInt(x.to_string()),
    }
}

/// Seeds above `i64::MAX` are written as the unsigned number (Python masks to 64 bits).
fn seed_json(seed: u64) -> PyValue {
    int(seed)
}

/// The recipe's form of a reduction config: `ReductionConfig(**d)`'s keyword arguments.
fn reduction_config_json(c: &ReductionConfig) -> PyValue {
    let names = |v: &mut dyn Iterator<Item = String>| PyValue::Array(v.map(PyValue::Str).collect());
    PyValue::Object(vec![
        (
            "reductions".into(),
            names(&mut c.reductions.iter().map(|r| r.to_string())),
        ),
        (
            "abs_reductions".into(),
            names(&mut c.abs_reductions.iter().map(|r| r.to_string())),
        ),
        (
            "norms".into(),
            names(&mut c.norms.iter().map(|n| n.to_string())),
        ),
        (
            "abs_norms".into(),
            names(&mut c.abs_norms.iter().map(|n| n.to_string())),
        ),
        ("save_raw_tensor".into(), PyValue::Bool(c.save_raw_tensor)),
        ("save_shape".into(), PyValue::Bool(c.save_shape)),
    ])
}
