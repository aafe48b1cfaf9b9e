//! serde over a parsed [`PyValue`]: typed readers (`#[derive(Deserialize)]`) keep Python's
//! reading of the text (key order, duplicates, big integers, `NaN`), which [`pyjson::parse`]
//! gives, and get the field path of an error from `serde_path_to_error`.
//!
//! [`pyjson::parse`]: crate::pyjson::parse
//!
//! ```
//! use serde::Deserialize;
//! use smdebug_config::{pyjson, PyValueDeserializer};
//!
//! #[derive(Deserialize)]
//! struct Phase { steps: u64 }
//! let v = pyjson::parse(r#"{"steps": 3}"#)?;
//! let p = Phase::deserialize(PyValueDeserializer::new(&v))?;
//! assert_eq!(p.steps, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use serde::de::value::{Error, MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};

use crate::pyjson::PyValue;

/// A [`serde::Deserializer`] reading one [`PyValue`].
///
/// Integers reach the visitor as `i64`, or, beyond it, as `u64`/`i128`/`u128` while they fit
/// (a larger one is an error); floats as `f64` (`NaN` and the infinities included); objects
/// as maps in their key order (a struct is read only from an object); `null` as unit, or
/// `None` for an `Option`.
#[derive(Debug, Clone, Copy)]
pub struct PyValueDeserializer<'de> {
    value: &'de PyValue,
}

impl<'de> PyValueDeserializer<'de> {
    /// A deserializer of `value`.
    pub fn new(value: &'de PyValue) -> Self {
        PyValueDeserializer { value }
    }
}

impl<'de> IntoDeserializer<'de, Error> for &'de PyValue {
    type Deserializer = PyValueDeserializer<'de>;

    fn into_deserializer(self) -> Self::Deserializer {
        PyValueDeserializer::new(self)
    }
}

/// An integer literal beyond `i64`: the smallest type that holds it.
fn visit_big<'de, V: Visitor<'de>>(text: &str, visitor: V) -> Result<V::Value, Error> {
    if let Ok(u) = text.parse::<u64>() {
        visitor.visit_u64(u)
    } else if let Ok(i) = text.parse::<i128>() {
        visitor.visit_i128(i)
    } else if let Ok(u) = text.parse::<u128>() {
        visitor.visit_u128(u)
    } else {
        Err(de::Error::custom(format!(
            "integer {text} is beyond 128 bits"
        )))
    }
}

