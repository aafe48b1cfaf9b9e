//! How a recipe writes its values, as serde readers: where a recipe reads differently from
//! serde's defaults, a small type here says how. [`Int`]: Python's `True`/`False` are
//! integers, and any size is read before the range check. [`Num`]: integers stay integers,
//! `"nan"`-like strings are floats. [`Given`]: a key whose `null` is an error rather than
//! "absent". [`SaveConfigSpec`]: a dict keyed by mode names is a per-mode config. Mode,
//! pattern, dtype and reduction names are read from their exact strings.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use smdebug_config::{Mode, Reduction, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_hook::ReductionShape;
use smdebug_record::DType;

use crate::spec::{Pattern, RecipeNumber};

/// A key whose `null` is an error, not "absent" (`Option` reads `null` as `None`).
pub(crate) struct Given<T>(pub(crate) Option<T>);

impl<T> Default for Given<T> {
    fn default() -> Self {
        Given(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Given<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        T::deserialize(d).map(|t| Given(Some(t)))
    }
}

/// An integer as Python's `int()` of a JSON value reads it: `true`/`false` are 1/0, and any
/// size is read, then checked against `T` ("what" names `T`'s range in the error).
pub(crate) struct Int<T>(pub(crate) T);

/// The names of the ranges [`Int`] checks, for its error messages.
pub(crate) trait IntRange: TryFrom<i128> {
    const WHAT: &'static str;
}

impl IntRange for i64 {
    const WHAT: &'static str = "a 64-bit integer";
}

impl IntRange for usize {
    const WHAT: &'static str = "a non-negative integer";
}

impl IntRange for u64 {
    const WHAT: &'static str = "a non-negative integer";
}

impl IntRange for i128 {
    const WHAT: &'static str = "an integer within 128 bits";
}

impl<'de, T: IntRange> Deserialize<'de> for Int<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: IntRange> V<T> {
            fn fit<E: de::Error>(i: i128) -> std::result::Result<Int<T>, E> {
                T::try_from(i)
                    .map(Int)
                    .map_err(|_| E::custom(format!("expected {}, not {i}", T::WHAT)))
            }
        }
        impl<T: IntRange> Visitor<'_> for V<T> {
            type Value = Int<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> std::result::Result<Int<T>, E> {
                Self::fit(i128::from(b))
            }
            fn visit_i64<E: de::Error>(self, i: i64) -> std::result::Result<Int<T>, E> {
                Self::fit(i128::from(i))
            }
            fn visit_u64<E: de::Error>(self, u: u64) -> std::result::Result<Int<T>, E> {
                Self::fit(i128::from(u))
            }
            fn visit_i128<E: de::Error>(self, i: i128) -> std::result::Result<Int<T>, E> {
                Self::fit(i)
            }
            fn visit_u128<E: de::Error>(self, u: u128) -> std::result::Result<Int<T>, E> {
                match i128::try_from(u) {
                    Ok(i) => Self::fit(i),
                    Err(_) => Err(E::custom("expected an integer within 128 bits")),
                }
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

pub(crate) fn ints<T>(v: Vec<Int<T>>) -> Vec<T> {
    v.into_iter().map(|Int(i)| i).collect()
}

/// A [`RecipeNumber`] as a recipe writes it.
#[derive(Clone, Copy)]
pub(crate) struct Num(pub(crate) RecipeNumber);

impl<'de> Deserialize<'de> for Num {
    /// JSON integers (and `true`/`false`) stay integers; literals with a fraction or exponent
    /// and the strings `"nan"`, `"inf"`, `"-inf"`, `"-0.0"` are floats.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or \"nan\", \"inf\", \"-inf\", \"-0.0\"")
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Int(i128::from(b))))
            }
            fn visit_i64<E>(self, i: i64) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Int(i128::from(i))))
            }
            fn visit_u64<E>(self, u: u64) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Int(i128::from(u))))
            }
            fn visit_i128<E>(self, i: i128) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Int(i)))
            }
            fn visit_u128<E: de::Error>(self, u: u128) -> std::result::Result<Num, E> {
                i128::try_from(u)
                    .map(|i| Num(RecipeNumber::Int(i)))
                    .map_err(|_| E::custom("expected an integer within 128 bits"))
            }
            fn visit_f64<E>(self, f: f64) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Float(f)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Num, E> {
                Ok(Num(RecipeNumber::Float(match s {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "-0.0" => -0.0,
                    _ => return Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                })))
            }
        }
        d.deserialize_any(V)
    }
}

