//! `smdebug synth RECIPE.json OUT`: writes the trial a fixture recipe describes with the Rust
//! hook, so that the trial the Python writer makes from the same recipe
//! (`tests/peer/fixture.py`) can be compared with it, file by file and through smdebug's
//! reader.
//!
//! The recipe format is the one of `tests/peer/fixture.py` (see `/tests/peer/presets`):
//! workers, a schedule of mode phases, the hook's save and reduction configs, collections
//! and tensors whose values come from a deterministic generator (SplitMix64, same
//! arithmetic as `tests/peer/peer_common.py::gen_values`). Each worker is one hook, run one
//! after the other.

use anyhow::{anyhow, bail, ensure, Context, Result};
use half::f16;
use ndarray::{ArrayD, IxDyn};
use serde_json::{Map, Number, Value};
use smdebug_config::{
    Collection, Mode, PyValue, Reduction, ReductionConfig, SaveConfig, SaveConfigMode,
};
use smdebug_hook::{Flavor, HookBuilder, ReductionShape, Tensor, WallTime};
use smdebug_index::END_OF_JOB_FILE;
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Options of `smdebug synth`.
#[derive(clap::Args)]
pub struct Args {
    /// The recipe (JSON, the format of tests/peer/fixture.py).
    recipe: PathBuf,
    /// Where to write the trial: a local directory or an `s3://` URL.
    out: String,
    /// Write only the worker with this index (one process per worker, e.g. for concurrent
    /// writers); default: every worker, one after the other.
    #[arg(long)]
    only_worker: Option<usize>,
    /// Print nothing.
    #[arg(short, long)]
    quiet: bool,
    /// When `training_job_end.ts` is written (if the recipe ends training): `recipe` — by
    /// the last worker, at its close; `never`; `only` — write nothing but the marker. Worker
    /// processes of one trial use `never`, and `only` once all of them have finished: a hook
    /// refuses a finished trial, so a worker that starts late must not find the marker.
    #[arg(long, value_enum, default_value_t = EndMarker::Recipe)]
    end_marker: EndMarker,
}

/// See [`Args::end_marker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EndMarker {
    /// Written by the recipe's last worker when it closes.
    Recipe,
    /// Not written.
    Never,
    /// Only the marker is written, no worker data.
    Only,
}

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

fn check_keys(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<()> {
    let mut unknown: Vec<&String> = obj
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    unknown.sort();
    ensure!(unknown.is_empty(), "unknown key(s) {unknown:?} in {what}");
    Ok(())
}

/// One tensor of the normalized recipe.
#[derive(Debug, Clone)]
struct TensorSpec {
    name: String,
    shape: Vec<usize>,
    dtype: String,
    pattern: String,
    range: Option<(Value, Value)>,
    constant: Option<Value>,
    inject: Vec<(usize, Value)>,
    collections: Vec<String>,
    workers: Option<Vec<usize>>,
    modes: Option<Vec<String>>,
    skip_steps: Vec<i64>,
    only_steps: Option<Vec<i64>>,
    write_empty_raw: bool,
    duplicate: bool,
}

/// The recipe, normalized as `fixture.py` normalizes it.
#[derive(Debug)]
struct Recipe {
    seed: u64,
    worker_names: Vec<String>,
    num_workers_meta: i64,
    collections_written_by: Vec<usize>,
    init_step: i64,
    schedule: Vec<(Mode, u64)>,
    default_save_config: SaveConfig,
    default_reduction_config: ReductionConfig,
    collections: Vec<Collection>,
    tensors: Vec<TensorSpec>,
    worker_skip_steps: BTreeMap<usize, Vec<i64>>,
    training_ended: bool,
    reduction_shape: ReductionShape,
    wall_time: Option<(f64, f64)>,
}

fn as_obj<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| anyhow!("{what} must be a JSON object"))
}

fn as_i64(v: &Value, what: &str) -> Result<i64> {
    v.as_i64()
        .ok_or_else(|| anyhow!("{what} must be an integer, not {v}"))
}

