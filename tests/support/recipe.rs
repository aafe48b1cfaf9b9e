//! A Rust model of the fixture recipe format (`tests/peer/presets/*.json`, written by
//! `tests/peer/fixture.py`): enough of it to recompute, bit for bit, every tensor value a
//! recipe makes the Python writer save, so tests check decoded values without trusting the
//! Python side's manifest alone.
//!
//! The value generator (same arithmetic as `tests/peer/peer_common.py::gen_values`):
//!
//! ```text
//! sm(x)  = SplitMix64 finaliser (wrapping u64 arithmetic)
//! seed   = sm(sm(sm(sm(recipe.seed) ^ t) ^ g) ^ w)   t tensor index, g global step, w worker
//! r_i    = sm(seed + i)                              i flat C-order element index
//! float  = lo + (hi - lo) * ((r_i >> 11) * 2^-53)    in f64, then rounded to the dtype
//! int    = lo + (r_i mod (hi - lo + 1))              in i64, then wrapped to the dtype
//! bool   = r_i >> 63 == 1
//! str    = "s{g}_{i}_{r_i mod 1000}"
//! ```
//!
//! then `inject` overrides elements (numpy assignment: floats rounded, ints truncated);
//! `duplicate` writes a second value generated with worker index `w + 1000`.
//!
//! Reductions are not modelled: they are numpy's business (`smdebug-reduce` checks those).
//!
//! ```no_run
//! use smdebug_conformance::recipe::Recipe;
//! let recipe = Recipe::preset("small").unwrap();
//! let t = recipe.tensor_index("fc1.weight").unwrap();
//! let v = recipe.expected_values(t, 3, 0).unwrap();
//! assert_eq!(v.shape, vec![4, 3]);
//! println!("{}", v.sha256_hex());
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// What can go wrong reading a recipe or generating its values.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// The recipe file could not be read.
    #[error("cannot read recipe {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The recipe is not valid JSON or does not have the recipe's shape (unknown keys are
    /// rejected, as `fixture.py` does).
    #[error("invalid recipe {origin}: {source}")]
    Json {
        /// Where the recipe came from.
        origin: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// A tensor's dtype is not one the recipe format knows.
    #[error("tensor {tensor:?}: unknown dtype {dtype:?}")]
    UnknownDtype {
        /// Tensor name.
        tensor: String,
        /// The dtype given.
        dtype: String,
    },
    /// A tensor's pattern is not `random`, `step` or `const`, or `const` lacks its value.
    #[error("tensor {tensor:?}: bad pattern {pattern:?}")]
    BadPattern {
        /// Tensor name.
        tensor: String,
        /// The pattern given.
        pattern: String,
    },
    /// A number (`const`, `inject`, `range`) that the dtype cannot take.
    #[error("tensor {tensor:?}: value {value} does not fit dtype {dtype}")]
    BadValue {
        /// Tensor name.
        tensor: String,
        /// The JSON value.
        value: String,
        /// The dtype.
        dtype: &'static str,
    },
    /// A `tensor_templates` name uses a format this model does not implement (only `{i}` and
    /// `{i:Nd}` / `{i:0Nd}` are).
    #[error("tensor template name {name:?}: unsupported format")]
    BadTemplate {
        /// The template name.
        name: String,
    },
    /// No tensor with this index in the normalized recipe.
    #[error("no tensor with index {0}")]
    NoSuchTensor(usize),
    /// A tensor's element count does not fit in memory arithmetic.
    #[error("tensor {tensor:?}: shape {shape:?} is too large")]
    TooLarge {
        /// Tensor name.
        tensor: String,
        /// The shape.
        shape: Vec<usize>,
    },
}

