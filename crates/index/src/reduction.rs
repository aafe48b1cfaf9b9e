//! Names of reduction records: the hook saves a reduction of tensor `T` as a record named
//! `smdebug/reductions/[abs_]OP/T`, and the trial reads the name back into `(T, OP, abs)`.

use std::borrow::Cow;
use std::sync::LazyLock;

/// Text that marks a reduction record's name.
pub const REDUCTIONS_PREFIX: &str = "smdebug/reductions/";

/// The record name of reduction `op` (`min`, `l2`, …) of tensor `tensor`, taken of absolute
/// values when `abs`: smdebug's `get_reduction_tensor_name(tensor, op, abs,
/// remove_colon_index=True)`, which removes every `:` followed by digits from `op/tensor` (Python's
/// `re.sub(r":\d+", "")`, so any Unicode decimal digit counts) and then prepends
/// [`REDUCTIONS_PREFIX`] and `abs_`.
///
/// ```
/// assert_eq!(
///     smdebug_index::reduction_tensor_name("dense/kernel:0", "l2", true),
///     "smdebug/reductions/abs_l2/dense/kernel"
/// );
/// ```
pub fn reduction_tensor_name(tensor: &str, op: &str, abs: bool) -> String {
    static COLON_INDEX: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r":\d+").expect("valid regex"));
    let joined = format!("{op}/{tensor}");
    let joined = match COLON_INDEX.replace_all(&joined, "") {
        Cow::Borrowed(_) => joined,
        Cow::Owned(s) => s,
    };
    let abs = if abs { "abs_" } else { "" };
    format!("{REDUCTIONS_PREFIX}{abs}{joined}")
}

/// A reduction record's name read back (see [`reverse_reduction_tensor_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReductionTensorName<'a> {
    /// The reduced tensor's name.
    pub tensor: &'a str,
    /// The reduction (`min`, `l2`, …), as written.
    pub op: &'a str,
    /// Whether the reduction was taken of absolute values.
    pub abs: bool,
}

/// smdebug's `reverse_reduction_tensor_name`: for a name containing [`REDUCTIONS_PREFIX`]
/// anywhere, the text after its first occurrence up to the next `/` is the reduction
/// (`abs` when it contains `abs_`, the op then being the text after that) and the rest up to a
/// further occurrence of the prefix is the tensor.
///
/// `None` when the name has no prefix, or no `/` after it: Python then fails with
/// `IndexError`, and the reader keeps the record as a tensor of its own name.
///
/// ```
/// use smdebug_index::{reverse_reduction_tensor_name, ReductionTensorName};
/// assert_eq!(
///     reverse_reduction_tensor_name("smdebug/reductions/abs_l2/dense/kernel"),
///     Some(ReductionTensorName { tensor: "dense/kernel", op: "l2", abs: true })
/// );
/// assert_eq!(reverse_reduction_tensor_name("dense/kernel"), None);
/// ```
pub fn reverse_reduction_tensor_name(name: &str) -> Option<ReductionTensorName<'_>> {
    // Python's `name.split(PREFIX)[1]`: the text between the first and second occurrence.
    let rest = name.split(REDUCTIONS_PREFIX).nth(1)?;
    let (reduction, tensor) = rest.split_once('/')?;
    // `reduction.split("abs_")[1]` likewise stops at a second `abs_`.
    let (op, abs) = match reduction.split("abs_").nth(1) {
        Some(op) => (op, true),
        None => (reduction, false),
    };
    Some(ReductionTensorName { tensor, op, abs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reversed(name: &str) -> Option<(&str, &str, bool)> {
        reverse_reduction_tensor_name(name).map(|r| (r.tensor, r.op, r.abs))
    }

    #[test]
    fn names_drop_colon_indices_like_smdebug() {
        for (tensor, op, abs, want) in [
            ("dense/kernel:0", "mean", false, "mean/dense/kernel"),
            ("a:1/b:22", "l2", true, "abs_l2/a/b"),
            ("x:y", "mean", false, "mean/x:y"),
            ("température:3", "mean", false, "mean/température"),
            // `\d` is any Unicode decimal digit in Python's `re`.
            ("a:\u{663}b:\u{ff11}", "max", false, "max/ab"),
        ] {
            let name = reduction_tensor_name(tensor, op, abs);
            assert_eq!(name, format!("{REDUCTIONS_PREFIX}{want}"), "{tensor:?}");
        }
    }

    #[test]
    fn names_parse_back_like_smdebug() {
        for (name, want) in [
            (
                "outer/smdebug/reductions/abs_min/inner",
                Some(("inner", "min", true)),
            ),
            (
                "smdebug/reductions/myabs_foo/x/y",
                Some(("x/y", "foo", true)),
            ),
            (
                "smdebug/reductions/min/smdebug/reductions/max/x",
                Some(("", "min", false)),
            ),
            (
                "smdebug/reductions/abs_l2/dense/kernel:0",
                Some(("dense/kernel:0", "l2", true)),
            ),
            ("smdebug/reductions/abs_abs_x/t", Some(("t", "", true))),
            ("smdebug/reductions/min", None),
            ("plain", None),
        ] {
            assert_eq!(reversed(name), want, "{name:?}");
        }
    }

    #[test]
    fn written_names_read_back() {
        for (tensor, op, abs) in [
            ("w", "min", false),
            ("a/b", "l1", true),
            ("x y/z", "std", true),
        ] {
            let name = reduction_tensor_name(tensor, op, abs);
            assert_eq!(reversed(&name), Some((tensor, op, abs)), "{name}");
        }
    }
}