fn str_list(v: Option<&Value>, what: &str) -> Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| anyhow!("{what}: {x} is not a string"))
            })
            .collect(),
        Some(other) => bail!("{what} must be a list of strings, not {other}"),
    }
}

fn int_list(v: Option<&Value>, what: &str) -> Result<Vec<i64>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(|x| as_i64(x, what)).collect(),
        Some(other) => bail!("{what} must be a list of integers, not {other}"),
    }
}

fn save_config_mode(v: &Value, what: &str) -> Result<SaveConfigMode> {
    let o = as_obj(v, what)?;
    let mut c = SaveConfigMode::default();
    for (k, v) in o {
        match k.as_str() {
            "save_interval" => c.save_interval = as_i64(v, what)?,
            "start_step" => c.start_step = as_i64(v, what)?,
            "end_step" => {
                c.end_step = match v {
                    Value::Null => None,
                    v => Some(as_i64(v, what)?),
                }
            }
            "save_steps" => c.save_steps = int_list(Some(v), what)?,
            other => bail!("{what}: unknown save config key {other:?}"),
        }
    }
    Ok(c)
}

/// `fixture.py::save_config`: a flat dict is one rule for every mode, a dict keyed by mode
/// names is a per-mode config (given modes first, the rest unset).
///
/// `order` is the same object parsed with its key order kept (serde_json's map sorts keys,
/// but a per-mode config's mode order is written to the collections file).
fn save_config(v: &Value, order: Option<&PyValue>, what: &str) -> Result<Option<SaveConfig>> {
    if v.is_null() {
        return Ok(None);
    }
    let o = as_obj(v, what)?;
    let modes = ["TRAIN", "EVAL", "PREDICT", "GLOBAL"];
    if !o.is_empty() && o.keys().all(|k| modes.contains(&k.as_str())) {
        let mut per = Vec::new();
        let mut keys: Vec<(&String, &Value)> = o.iter().collect();
        if let Some(PyValue::Object(items)) = order {
            keys.sort_by_key(|(k, _)| items.iter().position(|(x, _)| x == *k));
        }
        for (k, v) in keys {
            let mode: Mode = k.parse().map_err(|_| anyhow!("{what}: bad mode {k}"))?;
            let c = if v.is_null() {
                None
            } else {
                Some(save_config_mode(v, what)?)
            };
            per.push((mode, c));
        }
        return Ok(Some(SaveConfig::from_modes(per)));
    }
    Ok(Some(SaveConfig::new(save_config_mode(v, what)?)))
}

fn reduction_config(v: &Value, what: &str) -> Result<Option<ReductionConfig>> {
    if v.is_null() {
        return Ok(None);
    }
    let o = as_obj(v, what)?;
    let mut c = ReductionConfig::default();
    let reds = |key: &str| -> Result<Vec<Reduction>> {
        str_list(o.get(key), what)?
            .iter()
            .map(|s| {
                s.parse()
                    .map_err(|_| anyhow!("{what}: unknown reduction {s:?}"))
            })
            .collect()
    };
    let norms = |key: &str| -> Result<Vec<Reduction>> {
        str_list(o.get(key), what)?
            .iter()
            .map(|s| s.parse().map_err(|_| anyhow!("{what}: unknown norm {s:?}")))
            .collect()
    };
    for k in o.keys() {
        ensure!(
            [
                "reductions",
                "abs_reductions",
                "norms",
                "abs_norms",
                "save_raw_tensor",
                "save_shape"
            ]
            .contains(&k.as_str()),
            "{what}: unknown reduction config key {k:?}"
        );
    }
    c.reductions = reds("reductions")?;
    c.abs_reductions = reds("abs_reductions")?;
    c.norms = norms("norms")?;
    c.abs_norms = norms("abs_norms")?;
    c.save_raw_tensor = o
        .get("save_raw_tensor")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    c.save_shape = o
        .get("save_shape")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // A name in the wrong list (`median`, a norm among reductions) is refused here, as the
    // collections file that would carry it is refused by smdebug.
    c.validate(what)?;
    Ok(Some(c))
}

