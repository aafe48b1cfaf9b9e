//! The recipe model: a fixture recipe (`tests/peer/presets/*.json`, the format of
//! `tests/peer/fixture.py`) parsed and normalized as `fixture.py`'s `normalize` does it, and
//! written back as JSON.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use smdebug_config::pyjson::{self, PyValue};
use smdebug_config::{Collection, Mode, Reduction, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_hook::ReductionShape;
use smdebug_record::{DType, TensorValue};

use crate::error::{Result, SynthError};
use crate::values::generate;

/// A number of a recipe (`range`, `const`, `inject`): JSON integers stay integers because
/// numpy stores Python ints and floats differently; `"nan"`, `"inf"`, `"-inf"` and `"-0.0"`
/// are floats.
#[derive(Debug, Clone, Copy)]
pub enum RecipeNumber {
    /// An integer literal (or `true`/`false`, which Python treats as 1/0).
    Int(i128),
    /// A literal with a fraction or exponent, or one of the special strings.
    Float(f64),
}

impl PartialEq for RecipeNumber {
    /// Bit for bit, so that a NaN equals itself and `-0.0` differs from `0.0`.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (RecipeNumber::Int(a), RecipeNumber::Int(b)) => a == b,
            (RecipeNumber::Float(a), RecipeNumber::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl fmt::Display for RecipeNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecipeNumber::Int(i) => write!(f, "{i}"),
            RecipeNumber::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl RecipeNumber {
    fn to_json(self) -> PyValue {
        match self {
            RecipeNumber::Int(i) => match i64::try_from(i) {
                Ok(i) => PyValue::Int(i),
                Err(_) => PyValue::BigInt(i.to_string()),
            },
            RecipeNumber::Float(f) if f.is_nan() => PyValue::Str("nan".into()),
            RecipeNumber::Float(f) if f == f64::INFINITY => PyValue::Str("inf".into()),
            RecipeNumber::Float(f) if f == f64::NEG_INFINITY => PyValue::Str("-inf".into()),
            RecipeNumber::Float(f) if f == 0.0 && f.is_sign_negative() => {
                PyValue::Str("-0.0".into())
            }
            RecipeNumber::Float(f) => PyValue::Float(f),
        }
    }
}

/// How a tensor's values are made (`pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Seeded pseudo-random values in `range` (the default).
    Random,
    /// Every element is the global step.
    Step,
    /// Every element is the tensor's `const`.
    Const,
}

impl Pattern {
    fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Step => "step",
            Pattern::Const => "const",
        }
    }
}

/// One tensor of a normalized recipe (templates expanded).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// The tensor's name.
    pub name: String,
    /// Shape (`[]` = 0-d).
    pub shape: Vec<usize>,
    /// Element type (numpy name in the recipe, `str` for strings).
    pub dtype: DType,
    /// How the values are made.
    pub pattern: Pattern,
    /// `[lo, hi]` of random values (`None`: the dtype's default range).
    pub range: Option<(RecipeNumber, RecipeNumber)>,
    /// The value of a `const` tensor.
    pub constant: Option<RecipeNumber>,
    /// Element overrides: flat C-order index (ignored beyond the size) and value.
    pub inject: Vec<(usize, RecipeNumber)>,
    /// Collections the tensor is explicitly a member of.
    pub collections: Vec<String>,
    /// Worker indices that write it (`None`: all).
    pub workers: Option<Vec<usize>>,
    /// Modes in which it is written (`None`: all).
    pub modes: Option<Vec<Mode>>,
    /// Global steps at which it is not written.
    pub skip_steps: Vec<i64>,
    /// The only global steps at which it is written (`None`: all).
    pub only_steps: Option<Vec<i64>>,
    /// Write the raw tensor even when it is empty (the hook never does).
    pub write_empty_raw: bool,
    /// Write a second raw record under the same name in the same step.
    pub duplicate: bool,
}