/// The element types of the recipe format (`dtype` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision.
    Float16,
    /// IEEE single precision.
    Float32,
    /// IEEE double precision.
    Float64,
    /// Signed 8-bit.
    Int8,
    /// Unsigned 8-bit.
    Uint8,
    /// Signed 16-bit.
    Int16,
    /// Unsigned 16-bit.
    Uint16,
    /// Signed 32-bit.
    Int32,
    /// Unsigned 32-bit.
    Uint32,
    /// Signed 64-bit.
    Int64,
    /// Unsigned 64-bit.
    Uint64,
    /// numpy bool (1 byte, 0 or 1).
    Bool,
    /// Two f32 (re, im).
    Complex64,
    /// Two f64 (re, im).
    Complex128,
    /// 1-D string tensors.
    Str,
}

impl DType {
    /// Every dtype, in the recipe reference's order.
    pub const ALL: [DType; 15] = [
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Int8,
        DType::Uint8,
        DType::Int16,
        DType::Uint16,
        DType::Int32,
        DType::Uint32,
        DType::Int64,
        DType::Uint64,
        DType::Bool,
        DType::Complex64,
        DType::Complex128,
        DType::Str,
    ];

    /// The numpy name (`"str"` for strings), as in recipes, manifests and dumps.
    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int8 => "int8",
            DType::Uint8 => "uint8",
            DType::Int16 => "int16",
            DType::Uint16 => "uint16",
            DType::Int32 => "int32",
            DType::Uint32 => "uint32",
            DType::Int64 => "int64",
            DType::Uint64 => "uint64",
            DType::Bool => "bool",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
            DType::Str => "str",
        }
    }

    /// Parses a numpy name.
    pub fn from_numpy_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.numpy_name() == name)
    }

    /// Bytes per element (`None` for strings).
    pub fn item_size(self) -> Option<usize> {
        Some(match self {
            DType::Int8 | DType::Uint8 | DType::Bool => 1,
            DType::Float16 | DType::Int16 | DType::Uint16 => 2,
            DType::Float32 | DType::Int32 | DType::Uint32 => 4,
            DType::Float64 | DType::Int64 | DType::Uint64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
            DType::Str => return None,
        })
    }

    fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::Float32 | DType::Float64 | DType::Complex64 | DType::Complex128
        )
    }

    /// `[lo, hi]` when the recipe gives no `range`.
    fn default_range(self) -> (Num, Num) {
        match self {
            DType::Int8 => (Num::Int(-128), Num::Int(127)),
            DType::Uint8 => (Num::Int(0), Num::Int(255)),
            DType::Uint16 | DType::Uint32 | DType::Uint64 => (Num::Int(0), Num::Int(1000)),
            DType::Int16 | DType::Int32 | DType::Int64 => (Num::Int(-1000), Num::Int(1000)),
            _ => (Num::Float(-1.0), Num::Float(1.0)),
        }
    }
}

/// The values one (tensor, global step, worker) holds, as the Python writer saves them.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedTensor {
    /// Element type.
    pub dtype: DType,
    /// Shape (`[]` for 0-d).
    pub shape: Vec<usize>,
    /// The canonical element bytes of the dump schema: C order, little-endian, bool 1 byte,
    /// complex (re, im); for strings `u32le(len(utf8)) + utf8` per element. For numeric
    /// dtypes this equals `TensorProto.tensor_content`.
    pub bytes: Vec<u8>,
    /// The elements of a string tensor.
    pub strings: Option<Vec<String>>,
}

impl ExpectedTensor {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// sha256 of [`ExpectedTensor::bytes`], lowercase hex (the dump schema's `sha256`).
    pub fn sha256_hex(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }
}