/// Python's `name.format(i=i)` for the forms recipes use: `{i}`, `{i:Nd}`, `{i:0Nd}`.
fn format_template(name: &str, i: usize) -> Result<String> {
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
            let end = tail
                .find('}')
                .ok_or_else(|| anyhow!("template {name:?}: unclosed brace"))?;
            let spec = match tail[1..end].strip_prefix('i') {
                Some("") => "",
                Some(s) => s
                    .strip_prefix(':')
                    .ok_or_else(|| anyhow!("template {name:?}: unsupported field"))?,
                None => bail!("template {name:?}: unsupported field"),
            };
            let digits = spec.strip_suffix('d').unwrap_or(spec);
            let (zero, width) = match digits.strip_prefix('0') {
                Some(w) if !w.is_empty() => (true, w),
                _ => (false, digits),
            };
            let width: usize = if width.is_empty() {
                0
            } else {
                width
                    .parse()
                    .map_err(|_| anyhow!("template {name:?}: bad width"))?
            };
            if zero {
                out.push_str(&format!("{i:0width$}"));
            } else {
                out.push_str(&format!("{i:>width$}"));
            }
            rest = &tail[end + 1..];
        } else {
            bail!("template {name:?}: unmatched brace");
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn tensor_spec(o: &Map<String, Value>, name: String) -> Result<TensorSpec> {
    let what = format!("tensor {name:?}");
    let usize_list = |key: &str| -> Result<Option<Vec<usize>>> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Ok(Some(
                int_list(Some(v), &what)?
                    .into_iter()
                    .map(|x| usize::try_from(x).map_err(|_| anyhow!("{what}: {key} negative")))
                    .collect::<Result<_>>()?,
            )),
        }
    };
    let range = match o.get("range") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.len() == 2 => Some((a[0].clone(), a[1].clone())),
        Some(other) => bail!("{what}: range must be [lo, hi], not {other}"),
    };
    let mut inject = Vec::new();
    if let Some(Value::Array(items)) = o.get("inject") {
        for it in items {
            let io = as_obj(it, &what)?;
            let index = io
                .get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| anyhow!("{what}: inject needs an index"))?;
            let value = io
                .get("value")
                .cloned()
                .ok_or_else(|| anyhow!("{what}: inject needs a value"))?;
            inject.push((usize::try_from(index)?, value));
        }
    }
    Ok(TensorSpec {
        shape: usize_list("shape")?.unwrap_or_default(),
        dtype: o
            .get("dtype")
            .and_then(Value::as_str)
            .unwrap_or("float32")
            .to_owned(),
        pattern: o
            .get("pattern")
            .and_then(Value::as_str)
            .unwrap_or("random")
            .to_owned(),
        range,
        constant: o.get("const").cloned(),
        inject,
        collections: str_list(o.get("collections"), &what)?,
        workers: usize_list("workers")?,
        modes: match o.get("modes") {
            None | Some(Value::Null) => None,
            v => Some(str_list(v, &what)?),
        },
        skip_steps: int_list(o.get("skip_steps"), &what)?,
        only_steps: match o.get("only_steps") {
            None | Some(Value::Null) => None,
            v => Some(int_list(v, &what)?),
        },
        write_empty_raw: o
            .get("write_empty_raw")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        duplicate: o.get("duplicate").and_then(Value::as_bool).unwrap_or(false),
        name,
    })
}