impl TensorSpec {
    /// A random float32 tensor of this name and shape, every other key at its default.
    pub fn new(name: impl Into<String>, shape: Vec<usize>) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            shape,
            dtype: DType::Float32,
            pattern: Pattern::Random,
            range: None,
            constant: None,
            inject: Vec::new(),
            collections: Vec::new(),
            workers: None,
            modes: None,
            skip_steps: Vec::new(),
            only_steps: None,
            write_empty_raw: false,
            duplicate: false,
        }
    }

    /// Whether worker `w` writes this tensor at global step `g` in `mode` (the recipe's
    /// filters; the save configs decide the rest).
    pub fn written_by(&self, w: usize, mode: Mode, g: i64) -> bool {
        self.workers.as_ref().is_none_or(|ws| ws.contains(&w))
            && self.modes.as_ref().is_none_or(|m| m.contains(&mode))
            && !self.skip_steps.contains(&g)
            && self.only_steps.as_ref().is_none_or(|o| o.contains(&g))
    }
}

/// One phase of the schedule: `steps` steps in `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// The mode of these steps.
    pub mode: Mode,
    /// How many steps.
    pub steps: u64,
}

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
    /// Parses a recipe from JSON text; `origin` names it in errors. Unknown keys are refused,
    /// as `fixture.py` refuses them.
    pub fn from_json(text: &str, origin: &str) -> Result<Recipe> {
        let v = pyjson::parse(text).map_err(|source| SynthError::Json {
            origin: origin.to_owned(),
            source,
        })?;
        parse_recipe(&v).map_err(|b| SynthError::Recipe {
            origin: origin.to_owned(),
            field: b.field,
            message: b.message,
        })
    }

    /// Reads a recipe file.
    pub fn load(path: &Path) -> Result<Recipe> {
        let text = std::fs::read_to_string(path).map_err(|source| SynthError::Io {
            path: path.to_owned(),
            source,
        })?;
        Recipe::from_json(&text, &path.display().to_string())
    }

    /// The normalized recipe as JSON (every key explicit, tensors with their `index`, as
    /// `fixture.py --print-recipe` shows it); [`Recipe::from_json`] reads it back to an
    /// equal recipe.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

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
                    items.push(("range", PyValue::Array(vec![lo.to_json(), hi.to_json()])));
                }
                if let Some(c) = t.constant {
                    items.push(("const", c.to_json()));
                }
                items.extend([
                    (
                        "inject",
                        PyValue::Array(
                            t.inject
                                .iter()
                                .map(|&(index, value)| {
                                    obj(vec![("index", int(index)), ("value", value.to_json())])
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

// ------------------------------------------------------------------------------ parse

const RECIPE_KEYS: &[&str] = &[
    "description",
    "seed",
    "workers",
    "worker_names",
    "num_workers_meta",
    "collections_written_by",
    "init_step",
    "schedule",
    "default_save_config",
    "default_reduction_config",
    "collections",
    "tensors",
    "tensor_templates",
    "worker_skip_steps",
    "training_ended",
    "reduction_shape",
    "wall_time",
];
const TENSOR_KEYS: &[&str] = &[
    "name",
    "shape",
    "dtype",
    "pattern",
    "range",
    "const",
    "inject",
    "collections",
    "workers",
    "modes",
    "skip_steps",
    "only_steps",
    "write_empty_raw",
    "duplicate",
    "index",
    "count",
];
const COLLECTION_KEYS: &[&str] = &[
    "name",
    "include_regex",
    "tensor_names",
    "save_config",
    "reduction_config",
    "save_histogram",
];

/// Where a recipe is wrong and why (the origin is added by [`Recipe::from_json`]).
struct Bad {
    field: String,
    message: String,
}

type P<T> = std::result::Result<T, Bad>;

fn bad<T>(field: &str, message: impl Into<String>) -> P<T> {
    Err(Bad {
        field: field.to_owned(),
        message: message.into(),
    })
}

fn expected<T>(field: &str, what: &str, v: &PyValue) -> P<T> {
    bad(field, format!("expected {what}, not {}", v.repr()))
}

/// An object's entries, refusing keys not in `allowed`.
fn object<'a>(v: &'a PyValue, field: &str, allowed: &[&str]) -> P<&'a [(String, PyValue)]> {
    let PyValue::Object(items) = v else {
        return expected(field, "an object", v);
    };
    let mut unknown: Vec<&str> = items
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !allowed.contains(k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return bad(field, format!("unknown key(s) {unknown:?}"));
    }
    Ok(items)
}

/// A present, non-null value.
fn present<'a>(v: &'a PyValue, key: &str) -> Option<&'a PyValue> {
    v.get(key).filter(|x| **x != PyValue::Null)
}

fn integer(v: &PyValue, field: &str) -> P<i128> {
    match v {
        PyValue::Int(i) => Ok(i128::from(*i)),
        PyValue::Bool(b) => Ok(i128::from(*b)),
        PyValue::BigInt(t) => match t.parse::<i128>() {
            Ok(i) => Ok(i),
            Err(_) => expected(field, "an integer within 128 bits", v),
        },
        _ => expected(field, "an integer", v),
    }
}

fn int_of<T: TryFrom<i128>>(v: &PyValue, field: &str, what: &str) -> P<T> {
    let i = integer(v, field)?;
    T::try_from(i).or_else(|_| expected(field, what, v))
}

fn i64_of(v: &PyValue, field: &str) -> P<i64> {
    int_of(v, field, "a 64-bit integer")
}

fn usize_of(v: &PyValue, field: &str) -> P<usize> {
    int_of(v, field, "a non-negative integer")
}

fn boolean(v: &PyValue, field: &str) -> P<bool> {
    match v {
        PyValue::Bool(b) => Ok(*b),
        _ => expected(field, "true or false", v),
    }
}

fn string<'a>(v: &'a PyValue, field: &str) -> P<&'a str> {
    match v {
        PyValue::Str(s) => Ok(s),
        _ => expected(field, "a string", v),
    }
}