impl<'de> de::Deserializer<'de> for PyValueDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            PyValue::Null => visitor.visit_unit(),
            PyValue::Bool(b) => visitor.visit_bool(*b),
            PyValue::Int(i) => visitor.visit_i64(*i),
            PyValue::BigInt(text) => visit_big(text, visitor),
            PyValue::Float(f) => visitor.visit_f64(*f),
            PyValue::Str(s) => visitor.visit_borrowed_str(s),
            PyValue::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter());
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            PyValue::Object(items) => {
                let mut map = MapDeserializer::new(items.iter().map(|(k, v)| (k.as_str(), v)));
                let value = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            PyValue::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // Only an object: serde would also fill a struct from a list, by position.
        match self.value {
            PyValue::Object(_) => self.deserialize_any(visitor),
            other => Err(de::Error::invalid_type(unexpected(other), &"an object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // Unit variants only, named by a string (the only enums a Python config holds).
        match self.value {
            PyValue::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            other => Err(de::Error::invalid_type(unexpected(other), &"a string")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// A value kept as it was read, for a field whose reading depends on other fields (a recipe's
/// `workers`, read only when `worker_names` is absent). Integers beyond `i64` become
/// [`PyValue::BigInt`].
impl<'de> de::Deserialize<'de> for PyValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PyValueVisitor)
    }
}

struct PyValueVisitor;

impl<'de> Visitor<'de> for PyValueVisitor {
    type Value = PyValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::Null)
    }

    fn visit_none<E>(self) -> Result<PyValue, E> {
        Ok(PyValue::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<PyValue, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, b: bool) -> Result<PyValue, E> {
        Ok(PyValue::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<PyValue, E> {
        Ok(i64::try_from(u).map_or_else(|_| PyValue::BigInt(u.to_string()), PyValue::Int))
    }

    fn visit_i128<E>(self, i: i128) -> Result<PyValue, E> {
        Ok(i64::try_from(i).map_or_else(|_| PyValue::BigInt(i.to_string()), PyValue::Int))
    }

    fn visit_u128<E>(self, u: u128) -> Result<PyValue, E> {
        Ok(i64::try_from(u).map_or_else(|_| PyValue::BigInt(u.to_string()), PyValue::Int))
    }

    fn visit_f64<E>(self, f: f64) -> Result<PyValue, E> {
        Ok(PyValue::Float(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<PyValue, E> {
        Ok(PyValue::Str(s.to_owned()))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<PyValue, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(PyValue::Array(items))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<PyValue, A::Error> {
        let mut items: Vec<(String, PyValue)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        while let Some((k, v)) = map.next_entry::<String, PyValue>()? {
            // A dict keeps a repeated key's first position and last value.
            match at.get(&k) {
                Some(&i) => items[i].1 = v,
                None => {
                    at.insert(k.clone(), items.len());
                    items.push((k, v));
                }
            }
        }
        Ok(PyValue::Object(items))
    }
}

/// How serde names a value in its "invalid type" errors.
fn unexpected(v: &PyValue) -> de::Unexpected<'_> {
    match v {
        PyValue::Null => de::Unexpected::Unit,
        PyValue::Bool(b) => de::Unexpected::Bool(*b),
        PyValue::Int(i) => de::Unexpected::Signed(*i),
        PyValue::BigInt(_) => de::Unexpected::Other("integer"),
        PyValue::Float(f) => de::Unexpected::Float(*f),
        PyValue::Str(s) => de::Unexpected::Str(s),
        PyValue::Array(_) => de::Unexpected::Seq,
        PyValue::Object(_) => de::Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson;
    use serde::Deserialize;

    fn read<T: Deserialize<'static>>(text: &str) -> Result<T, Error> {
        let v: &'static PyValue = Box::leak(Box::new(pyjson::parse(text).unwrap()));
        T::deserialize(PyValueDeserializer::new(v))
    }

    #[test]
    fn numbers_keep_their_python_reading() {
        assert_eq!(read::<i64>("-5").unwrap(), -5);
        assert_eq!(read::<u64>("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(
            read::<i128>("-9223372036854775809").unwrap(),
            -(1i128 << 63) - 1
        );
        assert!(read::<i64>("9223372036854775808").is_err());
        assert!(read::<i128>("1000000000000000000000000000000000000000000").is_err());
        assert!(read::<f64>("NaN").unwrap().is_nan());
        assert_eq!(read::<f64>("0.1").unwrap(), 0.1);
    }

    #[test]
    fn objects_options_and_enums() {
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(rename_all = "lowercase")]
        enum Kind {
            Step,
            Const,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct S {
            a: Option<Vec<u8>>,
            k: Kind,
        }
        // Duplicates: Python's dict keeps the last value.
        assert_eq!(
            read::<S>(r#"{"a": [1], "k": "step", "a": null}"#).unwrap(),
            S {
                a: None,
                k: Kind::Step
            }
        );
        assert!(read::<S>(r#"{"k": "const", "b": 1}"#).is_err());
        assert!(read::<S>(r#"{"k": 1}"#).is_err());
        assert!(read::<S>(r#"{"k": "random"}"#).is_err());
        // A struct is an object, not a list of its fields.
        assert!(read::<S>(r#"[null, "step"]"#).is_err());
    }

    #[test]
    fn a_value_reads_back_as_itself() {
        let text =
            r#"{"a": [1, 2.5, "x", null, true], "b": 123456789012345678901234567890, "c": {}}"#;
        assert_eq!(read::<PyValue>(text).unwrap(), pyjson::parse(text).unwrap());
    }
}