impl Recipe {
    fn parse(text: &str, origin: &str) -> Result<Recipe> {
        let v: Value =
            serde_json::from_str(text).with_context(|| format!("{origin} is not valid JSON"))?;
        let ordered = smdebug_config::pyjson::parse(text)
            .map_err(|e| anyhow!("{origin} is not valid JSON: {e}"))?;
        let r = as_obj(&v, "the recipe")?;
        check_keys(r, RECIPE_KEYS, "recipe")?;
        let worker_names = match r.get("worker_names") {
            Some(v) if !v.is_null() => str_list(Some(v), "worker_names")?,
            _ => {
                let n = r.get("workers").map_or(Ok(1), |v| as_i64(v, "workers"))?;
                (0..n).map(|i| format!("worker_{i}")).collect()
            }
        };
        let n = worker_names.len();
        let mut collections = Vec::new();
        let ordered_colls = match ordered.get("collections") {
            Some(PyValue::Array(a)) => a.as_slice(),
            _ => &[],
        };
        for (ci, c) in r
            .get("collections")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let o = as_obj(c, "a collection")?;
            check_keys(o, COLLECTION_KEYS, "collection")?;
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| anyhow!("a collection has no name"))?;
            let what = format!("collection {name:?}");
            let mut coll = Collection::new(name);
            for p in str_list(o.get("include_regex"), &what)? {
                coll.include(&p)?;
            }
            for t in str_list(o.get("tensor_names"), &what)? {
                coll.add_tensor_name(t);
            }
            coll.save_config = save_config(
                o.get("save_config").unwrap_or(&Value::Null),
                ordered_colls.get(ci).and_then(|c| c.get("save_config")),
                &what,
            )?;
            coll.reduction_config =
                reduction_config(o.get("reduction_config").unwrap_or(&Value::Null), &what)?;
            coll.save_histogram = o
                .get("save_histogram")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            collections.push(coll);
        }
        let mut tensors = Vec::new();
        for t in r
            .get("tensors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let o = as_obj(t, "a tensor")?;
            check_keys(o, TENSOR_KEYS, "tensor")?;
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| anyhow!("a tensor has no name"))?;
            tensors.push(tensor_spec(o, name.to_owned())?);
        }
        for t in r
            .get("tensor_templates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let o = as_obj(t, "a tensor template")?;
            check_keys(o, TENSOR_KEYS, "tensor template")?;
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| anyhow!("a tensor template has no name"))?;
            let count = o.get("count").and_then(Value::as_u64).unwrap_or(0);
            for i in 0..usize::try_from(count)? {
                tensors.push(tensor_spec(o, format_template(name, i)?)?);
            }
        }
        // Explicit membership creates the collection (fixture.py's normalize).
        for t in &tensors {
            for c in &t.collections {
                if !collections.iter().any(|x| &x.name == c) {
                    collections.push(Collection::new(c.clone()));
                }
            }
        }
        let mut schedule = Vec::new();
        match r.get("schedule") {
            None | Some(Value::Null) => schedule.push((Mode::Train, 5)),
            Some(Value::Array(phases)) => {
                for p in phases {
                    let o = as_obj(p, "a schedule phase")?;
                    let mode = o
                        .get("mode")
                        .and_then(Value::as_str)
                        .ok_or_else(|| anyhow!("a schedule phase has no mode"))?;
                    let mode: Mode = mode
                        .parse()
                        .map_err(|_| anyhow!("unknown mode {mode:?} in schedule"))?;
                    let steps = o
                        .get("steps")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| anyhow!("a schedule phase has no steps"))?;
                    schedule.push((mode, steps));
                }
            }
            Some(other) => bail!("schedule must be a list, not {other}"),
        }
        let mut worker_skip_steps = BTreeMap::new();
        if let Some(Value::Object(o)) = r.get("worker_skip_steps") {
            for (k, v) in o {
                let w: usize = k
                    .parse()
                    .context("worker_skip_steps keys are worker indices")?;
                worker_skip_steps.insert(w, int_list(Some(v), "worker_skip_steps")?);
            }
        }
        let wall_time = match r.get("wall_time") {
            None | Some(Value::Null) => Some((1_700_000_000.0, 1.0)),
            Some(Value::String(s)) if s == "now" => None,
            Some(Value::Object(o)) => Some((
                o.get("base").and_then(Value::as_f64).unwrap_or(0.0),
                o.get("per_step").and_then(Value::as_f64).unwrap_or(0.0),
            )),
            Some(other) => bail!("wall_time must be an object or \"now\", not {other}"),
        };
        let reduction_shape = match r.get("reduction_shape").and_then(Value::as_str) {
            None | Some("0d") => ReductionShape::Scalar,
            Some("1d") => ReductionShape::OneElement,
            Some(other) => bail!("reduction_shape must be '0d' or '1d', not {other:?}"),
        };
        let default_save_config = match r.get("default_save_config") {
            None => Some(SaveConfig::new(SaveConfigMode::every(1))),
            Some(v) => save_config(v, ordered.get("default_save_config"), "default_save_config")?,
        }
        .unwrap_or_default();
        let default_reduction_config = match r.get("default_reduction_config") {
            None => Some(ReductionConfig::raw_only()),
            Some(v) => reduction_config(v, "default_reduction_config")?,
        }
        .unwrap_or_else(ReductionConfig::raw_only);
        let collections_written_by = match r.get("collections_written_by") {
            Some(v) if !v.is_null() => int_list(Some(v), "collections_written_by")?
                .into_iter()
                .map(|x| usize::try_from(x).map_err(anyhow::Error::from))
                .collect::<Result<_>>()?,
            _ => (0..n).collect(),
        };
        Ok(Recipe {
            seed: r.get("seed").map_or(Ok(0), |v| as_i64(v, "seed"))? as u64,
            num_workers_meta: match r.get("num_workers_meta") {
                Some(v) if !v.is_null() => as_i64(v, "num_workers_meta")?,
                _ => n as i64,
            },
            worker_names,
            collections_written_by,
            init_step: r
                .get("init_step")
                .map_or(Ok(0), |v| as_i64(v, "init_step"))?,
            schedule,
            default_save_config,
            default_reduction_config,
            collections,
            tensors,
            worker_skip_steps,
            training_ended: r
                .get("training_ended")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            reduction_shape,
            wall_time,
        })
    }
}