fn list<'a>(v: &'a PyValue, field: &str) -> P<&'a [PyValue]> {
    match v {
        PyValue::Array(a) => Ok(a),
        _ => expected(field, "a list", v),
    }
}

fn list_of<T>(v: &PyValue, field: &str, f: impl Fn(&PyValue, &str) -> P<T>) -> P<Vec<T>> {
    list(v, field)?
        .iter()
        .enumerate()
        .map(|(i, x)| f(x, &format!("{field}[{i}]")))
        .collect()
}

fn strings(v: &PyValue, field: &str) -> P<Vec<String>> {
    list_of(v, field, |x, f| string(x, f).map(str::to_owned))
}

fn number(v: &PyValue, field: &str) -> P<RecipeNumber> {
    Ok(match v {
        PyValue::Float(f) => RecipeNumber::Float(*f),
        PyValue::Str(s) => RecipeNumber::Float(match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "-0.0" => -0.0,
            _ => return expected(field, "a number or \"nan\", \"inf\", \"-inf\", \"-0.0\"", v),
        }),
        _ => RecipeNumber::Int(integer(v, field)?),
    })
}

fn float(v: &PyValue, field: &str) -> P<f64> {
    match number(v, field)? {
        RecipeNumber::Float(f) => Ok(f),
        RecipeNumber::Int(i) => Ok(i as f64),
    }
}

/// Mode names as the recipe format has them: exact upper case.
fn mode(v: &PyValue, field: &str) -> P<Mode> {
    match string(v, field)? {
        "TRAIN" => Ok(Mode::Train),
        "EVAL" => Ok(Mode::Eval),
        "PREDICT" => Ok(Mode::Predict),
        "GLOBAL" => Ok(Mode::Global),
        _ => expected(field, "one of TRAIN, EVAL, PREDICT, GLOBAL", v),
    }
}