/// A number of the recipe: JSON integers stay integers (numpy assigns Python ints and floats
/// differently), specials are floats.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn from_json(v: &Value) -> Option<Num> {
        match v {
            Value::Number(n) => Some(Num::from_number(n)),
            Value::String(s) => match s.as_str() {
                "nan" => Some(Num::Float(f64::NAN)),
                "inf" => Some(Num::Float(f64::INFINITY)),
                "-inf" => Some(Num::Float(f64::NEG_INFINITY)),
                "-0.0" => Some(Num::Float(-0.0)),
                _ => None,
            },
            Value::Bool(b) => Some(Num::Int(i128::from(*b))),
            _ => None,
        }
    }

    fn from_number(n: &Number) -> Num {
        if let Some(i) = n.as_i64() {
            Num::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            Num::Int(i128::from(u))
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }
    }

    /// Python `float(x)`.
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Python `int(x)` (truncation); `None` for NaN/inf.
    fn as_int(self) -> Option<i128> {
        match self {
            Num::Int(i) => Some(i),
            Num::Float(f) if f.is_finite() => Some(f.trunc() as i128),
            Num::Float(_) => None,
        }
    }
}

/// One element before it is stored in its dtype (numpy casts at assignment).
#[derive(Debug, Clone, Copy)]
enum Cell {
    Float(f64),
    Int(i128),
    Bool(bool),
}

/// One entry of a recipe's `tensors` (after `tensor_templates` were expanded).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorSpec {
    /// Tensor name.
    pub name: String,
    /// Shape (`[]` = 0-d).
    #[serde(default)]
    pub shape: Vec<usize>,
    /// numpy dtype name or `str`.
    #[serde(default = "default_dtype")]
    pub dtype: String,
    /// `random` (default), `step` or `const`.
    #[serde(default = "default_pattern")]
    pub pattern: String,
    /// `[lo, hi]` of random values.
    #[serde(default)]
    pub range: Option<(Number, Number)>,
    /// The value of a `const` tensor (a number or `"nan"`, `"inf"`, `"-inf"`, `"-0.0"`).
    #[serde(default, rename = "const")]
    pub constant: Option<Value>,
    /// Element overrides.
    #[serde(default)]
    pub inject: Vec<Inject>,
    /// Explicit collection membership.
    #[serde(default)]
    pub collections: Vec<String>,
    /// Worker indices that write it (`None` = all).
    #[serde(default)]
    pub workers: Option<Vec<usize>>,
    /// Modes in which it is written (`None` = all).
    #[serde(default)]
    pub modes: Option<Vec<String>>,
    /// Global steps at which it is not written.
    #[serde(default)]
    pub skip_steps: Vec<u64>,
    /// The only global steps at which it is written (`None` = all).
    #[serde(default)]
    pub only_steps: Option<Vec<u64>>,
    /// Write the raw tensor even when it is empty.
    #[serde(default)]
    pub write_empty_raw: bool,
    /// Write a second raw value under the same name in the same step.
    #[serde(default)]
    pub duplicate: bool,
    /// Position in the normalized recipe (`--print-recipe` writes it; ignored on input).
    #[serde(default)]
    pub index: Option<usize>,
    /// Only in `tensor_templates`: how many tensors the template makes.
    #[serde(default)]
    pub count: Option<usize>,
}

/// One `inject` entry: element `index` (flat, C order) gets `value`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    /// Flat element index (ignored when beyond the tensor's size).
    pub index: usize,
    /// A number or a special string.
    pub value: Value,
}

fn default_dtype() -> String {
    "float32".into()
}

fn default_pattern() -> String {
    "random".into()
}

fn default_workers() -> usize {
    1
}

/// The recipe document. Keys this model does not interpret (collections, save configs, …)
/// are kept as JSON; unknown keys are rejected as `fixture.py` does.
// Several fields are parsed only so that a malformed recipe fails here as it fails in Python.
#[allow(dead_code)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    #[serde(default)]
    description: String,
    #[serde(default)]
    seed: i64,
    #[serde(default = "default_workers")]
    workers: usize,
    #[serde(default)]
    worker_names: Option<Vec<String>>,
    #[serde(default)]
    num_workers_meta: Option<usize>,
    #[serde(default)]
    collections_written_by: Option<Vec<usize>>,
    #[serde(default)]
    init_step: i64,
    #[serde(default)]
    schedule: Option<Value>,
    #[serde(default)]
    default_save_config: Option<Value>,
    #[serde(default)]
    default_reduction_config: Option<Value>,
    #[serde(default)]
    collections: Vec<Value>,
    #[serde(default)]
    tensors: Vec<TensorSpec>,
    #[serde(default)]
    tensor_templates: Vec<TensorSpec>,
    #[serde(default)]
    worker_skip_steps: BTreeMap<String, Vec<u64>>,
    #[serde(default = "default_true")]
    training_ended: bool,
    #[serde(default)]
    reduction_shape: Option<String>,
    #[serde(default)]
    wall_time: Option<Value>,
}