impl Num {
    /// The number as a float (`float(x)` in Python).
    pub(crate) fn to_f64(self) -> f64 {
        match self.0 {
            RecipeNumber::Float(f) => f,
            RecipeNumber::Int(i) => i as f64,
        }
    }
}

/// A value named by one of a fixed set of strings.
macro_rules! named {
    ($(#[$doc:meta])* $name:ident($ty:ty), $expecting:literal, { $($text:literal => $value:expr),+ $(,)? }) => {
        $(#[$doc])*
        pub(crate) struct $name(pub(crate) $ty);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<$name, E> {
                        match s {
                            $($text => Ok($name($value)),)+
                            _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                        }
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

named!(
    /// Mode names as the recipe format has them: exact upper case.
    ModeName(Mode), "one of TRAIN, EVAL, PREDICT, GLOBAL",
    { "TRAIN" => Mode::Train, "EVAL" => Mode::Eval, "PREDICT" => Mode::Predict, "GLOBAL" => Mode::Global }
);
named!(
    /// `pattern`.
    PatternName(Pattern), "random, step or const",
    { "random" => Pattern::Random, "step" => Pattern::Step, "const" => Pattern::Const }
);
named!(
    /// `reduction_shape`.
    ReductionShapeName(ReductionShape), "\"0d\" or \"1d\"",
    { "0d" => ReductionShape::Scalar, "1d" => ReductionShape::OneElement }
);

/// A numpy dtype name (or `str`).
pub(crate) struct DTypeName(pub(crate) DType);

impl<'de> Deserialize<'de> for DTypeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        DType::from_name(&name).map(DTypeName).ok_or_else(|| {
            de::Error::invalid_value(
                de::Unexpected::Str(&name),
                &"a numpy dtype name (float16 … complex128, bool) or str",
            )
        })
    }
}

/// A reduction name allowed in one list of a reduction config: one reduction type serves
/// both lists, and each list takes only the names smdebug allows in it (a norm among the
/// reductions is refused, as smdebug refuses it). `NORMS` picks the list.
pub(crate) struct Allowed<const NORMS: bool>(pub(crate) Reduction);

impl<'de, const NORMS: bool> Deserialize<'de> for Allowed<NORMS> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (allowed, what): (&[Reduction], _) = if NORMS {
            (&ReductionConfig::ALLOWED_NORMS, "a norm (l1, l2)")
        } else {
            (
                &ReductionConfig::ALLOWED_REDUCTIONS,
                "a reduction (min, max, mean, std, variance, sum, prod)",
            )
        };
        let name = String::deserialize(d)?;
        match name.parse::<Reduction>() {
            Ok(r) if allowed.contains(&r) => Ok(Allowed(r)),
            _ => Err(de::Error::invalid_value(de::Unexpected::Str(&name), &what)),
        }
    }
}

/// An object's entries in document order (`worker_skip_steps`, keyed by worker index).
pub(crate) struct Entries<V>(pub(crate) Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Vis<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Vis<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object keyed by worker index")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Entries<V>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Vis(PhantomData))
    }
}

// ------------------------------------------------------------------------------ configs

const SAVE_CONFIG_MODE_KEYS: &[&str] = &["save_interval", "start_step", "end_step", "save_steps"];