/// `SaveConfigMode(**d)`.
fn save_config_mode(v: &PyValue, field: &str) -> P<SaveConfigMode> {
    let items = object(
        v,
        field,
        &["save_interval", "start_step", "end_step", "save_steps"],
    )?;
    let mut c = SaveConfigMode::default();
    for (k, x) in items {
        let f = format!("{field}.{k}");
        match k.as_str() {
            "save_interval" => c.save_interval = i64_of(x, &f)?,
            "start_step" => c.start_step = i64_of(x, &f)?,
            "end_step" if *x == PyValue::Null => c.end_step = None,
            "end_step" => c.end_step = Some(i64_of(x, &f)?),
            _ => c.save_steps = list_of(x, &f, i64_of)?,
        }
    }
    Ok(c)
}

/// `fixture.py::save_config`: a dict keyed only by mode names is a per-mode config (the
/// given modes first, in the given order, which the collections file keeps; the others
/// unset); any other dict is one rule for every mode.
fn save_config(v: &PyValue, field: &str) -> P<Option<SaveConfig>> {
    match v {
        PyValue::Null => Ok(None),
        PyValue::Object(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|(k, _)| Mode::ALL.iter().any(|m| m.name() == k)) =>
        {
            let mut per = Vec::new();
            for (k, x) in items {
                let f = format!("{field}.{k}");
                let m = mode(&PyValue::Str(k.clone()), &f)?;
                let c = match x {
                    PyValue::Null => None,
                    x => Some(save_config_mode(x, &f)?),
                };
                per.push((m, c));
            }
            Ok(Some(SaveConfig::from_modes(per)))
        }
        _ => Ok(Some(SaveConfig::new(save_config_mode(v, field)?))),
    }
}

/// `ReductionConfig(**d)`.
fn reduction_config(v: &PyValue, field: &str) -> P<Option<ReductionConfig>> {
    if *v == PyValue::Null {
        return Ok(None);
    }
    let items = object(
        v,
        field,
        &[
            "reductions",
            "abs_reductions",
            "norms",
            "abs_norms",
            "save_raw_tensor",
            "save_shape",
        ],
    )?;
    // One reduction type serves both lists; each list takes only the names smdebug allows
    // in it (a norm among the reductions is refused, as smdebug refuses it).
    let listed = |x: &PyValue, f: &str, allowed: &[Reduction], what: &str| -> P<Vec<Reduction>> {
        list_of(x, f, |n, f| match string(n, f)?.parse::<Reduction>() {
            Ok(r) if allowed.contains(&r) => Ok(r),
            _ => expected(f, what, n),
        })
    };
    let reductions = |x: &PyValue, f: &str| {
        listed(
            x,
            f,
            &ReductionConfig::ALLOWED_REDUCTIONS,
            "a reduction (min, max, mean, std, variance, sum, prod)",
        )
    };
    let norms =
        |x: &PyValue, f: &str| listed(x, f, &ReductionConfig::ALLOWED_NORMS, "a norm (l1, l2)");
    let mut c = ReductionConfig::default();
    for (k, x) in items {
        let f = format!("{field}.{k}");
        match k.as_str() {
            "reductions" => c.reductions = reductions(x, &f)?,
            "abs_reductions" => c.abs_reductions = reductions(x, &f)?,
            "norms" => c.norms = norms(x, &f)?,
            "abs_norms" => c.abs_norms = norms(x, &f)?,
            "save_raw_tensor" => c.save_raw_tensor = boolean(x, &f)?,
            _ => c.save_shape = boolean(x, &f)?,
        }
    }
    Ok(Some(c))
}

