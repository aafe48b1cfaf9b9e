//! Reading a recipe: the JSON text parsed as Python's `json` reads it
//! ([`smdebug_config::pyjson`]), deserialized into the recipe's keys with serde (unknown keys
//! refused, as `fixture.py` refuses them; an error names the field by its path; the value
//! forms are in `recipe_forms.rs`), then normalized as `fixture.py`'s `normalize` does it.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use smdebug_config::pyjson::{self, PyValue};
use smdebug_config::{Collection, PyValueDeserializer};

use crate::error::{Result, SynthError};
use crate::recipe::Recipe;
use crate::recipe_forms::{
    ints, DTypeName, Entries, Given, Int, ModeName, Num, PatternName, ReductionConfigSpec,
    ReductionShapeName, SaveConfigSpec,
};
use crate::spec::{Pattern, Phase, TensorSpec};

impl Recipe {
    /// Parses a recipe from JSON text; `origin` names it in errors. Unknown keys are refused,
    /// as `fixture.py` refuses them.
    pub fn from_json(text: &str, origin: &str) -> Result<Recipe> {
        let v = pyjson::parse(text).map_err(|source| SynthError::Json {
            origin: origin.to_owned(),
            source,
        })?;
        let bad = |b: Bad| SynthError::Recipe {
            origin: origin.to_owned(),
            field: b.field,
            message: b.message,
        };
        let raw: RecipeKeys = serde_path_to_error::deserialize(PyValueDeserializer::new(&v))
            .map_err(|e| {
                let field = match e.path().to_string() {
                    // The document itself (an unknown key at the top is reported here).
                    p if p == "." => "recipe".to_owned(),
                    p => p,
                };
                bad(Bad {
                    field,
                    message: e.into_inner().to_string(),
                })
            })?;
        raw.normalize().map_err(bad)
    }

    /// Reads a recipe file.
    pub fn load(path: &Path) -> Result<Recipe> {
        let text = std::fs::read_to_string(path).map_err(|source| SynthError::Io {
            path: path.to_owned(),
            source,
        })?;
        Recipe::from_json(&text, &path.display().to_string())
    }
}

/// Where a recipe is wrong and why, found after deserialization (the origin is added by
/// [`Recipe::from_json`]).
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

// ------------------------------------------------------------------------------ recipe keys

/// The keys of a recipe.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeKeys {
    #[serde(default)]
    description: Given<String>,
    #[serde(default)]
    seed: Given<Int<i128>>,
    /// Read only when `worker_names` is absent, as `fixture.py` reads it.
    #[serde(default)]
    workers: Option<PyValue>,
    #[serde(default)]
    worker_names: Option<Vec<String>>,
    #[serde(default)]
    num_workers_meta: Option<Int<i64>>,
    #[serde(default)]
    collections_written_by: Option<Vec<Int<usize>>>,
    #[serde(default)]
    init_step: Given<Int<i64>>,
    #[serde(default)]
    schedule: Option<Vec<PhaseKeys>>,
    /// `null` is `SaveConfig()`; absent, the recipe's default.
    #[serde(default)]
    default_save_config: Given<Option<SaveConfigSpec>>,
    #[serde(default)]
    default_reduction_config: Option<ReductionConfigSpec>,
    #[serde(default)]
    collections: Option<Vec<CollectionKeys>>,
    #[serde(default)]
    tensors: Option<Vec<TensorKeys>>,
    #[serde(default)]
    tensor_templates: Option<Vec<TensorKeys>>,
    #[serde(default)]
    worker_skip_steps: Option<Entries<Vec<Int<i64>>>>,
    #[serde(default)]
    training_ended: Given<bool>,
    #[serde(default)]
    reduction_shape: Option<ReductionShapeName>,
    #[serde(default)]
    wall_time: Option<WallTime>,
}

/// One phase of `schedule`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseKeys {
    mode: ModeName,
    steps: Int<u64>,
}

/// One of `collections`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectionKeys {
    name: String,
    #[serde(default)]
    include_regex: Given<Vec<String>>,
    #[serde(default)]
    tensor_names: Given<Vec<String>>,
    #[serde(default)]
    save_config: Option<SaveConfigSpec>,
    #[serde(default)]
    reduction_config: Option<ReductionConfigSpec>,
    #[serde(default)]
    save_histogram: Given<bool>,
}