fn default_true() -> bool {
    true
}

/// A parsed recipe, normalized as `fixture.py` normalizes it: worker names filled in,
/// `tensor_templates` expanded after `tensors` (that order gives each tensor its index).
#[derive(Debug, Clone)]
pub struct Recipe {
    /// Free text.
    pub description: String,
    /// Seed of the value generator (Python masks it to 64 bits).
    pub seed: u64,
    /// Worker names; a worker's index is its position here.
    pub worker_names: Vec<String>,
    /// Whether `training_job_end.ts` is written.
    pub training_ended: bool,
    /// Every tensor, in index order.
    pub tensors: Vec<TensorSpec>,
}

impl Recipe {
    /// Parses a recipe from JSON text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Recipe, RecipeError> {
        let raw: RawRecipe = serde_json::from_str(text).map_err(|source| RecipeError::Json {
            origin: origin.to_owned(),
            source,
        })?;
        let worker_names = raw
            .worker_names
            .unwrap_or_else(|| (0..raw.workers).map(|i| format!("worker_{i}")).collect());
        let mut tensors = raw.tensors;
        for template in raw.tensor_templates {
            for i in 0..template.count.unwrap_or(0) {
                let mut t = template.clone();
                t.name = format_template(&template.name, i)?;
                t.count = None;
                tensors.push(t);
            }
        }
        for (i, t) in tensors.iter_mut().enumerate() {
            t.index = Some(i);
        }
        Ok(Recipe {
            description: raw.description,
            seed: raw.seed as u64,
            worker_names,
            training_ended: raw.training_ended,
            tensors,
        })
    }

    /// Reads a recipe file.
    pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecipeError::Io {
            path: path.to_owned(),
            source,
        })?;
        Recipe::from_json(&text, &path.display().to_string())
    }

    /// Reads `tests/peer/presets/<name>.json`.
    pub fn preset(name: &str) -> Result<Recipe, RecipeError> {
        Recipe::load(&crate::presets_dir().join(format!("{name}.json")))
    }

    /// The index of the first tensor with this name.
    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }

    /// The values tensor `t` holds at global step `g` for worker index `w`: what the raw
    /// record of that (tensor, step, worker) contains.
    pub fn expected_values(&self, t: usize, g: u64, w: u64) -> Result<ExpectedTensor, RecipeError> {
        let spec = self.tensors.get(t).ok_or(RecipeError::NoSuchTensor(t))?;
        generate(spec, self.seed, t as u64, g, w)
    }

    /// The second value of a `duplicate` tensor (generated with worker index `w + 1000`).
    pub fn expected_duplicate_values(
        &self,
        t: usize,
        g: u64,
        w: u64,
    ) -> Result<ExpectedTensor, RecipeError> {
        self.expected_values(t, g, w + 1000)
    }
}