/// The keyword arguments of `SaveConfigMode(**d)`, read from `map` after its first key
/// (already taken from it, when `first` says so).
fn save_config_mode<'de, A: MapAccess<'de>>(
    first: Option<String>,
    mut map: A,
) -> std::result::Result<SaveConfigMode, A::Error> {
    let mut c = SaveConfigMode::default();
    let mut key = match first {
        Some(k) => Some(k),
        None => map.next_key::<String>()?,
    };
    while let Some(k) = key {
        match k.as_str() {
            "save_interval" => c.save_interval = map.next_value::<Int<i64>>()?.0,
            "start_step" => c.start_step = map.next_value::<Int<i64>>()?.0,
            "end_step" => c.end_step = map.next_value::<Option<Int<i64>>>()?.map(|i| i.0),
            "save_steps" => c.save_steps = ints(map.next_value()?),
            other => return Err(de::Error::unknown_field(other, SAVE_CONFIG_MODE_KEYS)),
        }
        key = map.next_key()?;
    }
    Ok(c)
}

/// `SaveConfigMode(**d)`.
pub(crate) struct SaveConfigModeSpec(pub(crate) SaveConfigMode);

impl<'de> Deserialize<'de> for SaveConfigModeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SaveConfigModeSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<SaveConfigModeSpec, A::Error> {
                save_config_mode(None, map).map(SaveConfigModeSpec)
            }
        }
        d.deserialize_map(V)
    }
}

/// `fixture.py::save_config` of a non-null value: a dict keyed only by mode names is a
/// per-mode config (the given modes first, in the given order, which the collections file
/// keeps; the others unset); any other dict is one rule for every mode. The mode names and
/// `SaveConfigMode`'s keys are disjoint, so the first key decides, and a key of the other
/// kind after it is unknown.
pub(crate) struct SaveConfigSpec(pub(crate) SaveConfig);

impl<'de> Deserialize<'de> for SaveConfigSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SaveConfigSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<SaveConfigSpec, A::Error> {
                let mode_of = |k: &str| Mode::ALL.iter().copied().find(|m| m.name() == k);
                let first = map.next_key::<String>()?;
                let Some(mut mode) = first.as_deref().and_then(mode_of) else {
                    return Ok(SaveConfigSpec(SaveConfig::new(save_config_mode(
                        first, map,
                    )?)));
                };
                let mut per = Vec::new();
                loop {
                    let c = map.next_value::<Option<SaveConfigModeSpec>>()?;
                    per.push((mode, c.map(|c| c.0)));
                    let Some(k) = map.next_key::<String>()? else {
                        break;
                    };
                    mode = mode_of(&k).ok_or_else(|| {
                        de::Error::unknown_field(&k, &["TRAIN", "EVAL", "PREDICT", "GLOBAL"])
                    })?;
                }
                Ok(SaveConfigSpec(SaveConfig::from_modes(per)))
            }
        }
        d.deserialize_map(V)
    }
}

/// `ReductionConfig(**d)`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReductionConfigSpec {
    #[serde(default)]
    reductions: Given<Vec<Allowed<false>>>,
    #[serde(default)]
    abs_reductions: Given<Vec<Allowed<false>>>,
    #[serde(default)]
    norms: Given<Vec<Allowed<true>>>,
    #[serde(default)]
    abs_norms: Given<Vec<Allowed<true>>>,
    #[serde(default)]
    save_raw_tensor: Given<bool>,
    #[serde(default)]
    save_shape: Given<bool>,
}

impl ReductionConfigSpec {
    pub(crate) fn build(self) -> ReductionConfig {
        let names = |v: Vec<Allowed<false>>| v.into_iter().map(|a| a.0).collect();
        let norms = |v: Vec<Allowed<true>>| v.into_iter().map(|a| a.0).collect();
        let mut c = ReductionConfig::default();
        if let Some(v) = self.reductions.0 {
            c.reductions = names(v);
        }
        if let Some(v) = self.abs_reductions.0 {
            c.abs_reductions = names(v);
        }
        if let Some(v) = self.norms.0 {
            c.norms = norms(v);
        }
        if let Some(v) = self.abs_norms.0 {
            c.abs_norms = norms(v);
        }
        if let Some(b) = self.save_raw_tensor.0 {
            c.save_raw_tensor = b;
        }
        if let Some(b) = self.save_shape.0 {
            c.save_shape = b;
        }
        c
    }
}