// ------------------------------------------------------------------ value generator

fn splitmix64(x: u64) -> u64 {
    let x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn value_seed(recipe_seed: u64, t: u64, g: u64, w: u64) -> u64 {
    [t, g, w]
        .into_iter()
        .fold(splitmix64(recipe_seed), |s, part| splitmix64(s ^ part))
}

/// A recipe number: JSON integers stay integers (numpy assigns ints and floats
/// differently), the special strings are floats.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
    Bool(bool),
}

fn num(v: &Value) -> Result<Num> {
    Ok(match v {
        Value::Number(n) => number(n),
        Value::String(s) => Num::Float(match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "-0.0" => -0.0,
            _ => bail!("{s:?} is not a number"),
        }),
        Value::Bool(b) => Num::Int(i128::from(*b)),
        other => bail!("{other} is not a number"),
    })
}

fn number(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

impl Num {
    fn f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
            Num::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// numpy's cast to an integer dtype: truncation; NaN and infinities are refused.
    fn int(self) -> Result<i128> {
        match self {
            Num::Int(i) => Ok(i),
            Num::Float(f) if f.is_finite() => Ok(f.trunc() as i128),
            Num::Float(f) => bail!("{f} cannot be stored in an integer tensor"),
            Num::Bool(b) => Ok(i128::from(b)),
        }
    }

    fn truthy(self) -> bool {
        match self {
            Num::Int(i) => i != 0,
            Num::Float(f) => f != 0.0,
            Num::Bool(b) => b,
        }
    }
}

fn build<T: Clone>(shape: &[usize], cells: &[Num], f: impl Fn(Num) -> Result<T>) -> Result<Tensor>
where
    Tensor: From<ArrayD<T>>,
{
    let v: Vec<T> = cells.iter().map(|&c| f(c)).collect::<Result<_>>()?;
    Ok(Tensor::from(ArrayD::from_shape_vec(IxDyn(shape), v)?))
}

/// The value of tensor `t` at global step `g` for worker index `w`.
fn generate(spec: &TensorSpec, seed: u64, t: u64, g: i64, w: u64) -> Result<Tensor> {
    let n = spec
        .shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= 1 << 28)
        .ok_or_else(|| anyhow!("tensor {:?}: shape too large", spec.name))?;
    let seed = value_seed(seed, t, g as u64, w);
    let r = |i: usize| splitmix64(seed.wrapping_add(i as u64));
    if spec.dtype == "str" {
        let words: Vec<String> = (0..n)
            .map(|i| format!("s{g}_{i}_{}", r(i) % 1000))
            .collect();
        return Ok(Tensor::from(ArrayD::from_shape_vec(
            IxDyn(&spec.shape),
            words,
        )?));
    }
    let is_float = matches!(
        spec.dtype.as_str(),
        "float16" | "float32" | "float64" | "complex64" | "complex128"
    );
    let mut cells: Vec<Num> = match spec.pattern.as_str() {
        "step" => vec![Num::Float(g as f64); n],
        "const" => {
            let c = spec
                .constant
                .as_ref()
                .ok_or_else(|| anyhow!("tensor {:?}: const pattern needs \"const\"", spec.name))?;
            vec![num(c)?; n]
        }
        "random" => {
            let (lo, hi) = match &spec.range {
                Some((lo, hi)) => (num(lo)?, num(hi)?),
                None => match spec.dtype.as_str() {
                    "int8" => (Num::Int(-128), Num::Int(127)),
                    "uint8" => (Num::Int(0), Num::Int(255)),
                    "uint16" | "uint32" | "uint64" => (Num::Int(0), Num::Int(1000)),
                    "int16" | "int32" | "int64" => (Num::Int(-1000), Num::Int(1000)),
                    _ => (Num::Float(-1.0), Num::Float(1.0)),
                },
            };
            if spec.dtype == "bool" {
                (0..n).map(|i| Num::Bool(r(i) >> 63 == 1)).collect()
            } else if is_float {
                let (lo, hi) = (lo.f64(), hi.f64());
                (0..n)
                    .map(|i| {
                        let u = (r(i) >> 11) as f64 * 2f64.powi(-53);
                        Num::Float(lo + (hi - lo) * u)
                    })
                    .collect()
            } else {
                let (lo, hi) = (lo.int()?, hi.int()?);
                let span = (hi - lo + 1) as u64;
                ensure!(span != 0, "tensor {:?}: empty range", spec.name);
                let lo = lo as i64;
                (0..n)
                    .map(|i| Num::Int(i128::from(lo.wrapping_add((r(i) % span) as i64))))
                    .collect()
            }
        }
        other => bail!("tensor {:?}: unknown pattern {other:?}", spec.name),
    };
    for (index, value) in &spec.inject {
        if let Some(cell) = cells.get_mut(*index) {
            *cell = num(value)?;
        }
    }
    let s = &spec.shape;
    match spec.dtype.as_str() {
        "float16" => build(s, &cells, |c| Ok(f16::from_f64(c.f64()))),
        "float32" => build(s, &cells, |c| Ok(c.f64() as f32)),
        "float64" => build(s, &cells, |c| Ok(c.f64())),
        "complex64" => build(s, &cells, |c| {
            Ok(smdebug_record::Complex32::new(c.f64() as f32, 0.0))
        }),
        "complex128" => build(s, &cells, |c| {
            Ok(smdebug_record::Complex64::new(c.f64(), 0.0))
        }),
        "bool" => build(s, &cells, |c| Ok(c.truthy())),
        "int8" => build(s, &cells, |c| Ok(c.int()? as i8)),
        "uint8" => build(s, &cells, |c| Ok(c.int()? as u8)),
        "int16" => build(s, &cells, |c| Ok(c.int()? as i16)),
        "uint16" => build(s, &cells, |c| Ok(c.int()? as u16)),
        "int32" => build(s, &cells, |c| Ok(c.int()? as i32)),
        "uint32" => build(s, &cells, |c| Ok(c.int()? as u32)),
        "int64" => build(s, &cells, |c| Ok(c.int()? as i64)),
        "uint64" => build(s, &cells, |c| Ok(c.int()? as u64)),
        other => bail!("tensor {:?}: unknown dtype {other:?}", spec.name),
    }
}

