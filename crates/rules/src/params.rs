//! String-valued rule parameters (SageMaker's `RuleParameters`): their declarations and
//! parsing.
//!
//! Every built-in rule declares its parameters once, as a table of [`ParamSpec`]s; the same
//! table drives parsing (defaults, types, unknown names) and `smdebug rules --list`.

use crate::error::{Result, RuleError};
use std::collections::BTreeMap;

/// The type of a parameter's value, as written in the string form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A number (`"0.0001"`, `"1e-7"`, `"inf"`).
    Float,
    /// An integer (`"10"`; `"10.0"` is accepted too, the Developer Guide calls some of them
    /// floats).
    Int,
    /// `"True"` / `"False"`, any case.
    Bool,
    /// Any string.
    Str,
    /// A comma-separated list of strings; items are trimmed and empty items dropped.
    List,
    /// A comma-separated list of numbers.
    FloatList,
}

impl ParamKind {
    /// What the value must look like, for messages and `--list`.
    pub fn describe(self) -> &'static str {
        match self {
            ParamKind::Float => "a number",
            ParamKind::Int => "an integer",
            ParamKind::Bool => "True or False",
            ParamKind::Str => "a string",
            ParamKind::List => "a comma-separated list",
            ParamKind::FloatList => "a comma-separated list of numbers",
        }
    }
}

/// One parameter of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter's name (as in the original and the SageMaker Developer Guide).
    pub name: &'static str,
    /// Its type.
    pub kind: ParamKind,
    /// The default in string form; `None` means "unset" unless `required`.
    pub default: Option<&'static str>,
    /// Whether the parameter must be given.
    pub required: bool,
    /// What it means.
    pub doc: &'static str,
}

impl ParamSpec {
    /// An optional parameter with a default (or none: `default` = `None`).
    pub const fn new(
        name: &'static str,
        kind: ParamKind,
        default: Option<&'static str>,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            kind,
            default,
            required: false,
            doc,
        }
    }

    /// A required parameter.
    pub const fn required(name: &'static str, kind: ParamKind, doc: &'static str) -> Self {
        ParamSpec {
            name,
            kind,
            default: None,
            required: true,
            doc,
        }
    }
}

/// Reads a rule's parameters from a string map, checking names against the rule's
/// [`ParamSpec`] table and filling in defaults.
#[derive(Debug)]
pub struct ParamReader<'a> {
    rule: &'a str,
    specs: &'a [ParamSpec],
    given: BTreeMap<String, String>,
}

impl<'a> ParamReader<'a> {
    /// Checks that every key of `given` is a parameter of the rule.
    pub fn new(
        rule: &'a str,
        specs: &'a [ParamSpec],
        given: &BTreeMap<String, String>,
    ) -> Result<Self> {
        for key in given.keys() {
            if !specs.iter().any(|s| s.name == key) {
                return Err(RuleError::UnknownParameter {
                    rule: rule.to_owned(),
                    parameter: key.clone(),
                    known: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                });
            }
        }
        Ok(ParamReader {
            rule,
            specs,
            given: given.clone(),
        })
    }

    fn spec(&self, name: &str) -> &ParamSpec {
        // The rules only ask for names from their own tables; a miss is a bug in this crate.
        self.specs
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("rule {} reads undeclared parameter {name}", self.rule))
    }

    /// The raw string (given or default); `None` when unset. `"None"` and, except for
    /// string parameters, the empty string mean unset, as in SageMaker's string form.
    pub fn raw(&self, name: &str) -> Result<Option<String>> {
        let spec = self.spec(name);
        let value = match self.given.get(name) {
            Some(v) => Some(v.clone()),
            None => spec.default.map(str::to_owned),
        };
        let value = value.filter(|v| {
            let t = v.trim();
            t != "None" && (spec.kind == ParamKind::Str || !t.is_empty())
        });
        if value.is_none() && spec.required {
            return Err(RuleError::MissingParameter {
                rule: self.rule.to_owned(),
                parameter: name.to_owned(),
            });
        }
        Ok(value)
    }

    fn invalid(&self, name: &str, value: &str) -> RuleError {
        RuleError::InvalidValue {
            rule: self.rule.to_owned(),
            parameter: name.to_owned(),
            value: value.to_owned(),
            expected: self.spec(name).kind.describe().to_owned(),
        }
    }

    /// A number, or `None` when unset.
    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>> {
        self.raw(name)?
            .map(|v| v.trim().parse::<f64>().map_err(|_| self.invalid(name, &v)))
            .transpose()
    }

    /// A number that has a default or is required.
    pub fn f64(&self, name: &str) -> Result<f64> {
        self.opt_f64(name)?.ok_or_else(|| self.missing(name))
    }

    fn missing(&self, name: &str) -> RuleError {
        RuleError::MissingParameter {
            rule: self.rule.to_owned(),
            parameter: name.to_owned(),
        }
    }

    /// An integer, or `None` when unset.
    pub fn opt_i64(&self, name: &str) -> Result<Option<i64>> {
        self.raw(name)?
            .map(|v| {
                let t = v.trim();
                t.parse::<i64>()
                    .ok()
                    .or_else(|| {
                        t.parse::<f64>()
                            .ok()
                            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                            .map(|f| f as i64)
                    })
                    .ok_or_else(|| self.invalid(name, &v))
            })
            .transpose()
    }

    /// An integer that has a default or is required.
    pub fn i64(&self, name: &str) -> Result<i64> {
        self.opt_i64(name)?.ok_or_else(|| self.missing(name))
    }

    /// A non-negative integer that has a default or is required.
    pub fn usize(&self, name: &str) -> Result<usize> {
        let v = self.i64(name)?;
        usize::try_from(v).map_err(|_| self.invalid(name, &v.to_string()))
    }

    /// `True`/`False` (any case); unset is `false`.
    pub fn bool(&self, name: &str) -> Result<bool> {
        match self.raw(name)? {
            None => Ok(false),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(self.invalid(name, &v)),
            },
        }
    }

    /// A string, or `None` when unset.
    pub fn opt_string(&self, name: &str) -> Result<Option<String>> {
        self.raw(name)
    }

    /// A string that has a default or is required.
    pub fn string(&self, name: &str) -> Result<String> {
        self.opt_string(name)?.ok_or_else(|| self.missing(name))
    }

    /// A comma-separated list (empty when unset).
    pub fn list(&self, name: &str) -> Result<Vec<String>> {
        Ok(self.raw(name)?.map(|v| split_list(&v)).unwrap_or_default())
    }

    /// A comma-separated list of numbers (empty when unset).
    pub fn f64_list(&self, name: &str) -> Result<Vec<f64>> {
        self.list(name)?
            .into_iter()
            .map(|item| item.parse::<f64>().map_err(|_| self.invalid(name, &item)))
            .collect()
    }

    /// The rule's name, for configuration errors.
    pub fn rule(&self) -> &str {
        self.rule
    }

    /// A value of parameter `name` that is not `expected` (for parameters whose string form
    /// is richer than their [`ParamKind`], such as a mode name or a pair of numbers).
    pub(crate) fn invalid_value(&self, name: &str, value: &str, expected: &str) -> RuleError {
        RuleError::InvalidValue {
            rule: self.rule.to_owned(),
            parameter: name.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        }
    }

    /// A configuration error of this rule.
    pub fn config_error(&self, message: impl Into<String>) -> RuleError {
        RuleError::InvalidConfiguration {
            rule: self.rule.to_owned(),
            message: message.into(),
        }
    }
}