/// One of `tensors` or `tensor_templates` (whose `name` is a template and which have a
/// `count`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorKeys {
    name: String,
    #[serde(default)]
    shape: Given<Vec<Int<usize>>>,
    #[serde(default)]
    dtype: Given<DTypeName>,
    #[serde(default)]
    pattern: Given<PatternName>,
    #[serde(default)]
    range: Option<(Num, Num)>,
    #[serde(default, rename = "const")]
    constant: Option<Num>,
    #[serde(default)]
    inject: Given<Vec<InjectKeys>>,
    #[serde(default)]
    collections: Given<Vec<String>>,
    #[serde(default)]
    workers: Option<Vec<Int<usize>>>,
    #[serde(default)]
    modes: Option<Vec<ModeName>>,
    #[serde(default)]
    skip_steps: Given<Vec<Int<i64>>>,
    #[serde(default)]
    only_steps: Option<Vec<Int<i64>>>,
    #[serde(default)]
    write_empty_raw: Given<bool>,
    #[serde(default)]
    duplicate: Given<bool>,
    /// An output of normalization: read back and ignored.
    #[serde(default, rename = "index")]
    _index: IgnoredAny,
    /// A template's count; read only for templates.
    #[serde(default)]
    count: Given<PyValue>,
}

/// One `inject` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InjectKeys {
    index: Int<usize>,
    value: Num,
}

/// `wall_time`: `"now"`, or `{"base", "per_step"}` (each absent or `null` is 0).
enum WallTime {
    Now,
    Linear(f64, f64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WallTimeKeys {
    #[serde(default)]
    base: Option<Num>,
    #[serde(default)]
    per_step: Option<Num>,
}

impl<'de> Deserialize<'de> for WallTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WallTime;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("{\"base\", \"per_step\"} or \"now\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<WallTime, E> {
                match s {
                    "now" => Ok(WallTime::Now),
                    _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                }
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<WallTime, A::Error> {
                let k = WallTimeKeys::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let part = |n: Option<Num>| n.map_or(0.0, Num::to_f64);
                Ok(WallTime::Linear(part(k.base), part(k.per_step)))
            }
        }
        d.deserialize_any(V)
    }
}

// ------------------------------------------------------------------------------ normalize

/// A value kept as read, deserialized now (its path given by the caller).
fn read_later<'de, T: Deserialize<'de>>(v: &'de PyValue, field: &str) -> P<T> {
    T::deserialize(PyValueDeserializer::new(v)).or_else(|e| bad(field, e.to_string()))
}

impl TensorKeys {
    /// The tensor's spec under `name` (for templates, each expanded name).
    fn spec(self, name: String, field: &str) -> P<TensorSpec> {
        let mut t = TensorSpec::new(name, Vec::new());
        if let Some(shape) = self.shape.0 {
            t.shape = ints(shape);
        }
        if let Some(DTypeName(d)) = self.dtype.0 {
            t.dtype = d;
        }
        if let Some(PatternName(p)) = self.pattern.0 {
            t.pattern = p;
        }
        t.range = self.range.map(|(lo, hi)| (lo.0, hi.0));
        t.constant = self.constant.map(|c| c.0);
        if let Some(inject) = self.inject.0 {
            t.inject = inject.into_iter().map(|i| (i.index.0, i.value.0)).collect();
        }
        if let Some(c) = self.collections.0 {
            t.collections = c;
        }
        t.workers = self.workers.map(ints);
        t.modes = self.modes.map(|m| m.into_iter().map(|m| m.0).collect());
        if let Some(s) = self.skip_steps.0 {
            t.skip_steps = ints(s);
        }
        t.only_steps = self.only_steps.map(ints);
        if let Some(b) = self.write_empty_raw.0 {
            t.write_empty_raw = b;
        }
        if let Some(b) = self.duplicate.0 {
            t.duplicate = b;
        }
        if t.pattern == Pattern::Const && t.constant.is_none() {
            return bad(field, "pattern \"const\" needs a \"const\" value");
        }
        Ok(t)
    }
}