// ------------------------------------------------------------------------- write

fn write_worker(
    recipe: &Recipe,
    out: &str,
    w: usize,
    end_marker: EndMarker,
) -> Result<smdebug_hook::HookStats> {
    let mut b = HookBuilder::new(out)
        .without_default_collections()
        .worker(recipe.worker_names[w].clone(), recipe.num_workers_meta)
        .save_config(recipe.default_save_config.clone())
        .reduction_config(recipe.default_reduction_config.clone())
        .include_collections(recipe.collections.iter().map(|c| c.name.clone()))
        // The recipe's init_step is the number of the first step; a callback hook's
        // init_step is the value before its first increment.
        .init_step(recipe.init_step - 1)
        .reduction_flavor(Flavor::Numpy)
        .reduction_shape(recipe.reduction_shape)
        .write_collections(recipe.collections_written_by.contains(&w))
        // Every worker's hook would write the end marker at close, and a later hook refuses
        // a finished trial: only the last worker of the recipe ends it.
        .end_marker(
            end_marker == EndMarker::Recipe
                && recipe.training_ended
                && w + 1 == recipe.worker_names.len(),
        );
    if let Some((base, per_step)) = recipe.wall_time {
        b = b.wall_time(WallTime::PerStep(Arc::new(move |g| {
            base + per_step * g as f64
        })));
    }
    for c in &recipe.collections {
        b = b.collection(c.clone());
    }
    let mut hook = b.build()?;
    let mine: Vec<(usize, &TensorSpec)> = recipe
        .tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.workers.as_ref().is_none_or(|ws| ws.contains(&w)))
        .collect();
    for (_, t) in &mine {
        for c in &t.collections {
            hook.get_collection(c).add_tensor_name(t.name.clone());
        }
    }
    for (_, t) in &mine {
        hook.declare_tensor(&t.name)?;
    }
    let skip = recipe.worker_skip_steps.get(&w);
    for &(mode, steps) in &recipe.schedule {
        hook.set_mode(mode);
        for _ in 0..steps {
            hook.step()?;
            let g = hook.global_step();
            if skip.is_some_and(|s| s.contains(&g)) {
                continue;
            }
            for &(ti, t) in &mine {
                if t.modes
                    .as_ref()
                    .is_some_and(|m| !m.iter().any(|x| x == mode.name()))
                    || t.skip_steps.contains(&g)
                    || t.only_steps.as_ref().is_some_and(|o| !o.contains(&g))
                {
                    continue;
                }
                if !hook.should_save(&t.name)? {
                    continue;
                }
                let raw_due = hook.raw_due(&t.name)?;
                let value = generate(t, recipe.seed, ti as u64, g, w as u64)?;
                let empty = value.is_empty();
                // `write_empty_raw` and `duplicate` reproduce what fixture.py does with
                // smdebug's FileWriter directly; the hook itself never writes them.
                let forced = (empty && t.write_empty_raw && raw_due).then(|| value.clone());
                hook.save(&t.name, value)?;
                if let Some(v) = forced {
                    hook.write_raw_record(&t.name, v)?;
                }
                if t.duplicate {
                    let second = generate(t, recipe.seed, ti as u64, g, w as u64 + 1000)?;
                    hook.write_raw_record(&t.name, second)?;
                }
            }
        }
    }
    Ok(hook.close()?)
}