/// A Rust type a parameter's string form is read into. The parameter's [`ParamKind`]
/// follows from the type, so a rule's parameter table and its config struct are declared
/// once, together (see `rule_params!` in `builtin`).
pub(crate) trait ParamValue: Sized {
    /// The kind shown in `--list` and in errors.
    const KIND: ParamKind;
    /// Reads parameter `name` (given, or its default).
    fn read(p: &ParamReader<'_>, name: &str) -> Result<Self>;
}

macro_rules! param_value {
    ($($ty:ty => $kind:ident, $method:ident;)*) => {
        $(impl ParamValue for $ty {
            const KIND: ParamKind = ParamKind::$kind;
            fn read(p: &ParamReader<'_>, name: &str) -> Result<Self> {
                p.$method(name)
            }
        })*
    };
}

param_value! {
    f64 => Float, f64;
    Option<f64> => Float, opt_f64;
    i64 => Int, i64;
    Option<i64> => Int, opt_i64;
    usize => Int, usize;
    bool => Bool, bool;
    String => Str, string;
    Option<String> => Str, opt_string;
    Vec<String> => List, list;
    Vec<f64> => FloatList, f64_list;
}

/// Splits a comma-separated list: items trimmed, empty items dropped.
pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec::new("threshold", ParamKind::Float, Some("1e-7"), "t"),
        ParamSpec::new("n", ParamKind::Int, None, "n"),
        ParamSpec::new("flag", ParamKind::Bool, Some("False"), "f"),
        ParamSpec::new("names", ParamKind::List, None, "l"),
        ParamSpec::required("other", ParamKind::Str, "o"),
    ];

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_types_and_errors() {
        let r = ParamReader::new("R", SPECS, &map(&[("other", "x")])).unwrap();
        assert_eq!(r.f64("threshold").unwrap(), 1e-7);
        assert_eq!(r.opt_i64("n").unwrap(), None);
        assert!(!r.bool("flag").unwrap());
        assert!(r.list("names").unwrap().is_empty());
        assert_eq!(r.string("other").unwrap(), "x");

        let r = ParamReader::new(
            "R",
            SPECS,
            &map(&[("n", "10.0"), ("flag", "TRUE"), ("names", " a, ,b ")]),
        )
        .unwrap();
        assert_eq!(r.i64("n").unwrap(), 10);
        assert!(r.bool("flag").unwrap());
        assert_eq!(r.list("names").unwrap(), ["a", "b"]);
        match r.string("other") {
            Err(RuleError::MissingParameter { parameter, .. }) => assert_eq!(parameter, "other"),
            other => panic!("{other:?}"),
        }

        let r = ParamReader::new("R", SPECS, &map(&[("threshold", "abc")])).unwrap();
        let e = r.f64("threshold").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("R") && text.contains("threshold") && text.contains("abc"));

        match ParamReader::new("R", SPECS, &map(&[("thresold", "1")])) {
            Err(RuleError::UnknownParameter { parameter, .. }) => assert_eq!(parameter, "thresold"),
            other => panic!("{other:?}"),
        }
        let r = ParamReader::new("R", SPECS, &map(&[("n", "None")])).unwrap();
        assert_eq!(r.opt_i64("n").unwrap(), None);
        let r = ParamReader::new("R", SPECS, &map(&[("n", "1.5")])).unwrap();
        assert!(r.opt_i64("n").is_err());
    }
}