/// Python's `name.format(i=i)` for the forms recipes use: `{i}`, `{i:Nd}`, `{i:0Nd}`.
fn format_template(name: &str, i: usize) -> Result<String, RecipeError> {
    let bad = || RecipeError::BadTemplate {
        name: name.to_owned(),
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
            let end = tail.find('}').ok_or_else(bad)?;
            let field = &tail[1..end];
            let spec = match field.strip_prefix('i') {
                Some("") => "",
                Some(s) => s.strip_prefix(':').ok_or_else(bad)?,
                None => return Err(bad()),
            };
            if spec.is_empty() {
                out.push_str(&i.to_string());
            } else {
                let digits = spec.strip_suffix('d').unwrap_or(spec);
                let (zero, width) = match digits.strip_prefix('0') {
                    Some(w) if !w.is_empty() => (true, w),
                    _ => (false, digits),
                };
                let width: usize = if width.is_empty() {
                    0
                } else {
                    width.parse().map_err(|_| bad())?
                };
                if zero {
                    out.push_str(&format!("{i:0width$}"));
                } else {
                    out.push_str(&format!("{i:>width$}"));
                }
            }
            rest = &tail[end + 1..];
        } else {
            return Err(bad());
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// SplitMix64's finaliser (wrapping arithmetic).
pub fn splitmix64(x: u64) -> u64 {
    let x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one (tensor, global step, worker) value.
pub fn value_seed(recipe_seed: u64, t: u64, g: u64, w: u64) -> u64 {
    [t, g, w]
        .into_iter()
        .fold(splitmix64(recipe_seed), |s, part| splitmix64(s ^ part))
}

fn generate(
    spec: &TensorSpec,
    recipe_seed: u64,
    t: u64,
    g: u64,
    w: u64,
) -> Result<ExpectedTensor, RecipeError> {
    let dtype = DType::from_numpy_name(&spec.dtype).ok_or_else(|| RecipeError::UnknownDtype {
        tensor: spec.name.clone(),
        dtype: spec.dtype.clone(),
    })?;
    let n = spec
        .shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= 1 << 28)
        .ok_or_else(|| RecipeError::TooLarge {
            tensor: spec.name.clone(),
            shape: spec.shape.clone(),
        })?;
    let seed = value_seed(recipe_seed, t, g, w);
    let r = |i: usize| splitmix64(seed.wrapping_add(i as u64));
    let bad_value = |v: &dyn std::fmt::Display| RecipeError::BadValue {
        tensor: spec.name.clone(),
        value: v.to_string(),
        dtype: dtype.numpy_name(),
    };

    if dtype == DType::Str {
        let words: Vec<String> = (0..n)
            .map(|i| format!("s{g}_{i}_{}", r(i) % 1000))
            .collect();
        let mut bytes = Vec::new();
        for word in &words {
            bytes.extend_from_slice(&(word.len() as u32).to_le_bytes());
            bytes.extend_from_slice(word.as_bytes());
        }
        return Ok(ExpectedTensor {
            dtype,
            shape: spec.shape.clone(),
            bytes,
            strings: Some(words),
        });
    }

    let mut cells: Vec<Cell> = match spec.pattern.as_str() {
        "step" => vec![Cell::Float(g as f64); n],
        "const" => {
            let v = spec
                .constant
                .as_ref()
                .ok_or_else(|| RecipeError::BadPattern {
                    tensor: spec.name.clone(),
                    pattern: "const without \"const\"".into(),
                })?;
            let num = Num::from_json(v).ok_or_else(|| bad_value(v))?;
            vec![num_cell(num); n]
        }
        "random" => {
            let (lo, hi) = match &spec.range {
                Some((lo, hi)) => (Num::from_number(lo), Num::from_number(hi)),
                None => dtype.default_range(),
            };
            if dtype == DType::Bool {
                (0..n).map(|i| Cell::Bool(r(i) >> 63 == 1)).collect()
            } else if dtype.is_float() {
                let (lo, hi) = (lo.as_f64(), hi.as_f64());
                (0..n)
                    .map(|i| {
                        let u = (r(i) >> 11) as f64 * 2f64.powi(-53);
                        Cell::Float(lo + (hi - lo) * u)
                    })
                    .collect()
            } else {
                let lo = lo.as_int().ok_or_else(|| bad_value(&format!("{lo:?}")))?;
                let hi = hi.as_int().ok_or_else(|| bad_value(&format!("{hi:?}")))?;
                // numpy: uint64 span, the remainder cast to int64, added to int64 lo (wrapping).
                let span = (hi - lo + 1) as u64;
                if span == 0 {
                    return Err(bad_value(&format!("range [{lo}, {hi}]")));
                }
                let lo = lo as i64;
                (0..n)
                    .map(|i| Cell::Int(i128::from(lo.wrapping_add((r(i) % span) as i64))))
                    .collect()
            }
        }
        other => {
            return Err(RecipeError::BadPattern {
                tensor: spec.name.clone(),
                pattern: other.to_owned(),
            })
        }
    };
    for inj in &spec.inject {
        if let Some(cell) = cells.get_mut(inj.index) {
            *cell = num_cell(Num::from_json(&inj.value).ok_or_else(|| bad_value(&inj.value))?);
        }
    }

    let mut bytes = Vec::with_capacity(n * dtype.item_size().unwrap_or(1));
    for cell in cells {
        store(dtype, cell, &mut bytes).ok_or_else(|| bad_value(&format!("{cell:?}")))?;
    }
    Ok(ExpectedTensor {
        dtype,
        shape: spec.shape.clone(),
        bytes,
        strings: None,
    })
}

fn num_cell(n: Num) -> Cell {
    match n {
        Num::Int(i) => Cell::Int(i),
        Num::Float(f) => Cell::Float(f),
    }
}

/// Appends one element in `dtype`, cast the way numpy casts on assignment / `astype`
/// (floats round to nearest even, float to int truncates, int to narrower int wraps).
/// `None` when numpy would refuse (NaN or inf into an integer dtype).
fn store(dtype: DType, cell: Cell, out: &mut Vec<u8>) -> Option<()> {
    let as_f64 = match cell {
        Cell::Float(f) => f,
        Cell::Int(i) => i as f64,
        Cell::Bool(b) => f64::from(u8::from(b)),
    };
    let as_int = || -> Option<i128> {
        match cell {
            Cell::Float(f) if f.is_finite() => Some(f.trunc() as i128),
            Cell::Float(_) => None,
            Cell::Int(i) => Some(i),
            Cell::Bool(b) => Some(i128::from(b)),
        }
    };
    match dtype {
        DType::Float16 => out.extend_from_slice(&half::f16::from_f64(as_f64).to_le_bytes()),
        DType::Float32 => out.extend_from_slice(&(as_f64 as f32).to_le_bytes()),
        DType::Float64 => out.extend_from_slice(&as_f64.to_le_bytes()),
        DType::Complex64 => {
            out.extend_from_slice(&(as_f64 as f32).to_le_bytes());
            out.extend_from_slice(&0f32.to_le_bytes());
        }
        DType::Complex128 => {
            out.extend_from_slice(&as_f64.to_le_bytes());
            out.extend_from_slice(&0f64.to_le_bytes());
        }
        DType::Bool => out.push(u8::from(match cell {
            Cell::Bool(b) => b,
            Cell::Int(i) => i != 0,
            Cell::Float(f) => f != 0.0,
        })),
        DType::Int8 => out.extend_from_slice(&(as_int()? as i8).to_le_bytes()),
        DType::Uint8 => out.extend_from_slice(&(as_int()? as u8).to_le_bytes()),
        DType::Int16 => out.extend_from_slice(&(as_int()? as i16).to_le_bytes()),
        DType::Uint16 => out.extend_from_slice(&(as_int()? as u16).to_le_bytes()),
        DType::Int32 => out.extend_from_slice(&(as_int()? as i32).to_le_bytes()),
        DType::Uint32 => out.extend_from_slice(&(as_int()? as u32).to_le_bytes()),
        DType::Int64 => out.extend_from_slice(&(as_int()? as i64).to_le_bytes()),
        DType::Uint64 => out.extend_from_slice(&(as_int()? as u64).to_le_bytes()),
        DType::Str => return None,
    }
    Some(())
}

/// One tensor record a fixture wrote, as listed by `fixture.py --manifest` (write order).
#[derive(Debug, Clone, Deserialize)]
pub struct ManifestRecord {
    /// Event file, relative to the trial directory.
    pub file: String,
    /// Worker name.
    pub worker: String,
    /// Worker index in the recipe.
    pub worker_index: u64,
    /// Global step.
    pub step: u64,
    /// Mode name (`TRAIN`, `EVAL`, `PREDICT`, `GLOBAL`).
    pub mode: String,
    /// Mode step.
    pub mode_step: u64,
    /// The record's tag (tensor name, or the reduction's name).
    pub tag: String,
    /// `raw`, `duplicate` or `reduction`.
    pub kind: String,
    /// Index of the recipe tensor this record comes from.
    pub tensor_index: usize,
    /// For reductions: `[name, abs]`.
    #[serde(default)]
    pub reduction: Option<(String, bool)>,
    /// numpy dtype name or `str`.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// sha256 of the canonical element bytes.
    pub sha256: String,
    /// Flat values when at most 64 elements.
    #[serde(default)]
    pub data: Option<Vec<Value>>,
}

/// Writes the trial of a preset with `tests/peer/fixture.py --manifest` into `out` and
/// returns the manifest (every tensor record written, in write order).
pub fn write_fixture_with_manifest(preset: &str, out: &Path) -> Vec<ManifestRecord> {
    let manifest = out.with_extension("manifest.json");
    let out_s = out.to_str().expect("utf-8 temp path");
    let manifest_s = manifest.to_str().expect("utf-8 temp path");
    crate::run_peer(
        "fixture.py",
        &[
            out_s,
            "--preset",
            preset,
            "--force",
            "-q",
            "--manifest",
            manifest_s,
        ],
    );
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("cannot read manifest {}: {e}", manifest.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("bad manifest {}: {e}", manifest.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn template_names_follow_python_format() {
        assert_eq!(format_template("layer_{i:02d}.w", 7).unwrap(), "layer_07.w");
        assert_eq!(format_template("l{i}", 12).unwrap(), "l12");
        assert_eq!(format_template("l{i:3d}", 5).unwrap(), "l  5");
        assert_eq!(format_template("{{x}}{i}", 1).unwrap(), "{x}1");
        assert!(format_template("{j}", 1).is_err());
        assert!(format_template("{i", 1).is_err());
    }

    #[test]
    fn unknown_recipe_keys_are_rejected() {
        let err = Recipe::from_json(r#"{"seed": 1, "sead": 2}"#, "inline").unwrap_err();
        assert!(matches!(err, RecipeError::Json { .. }), "{err}");
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
                            {"index": 1, "value": 9223372036854775807}]}]}"#,
            "inline",
        )
        .unwrap();
        let f = recipe.expected_values(0, 0, 0).unwrap();
        assert!(f32::from_le_bytes(f.bytes[0..4].try_into().unwrap()).is_nan());
        assert_eq!(&f.bytes[4..8], &(-0.0f32).to_le_bytes());
        let i = recipe.expected_values(1, 0, 0).unwrap();
        assert_eq!(&i.bytes[0..8], &i64::MIN.to_le_bytes());
        assert_eq!(&i.bytes[8..16], &i64::MAX.to_le_bytes());
    }

    #[test]
    fn random_values_stay_in_range() {
        let recipe = Recipe::from_json(
            r#"{"tensors": [{"name": "u", "shape": [1000], "dtype": "uint8", "range": [3, 9]},
                            {"name": "d", "shape": [1000], "dtype": "float64", "range": [2, 3]}]}"#,
            "inline",
        )
        .unwrap();
        let u = recipe.expected_values(0, 5, 1).unwrap();
        assert!(u.bytes.iter().all(|b| (3..=9).contains(b)));
        assert!(u.bytes.contains(&3) && u.bytes.contains(&9));
        let d = recipe.expected_values(1, 5, 1).unwrap();
        for c in d.bytes.chunks(8) {
            let v = f64::from_le_bytes(c.try_into().unwrap());
            assert!((2.0..3.0).contains(&v), "{v}");
        }
    }
}