impl CollectionKeys {
    fn build(self, field: &str) -> P<Collection> {
        let mut c = Collection::new(self.name);
        for p in self.include_regex.0.unwrap_or_default() {
            if let Err(e) = c.include(&p) {
                return bad(&format!("{field}.include_regex"), e.to_string());
            }
        }
        for t in self.tensor_names.0.unwrap_or_default() {
            c.add_tensor_name(t);
        }
        c.save_config = self.save_config.map(|s| s.0);
        c.reduction_config = self.reduction_config.map(ReductionConfigSpec::build);
        if let Some(b) = self.save_histogram.0 {
            c.save_histogram = b;
        }
        Ok(c)
    }
}

impl RecipeKeys {
    /// The recipe, normalized as `fixture.py`'s `normalize` does it.
    fn normalize(self) -> P<Recipe> {
        let mut r = Recipe::default();
        if let Some(d) = self.description.0 {
            r.description = d;
        }
        if let Some(Int(seed)) = self.seed.0 {
            // `int(seed) & MASK64`.
            r.seed = seed as u64;
        }
        r.worker_names = match (self.worker_names, &self.workers) {
            (Some(names), _) => names,
            (None, Some(x)) if *x != PyValue::Null => {
                let Int(n) = read_later::<Int<usize>>(x, "workers")?;
                if n > 1 << 16 {
                    return bad("workers", format!("{n} workers: at most 65536"));
                }
                (0..n).map(|i| format!("worker_{i}")).collect()
            }
            _ => vec!["worker_0".into()],
        };
        let n = r.worker_names.len();
        r.num_workers_meta = self.num_workers_meta.map_or(n as i64, |i| i.0);
        r.collections_written_by = self
            .collections_written_by
            .map_or_else(|| (0..n).collect(), ints);
        if let Some(Int(i)) = self.init_step.0 {
            r.init_step = i;
        }
        if let Some(schedule) = self.schedule {
            r.schedule = schedule
                .into_iter()
                .map(|p| Phase {
                    mode: p.mode.0,
                    steps: p.steps.0,
                })
                .collect();
        }
        if let Some(c) = self.default_save_config.0 {
            r.default_save_config = c.map(|c| c.0).unwrap_or_default();
        }
        if let Some(c) = self.default_reduction_config {
            r.default_reduction_config = c.build();
        }
        for (i, c) in self.collections.into_iter().flatten().enumerate() {
            r.collections.push(c.build(&format!("collections[{i}]"))?);
        }
        for (i, t) in self.tensors.into_iter().flatten().enumerate() {
            let name = t.name.clone();
            r.tensors.push(t.spec(name, &format!("tensors[{i}]"))?);
        }
        for (i, mut t) in self.tensor_templates.into_iter().flatten().enumerate() {
            let f = format!("tensor_templates[{i}]");
            let count: usize = match t.count.0.take() {
                Some(c) => read_later::<Int<usize>>(&c, &format!("{f}.count"))?.0,
                None => return bad(&f, "a template needs a \"count\""),
            };
            if count > 1 << 20 {
                return bad(&format!("{f}.count"), format!("{count}: at most 2^20"));
            }
            let template = std::mem::take(&mut t.name);
            let spec = t.spec(String::new(), &f)?;
            for k in 0..count {
                let mut s = spec.clone();
                s.name = format_template(&template, k, &format!("{f}.name"))?;
                r.tensors.push(s);
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
        if let Some(Entries(entries)) = self.worker_skip_steps {
            for (k, s) in entries {
                let Ok(w) = k.parse::<usize>() else {
                    return bad(&format!("worker_skip_steps.{k}"), "keys are worker indices");
                };
                r.worker_skip_steps.insert(w, ints(s));
            }
        }
        if let Some(b) = self.training_ended.0 {
            r.training_ended = b;
        }
        if let Some(ReductionShapeName(s)) = self.reduction_shape {
            r.reduction_shape = s;
        }
        if let Some(w) = self.wall_time {
            r.wall_time = match w {
                WallTime::Now => None,
                WallTime::Linear(base, per_step) => Some((base, per_step)),
            };
        }
        Ok(r)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