/// Python's `name.format(i=i)` for the forms recipes use: `{i}`, `{i:Nd}`, `{i:0Nd}` and
/// the escapes `{{` / `}}`.
fn format_template(name: &str, i: usize, field: &str) -> P<String> {
    let unsupported = || {
        bad(
            field,
            format!("template {name:?}: only {{i}}, {{i:Nd}} and {{i:0Nd}} are supported"),
        )
    };
    let mut out = String::new();
    let mut rest = name;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if tail.starts_with('{') {
            let Some(end) = tail.find('}') else {
                return unsupported();
            };
            let spec = match tail[1..end].strip_prefix('i') {
                Some("") => "",
                Some(s) => match s.strip_prefix(':') {
                    Some(s) => s,
                    None => return unsupported(),
                },
                None => return unsupported(),
            };
            let digits = spec.strip_suffix('d').unwrap_or(spec);
            let (zero, width) = match digits.strip_prefix('0') {
                Some(w) if !w.is_empty() => (true, w),
                _ => (false, digits),
            };
            let width: usize = match width {
                "" => 0,
                w => match w.parse() {
                    Ok(w) if w <= 64 => w,
                    _ => return unsupported(),
                },
            };
            if zero {
                out.push_str(&format!("{i:0width$}"));
            } else {
                out.push_str(&format!("{i:>width$}"));
            }
            rest = &tail[end + 1..];
        } else {
            return unsupported();
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn tensor_spec(v: &PyValue, name: String, field: &str) -> P<TensorSpec> {
    let mut t = TensorSpec::new(name, Vec::new());
    for (k, x) in object(v, field, TENSOR_KEYS)? {
        let f = format!("{field}.{k}");
        let optional = *x == PyValue::Null;
        match k.as_str() {
            "shape" => t.shape = list_of(x, &f, usize_of)?,
            "dtype" => {
                let name = string(x, &f)?;
                t.dtype = DType::from_name(name).map_or_else(
                    || {
                        expected(
                            &f,
                            "a numpy dtype name (float16 … complex128, bool) or str",
                            x,
                        )
                    },
                    Ok,
                )?;
            }
            "pattern" => {
                t.pattern = match string(x, &f)? {
                    "random" => Pattern::Random,
                    "step" => Pattern::Step,
                    "const" => Pattern::Const,
                    _ => return expected(&f, "random, step or const", x),
                }
            }
            "range" if optional => t.range = None,
            "range" => match list(x, &f)? {
                [lo, hi] => t.range = Some((number(lo, &f)?, number(hi, &f)?)),
                _ => return expected(&f, "[lo, hi]", x),
            },
            "const" if optional => t.constant = None,
            "const" => t.constant = Some(number(x, &f)?),
            "inject" => {
                t.inject = list_of(x, &f, |it, f| {
                    object(it, f, &["index", "value"])?;
                    let index = present(it, "index").map_or_else(
                        || bad(f, "an inject entry needs an \"index\""),
                        |i| usize_of(i, &format!("{f}.index")),
                    )?;
                    let value = it.get("value").map_or_else(
                        || bad(f, "an inject entry needs a \"value\""),
                        |v| number(v, &format!("{f}.value")),
                    )?;
                    Ok((index, value))
                })?
            }
            "collections" => t.collections = strings(x, &f)?,
            "workers" if optional => t.workers = None,
            "workers" => t.workers = Some(list_of(x, &f, usize_of)?),
            "modes" if optional => t.modes = None,
            "modes" => t.modes = Some(list_of(x, &f, mode)?),
            "skip_steps" => t.skip_steps = list_of(x, &f, i64_of)?,
            "only_steps" if optional => t.only_steps = None,
            "only_steps" => t.only_steps = Some(list_of(x, &f, i64_of)?),
            "write_empty_raw" => t.write_empty_raw = boolean(x, &f)?,
            "duplicate" => t.duplicate = boolean(x, &f)?,
            // `name` is read by the caller; `index` is an output of normalization and
            // `count` belongs to templates.
            _ => {}
        }
    }
    if t.pattern == Pattern::Const && t.constant.is_none() {
        return bad(field, "pattern \"const\" needs a \"const\" value");
    }
    Ok(t)
}

fn tensor_name<'a>(v: &'a PyValue, field: &str) -> P<&'a str> {
    match v.get("name") {
        Some(n) => string(n, &format!("{field}.name")),
        None => bad(field, "a tensor needs a \"name\""),
    }
}

