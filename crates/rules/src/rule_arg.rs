//! The one-line form of a rule, `Name[:key=value,…]`, as `smdebug rules --rule` and the
//! Python package's `smdebug_rs.spark.rule_verdicts` take it.

use crate::error::{Result, RuleError};
use crate::registry::{find_rule, RESERVED_KEYS};
use std::collections::BTreeMap;
use std::str::FromStr;

/// A rule named with its parameters as strings, before it is built over a trial.
///
/// A comma-separated item without `=` continues the previous value, so list parameters need
/// no quoting: `ExplodingTensor:collection_names=gradients,weights,only_nan=True` gives
/// `collection_names = "gradients,weights"` and `only_nan = "True"`.
///
/// ```
/// use smdebug_rules::RuleArg;
/// let arg: RuleArg = "ExplodingTensor:collection_names=gradients,weights,only_nan=True".parse()?;
/// assert_eq!(arg.name, "ExplodingTensor");
/// assert_eq!(arg.params["collection_names"], "gradients,weights");
/// assert_eq!(arg.params["only_nan"], "True");
/// arg.check()?;
/// assert!("VanishingGradient:treshold=1".parse::<RuleArg>()?.check().is_err());
/// # Ok::<(), smdebug_rules::RuleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleArg {
    /// The rule's name, as given.
    pub name: String,
    /// Its parameters, values as given (trimmed).
    pub params: BTreeMap<String, String>,
}

impl RuleArg {
    /// Reads `Name[:key=value,…]`; the name and parameters are not looked up (see
    /// [`RuleArg::check`]).
    pub fn parse(arg: &str) -> Result<RuleArg> {
        let invalid = |message: String| RuleError::InvalidRuleArgument {
            argument: arg.to_owned(),
            message,
        };
        let (name, rest) = match arg.split_once(':') {
            Some((n, r)) => (n.trim(), r),
            None => (arg.trim(), ""),
        };
        if name.is_empty() {
            return Err(invalid("no rule name".into()));
        }
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        let mut last: Option<String> = None;
        for item in rest.split(',') {
            match item.split_once('=') {
                Some((k, v)) => {
                    let k = k.trim();
                    if k.is_empty() {
                        return Err(invalid(format!("empty parameter name in {item:?}")));
                    }
                    params.insert(k.to_owned(), v.trim().to_owned());
                    last = Some(k.to_owned());
                }
                None if item.trim().is_empty() => {}
                None => match &last {
                    Some(k) => {
                        let v = params.entry(k.clone()).or_default();
                        v.push(',');
                        v.push_str(item.trim());
                    }
                    None => return Err(invalid(format!("expected key=value, got {item:?}"))),
                },
            }
        }
        Ok(RuleArg {
            name: name.to_owned(),
            params,
        })
    }

    /// Checks, without a trial, that the rule is a built-in one and takes every parameter
    /// given (the registry's reserved keys aside), so that a typo fails before any trial is
    /// opened. Values are checked when the rule is built.
    pub fn check(&self) -> Result<()> {
        let spec = find_rule(&self.name)?;
        let unknown = self.params.keys().find(|k| {
            !RESERVED_KEYS.contains(&k.as_str()) && !spec.params.iter().any(|p| p.name == *k)
        });
        match unknown {
            Some(k) => Err(RuleError::UnknownParameter {
                rule: spec.name.to_owned(),
                parameter: k.clone(),
                known: spec
                    .params
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            None => Ok(()),
        }
    }
}

impl FromStr for RuleArg {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<RuleArg> {
        RuleArg::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parsed(arg: &str) -> (String, Vec<(String, String)>) {
        let a = RuleArg::parse(arg).unwrap();
        (a.name, a.params.into_iter().collect())
    }

    #[test]
    fn list_values_continue_without_quoting() {
        let (name, params) = parsed(" ExplodingTensor : collection_names=a, b ,only_nan=True,");
        assert_eq!(name, "ExplodingTensor");
        assert_eq!(
            params,
            [
                ("collection_names".into(), "a,b".into()),
                ("only_nan".into(), "True".into())
            ]
        );
        assert_eq!(
            parsed("VanishingGradient"),
            ("VanishingGradient".into(), vec![])
        );
        assert_eq!(parsed("LossNotDecreasing:").1, vec![]);
    }

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        for (arg, needle) in [
            (":a=1", "no rule name"),
            ("  ", "no rule name"),
            ("X:oops", "expected key=value, got \"oops\""),
            ("X:=1", "empty parameter name"),
        ] {
            let e = RuleArg::parse(arg).unwrap_err();
            assert!(
                matches!(e, RuleError::InvalidRuleArgument { .. }),
                "{arg}: {e:?}"
            );
            let text = e.to_string();
            assert!(text.contains(needle) && text.contains(arg), "{arg}: {text}");
        }
    }

    #[test]
    fn check_refuses_unknown_rules_and_parameters_only() {
        let check = |arg: &str| RuleArg::parse(arg).unwrap().check();
        check("vanishinggradient:threshold=0.1,action_json=").unwrap();
        assert!(matches!(
            check("NoSuchRule"),
            Err(RuleError::UnknownRule { .. })
        ));
        match check("VanishingGradient:treshold=1") {
            Err(RuleError::UnknownParameter { parameter, .. }) => assert_eq!(parameter, "treshold"),
            other => panic!("{other:?}"),
        }
        // A value that would not parse is the builder's business, not the grammar's.
        check("VanishingGradient:threshold=abc").unwrap();
    }

    proptest! {
        #[test]
        fn never_panics_and_keeps_what_it_was_given(arg in ".{0,40}") {
            if let Ok(a) = RuleArg::parse(&arg) {
                prop_assert!(!a.name.is_empty());
                prop_assert!(arg.contains(&a.name));
                for (k, v) in &a.params {
                    prop_assert!(!k.is_empty() && arg.contains(k.as_str()));
                    for part in v.split(',') {
                        prop_assert!(arg.contains(part));
                    }
                }
            }
        }
    }
}