pub fn run(args: &Args, out: &mut impl std::io::Write) -> Result<()> {
    let text = std::fs::read_to_string(&args.recipe)
        .with_context(|| format!("cannot read recipe {}", args.recipe.display()))?;
    let recipe = Recipe::parse(&text, &args.recipe.display().to_string())?;
    let workers: Vec<usize> = match args.only_worker {
        Some(w) => {
            ensure!(
                w < recipe.worker_names.len(),
                "--only-worker {w}: the recipe has {} workers",
                recipe.worker_names.len()
            );
            vec![w]
        }
        None => (0..recipe.worker_names.len()).collect(),
    };
    if args.end_marker == EndMarker::Only {
        if recipe.training_ended {
            let store = BlockingStore::open(&Location::parse(&args.out)?)?;
            store.put(END_OF_JOB_FILE, Bytes::new())?;
        }
        if !args.quiet {
            writeln!(out, "ended {}", args.out)?;
        }
        return Ok(());
    }
    let mut records = 0;
    for w in workers {
        records += write_worker(&recipe, &args.out, w, args.end_marker)
            .with_context(|| format!("worker {}", recipe.worker_names[w]))?
            .records;
    }
    if !args.quiet {
        writeln!(out, "wrote {}: {records} tensor records", args.out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_matches_the_reference_sequence() {
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        let spec = tensor_spec(
            serde_json::json!({"name": "x", "shape": [3], "dtype": "uint8", "range": [3, 9]})
                .as_object()
                .unwrap(),
            "x".into(),
        )
        .unwrap();
        let t = generate(&spec, 1, 0, 0, 0).unwrap();
        let a = t.as_array::<u8>().unwrap();
        assert!(a.iter().all(|v| (3..=9).contains(v)));
    }

    #[test]
    fn templates_follow_python_format() {
        assert_eq!(format_template("layer_{i:02d}.w", 7).unwrap(), "layer_07.w");
        assert_eq!(format_template("l{i}", 12).unwrap(), "l12");
        assert!(format_template("{j}", 1).is_err());
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(Recipe::parse(r#"{"sead": 1}"#, "inline").is_err());
        assert!(Recipe::parse(r#"{"tensors": [{"name": "a", "shpe": []}]}"#, "inline").is_err());
    }

    #[test]
    fn writes_a_small_trial_and_refuses_to_overwrite_it() {
        let dir = tempfile::tempdir().unwrap();
        let recipe = dir.path().join("r.json");
        std::fs::write(
            &recipe,
            r#"{"seed": 3, "schedule": [{"mode": "TRAIN", "steps": 2}],
                "collections": [{"name": "all", "include_regex": [".*"]}],
                "tensors": [{"name": "a", "shape": [2]}, {"name": "e", "shape": [0], "write_empty_raw": true}]}"#,
        )
        .unwrap();
        let out = dir.path().join("t");
        let args = Args {
            recipe: recipe.clone(),
            out: out.to_str().unwrap().into(),
            only_worker: None,
            quiet: false,
            end_marker: EndMarker::Recipe,
        };
        let mut text = Vec::new();
        run(&args, &mut text).unwrap();
        assert!(String::from_utf8(text)
            .unwrap()
            .contains("4 tensor records"));
        assert!(out
            .join("events/000000000001/000000000001_worker_0.tfevents")
            .exists());
        assert!(out
            .join("collections/000000000/worker_0_collections.json")
            .exists());
        assert!(run(&args, &mut Vec::new()).is_err());
        assert!(out.join("training_job_end.ts").exists());

        // Worker processes of one trial: no marker until `only` ends it.
        let other = dir.path().join("u");
        let with = |end_marker| Args {
            recipe: recipe.clone(),
            out: other.to_str().unwrap().into(),
            only_worker: Some(0),
            quiet: true,
            end_marker,
        };
        run(&with(EndMarker::Never), &mut Vec::new()).unwrap();
        assert!(!other.join("training_job_end.ts").exists());
        run(&with(EndMarker::Only), &mut Vec::new()).unwrap();
        assert!(other.join("training_job_end.ts").exists());
    }
}