fn collection(v: &PyValue, field: &str) -> P<Collection> {
    let items = object(v, field, COLLECTION_KEYS)?;
    let name = match v.get("name") {
        Some(n) => string(n, &format!("{field}.name"))?,
        None => return bad(field, "a collection needs a \"name\""),
    };
    let field = format!("collections[{name:?}]");
    let mut c = Collection::new(name);
    for (k, x) in items {
        let f = format!("{field}.{k}");
        match k.as_str() {
            "include_regex" => {
                for p in strings(x, &f)? {
                    if let Err(e) = c.include(&p) {
                        return bad(&f, e.to_string());
                    }
                }
            }
            "tensor_names" => {
                for t in strings(x, &f)? {
                    c.add_tensor_name(t);
                }
            }
            "save_config" => c.save_config = save_config(x, &f)?,
            "reduction_config" => c.reduction_config = reduction_config(x, &f)?,
            "save_histogram" => c.save_histogram = boolean(x, &f)?,
            _ => {}
        }
    }
    Ok(c)
}

fn parse_recipe(v: &PyValue) -> P<Recipe> {
    let items = object(v, "recipe", RECIPE_KEYS)?;
    let get = |k: &str| items.iter().find(|(key, _)| key == k).map(|(_, x)| x);
    let given = |k: &str| get(k).filter(|x| **x != PyValue::Null);
    let mut r = Recipe::default();
    if let Some(x) = get("description") {
        r.description = string(x, "description")?.to_owned();
    }
    if let Some(x) = get("seed") {
        // `int(seed) & MASK64`.
        r.seed = integer(x, "seed")? as u64;
    }
    r.worker_names = match (given("worker_names"), given("workers")) {
        (Some(x), _) => strings(x, "worker_names")?,
        (None, Some(x)) => {
            let n: usize = usize_of(x, "workers")?;
            if n > 1 << 16 {
                return bad("workers", format!("{n} workers: at most 65536"));
            }
            (0..n).map(|i| format!("worker_{i}")).collect()
        }
        (None, None) => vec!["worker_0".into()],
    };
    let n = r.worker_names.len();
    r.num_workers_meta = match given("num_workers_meta") {
        Some(x) => i64_of(x, "num_workers_meta")?,
        None => n as i64,
    };
    r.collections_written_by = match given("collections_written_by") {
        Some(x) => list_of(x, "collections_written_by", usize_of)?,
        None => (0..n).collect(),
    };
    if let Some(x) = get("init_step") {
        r.init_step = i64_of(x, "init_step")?;
    }
    if let Some(x) = given("schedule") {
        r.schedule = list_of(x, "schedule", |p, f| {
            object(p, f, &["mode", "steps"])?;
            Ok(Phase {
                mode: match p.get("mode") {
                    Some(m) => mode(m, &format!("{f}.mode"))?,
                    None => return bad(f, "a phase needs a \"mode\""),
                },
                steps: match p.get("steps") {
                    Some(s) => int_of(s, &format!("{f}.steps"), "a non-negative integer")?,
                    None => return bad(f, "a phase needs \"steps\""),
                },
            })
        })?;
    }
    if let Some(x) = get("default_save_config") {
        r.default_save_config = save_config(x, "default_save_config")?.unwrap_or_default();
    }
    if let Some(x) = get("default_reduction_config") {
        r.default_reduction_config = reduction_config(x, "default_reduction_config")?
            .unwrap_or_else(ReductionConfig::raw_only);
    }
    if let Some(x) = given("collections") {
        r.collections = list(x, "collections")?
            .iter()
            .enumerate()
            .map(|(i, c)| collection(c, &format!("collections[{i}]")))
            .collect::<P<_>>()?;
    }
    if let Some(x) = given("tensors") {
        for (i, t) in list(x, "tensors")?.iter().enumerate() {
            let f = format!("tensors[{i}]");
            let name = tensor_name(t, &f)?.to_owned();
            r.tensors.push(tensor_spec(t, name, &f)?);
        }
    }
    if let Some(x) = given("tensor_templates") {
        for (i, t) in list(x, "tensor_templates")?.iter().enumerate() {
            let f = format!("tensor_templates[{i}]");
            let template = tensor_name(t, &f)?;
            let count: usize = match t.get("count") {
                Some(c) => usize_of(c, &format!("{f}.count"))?,
                None => return bad(&f, "a template needs a \"count\""),
            };
            if count > 1 << 20 {
                return bad(&format!("{f}.count"), format!("{count}: at most 2^20"));
            }
            let spec = tensor_spec(t, String::new(), &f)?;
            for k in 0..count {
                let mut s = spec.clone();
                s.name = format_template(template, k, &format!("{f}.name"))?;
                r.tensors.push(s);
            }
        }
    }
    // Explicit membership creates the collection (fixture.py's normalize).
    for t in &r.tensors {
        for c in &t.collections {
            if !r.collections.iter().any(|x| &x.name == c) {
                r.collections.push(Collection::new(c.clone()));
            }
        }
    }
    if let Some(x) = given("worker_skip_steps") {
        let PyValue::Object(entries) = x else {
            return expected("worker_skip_steps", "an object keyed by worker index", x);
        };
        for (k, s) in entries {
            let f = format!("worker_skip_steps.{k}");
            let Ok(w) = k.parse::<usize>() else {
                return bad(&f, "keys are worker indices");
            };
            r.worker_skip_steps.insert(w, list_of(s, &f, i64_of)?);
        }
    }
    if let Some(x) = get("training_ended") {
        r.training_ended = boolean(x, "training_ended")?;
    }
    if let Some(x) = given("reduction_shape") {
        r.reduction_shape = match string(x, "reduction_shape")? {
            "0d" => ReductionShape::Scalar,
            "1d" => ReductionShape::OneElement,
            _ => return expected("reduction_shape", "\"0d\" or \"1d\"", x),
        };
    }
    if let Some(x) = given("wall_time") {
        r.wall_time = match x {
            PyValue::Str(s) if s == "now" => None,
            PyValue::Object(_) => {
                object(x, "wall_time", &["base", "per_step"])?;
                let part = |k: &str| {
                    present(x, k).map_or(Ok(0.0), |v| float(v, &format!("wall_time.{k}")))
                };
                Some((part("base")?, part("per_step")?))
            }
            _ => return expected("wall_time", "{\"base\", \"per_step\"} or \"now\"", x),
        };
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str) -> String {
        match Recipe::from_json(text, "inline").unwrap_err() {
            SynthError::Recipe { field, .. } => field,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn template_names_follow_python_format() {
        let f = |name, i| format_template(name, i, "t").map_err(|b| b.message);
        assert_eq!(f("layer_{i:02d}.w", 7).unwrap(), "layer_07.w");
        assert_eq!(f("l{i}", 12).unwrap(), "l12");
        assert_eq!(f("l{i:3d}", 5).unwrap(), "l  5");
        assert_eq!(f("{{x}}{i}", 1).unwrap(), "{x}1");
        assert!(f("{j}", 1).is_err());
        assert!(f("{i", 1).is_err());
        assert!(f("}", 1).is_err());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_their_place() {
        assert_eq!(field(r#"{"sead": 1}"#), "recipe");
        assert_eq!(
            field(r#"{"tensors": [{"name": "a", "shpe": []}]}"#),
            "tensors[0]"
        );
        assert_eq!(
            field(r#"{"tensors": [{"name": "a", "dtype": "float8"}]}"#),
            "tensors[0].dtype"
        );
        assert_eq!(
            field(
                r#"{"collections": [{"name": "c", "reduction_config": {"reductions": ["median"]}}]}"#
            ),
            "collections[\"c\"].reduction_config.reductions[0]"
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
