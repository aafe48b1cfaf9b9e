//! Names and layout of health-summary records (docs/src/format.md, "Health summaries"):
//! the writer (hook) stores a tensor's summary as ordinary tensors under these names, and
//! readers (the `smdebug health` command, rules) find them by the same names.

/// Text that starts every health record's name.
pub const HEALTH_PREFIX: &str = "smdebug/health/";

/// One of the records of a tensor's health summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HealthPart {
    /// `int64[5]`: the counts, in the order of [`HEALTH_COUNTS_FIELDS`].
    Counts,
    /// `float64[3]`: the finite range, in the order of [`HEALTH_RANGE_FIELDS`] (NaN when the
    /// tensor has no finite element).
    Range,
    /// `int64[128]`: counts per binary exponent of the finite non-zero elements (bucket `i`
    /// holds magnitudes in `[2^(i-64), 2^(i-63))`, the end buckets everything beyond).
    Histogram,
}

impl HealthPart {
    /// Every part, in the order the writer stores them.
    pub const ALL: [HealthPart; 3] = [HealthPart::Counts, HealthPart::Range, HealthPart::Histogram];

    /// The part's name inside the record name.
    pub fn name(self) -> &'static str {
        match self {
            HealthPart::Counts => "counts",
            HealthPart::Range => "range",
            HealthPart::Histogram => "histogram",
        }
    }
}

/// The fields of the [`HealthPart::Counts`] vector, by position.
pub const HEALTH_COUNTS_FIELDS: [&str; 5] = ["elements", "nan", "pos_inf", "neg_inf", "zeros"];

/// The fields of the [`HealthPart::Range`] vector, by position.
pub const HEALTH_RANGE_FIELDS: [&str; 3] = ["finite_min", "finite_max", "amax"];

/// The record name of part `part` of tensor `tensor`'s health summary:
/// `smdebug/health/<part>/<tensor>`, the tensor's name kept exactly (colon suffixes too).
///
/// ```
/// use smdebug_index::{health_tensor_name, HealthPart};
/// assert_eq!(health_tensor_name("dense/kernel:0", HealthPart::Counts),
///            "smdebug/health/counts/dense/kernel:0");
/// ```
pub fn health_tensor_name(tensor: &str, part: HealthPart) -> String {
    format!("{HEALTH_PREFIX}{}/{tensor}", part.name())
}

/// A health record's name read back into the tensor's name and the part; `None` for any
/// other name.
///
/// ```
/// use smdebug_index::{reverse_health_tensor_name, HealthPart};
/// assert_eq!(reverse_health_tensor_name("smdebug/health/range/fc1/weight"),
///            Some(("fc1/weight", HealthPart::Range)));
/// assert_eq!(reverse_health_tensor_name("fc1/weight"), None);
/// assert_eq!(reverse_health_tensor_name("smdebug/health/other/x"), None);
/// ```
pub fn reverse_health_tensor_name(name: &str) -> Option<(&str, HealthPart)> {
    let rest = name.strip_prefix(HEALTH_PREFIX)?;
    let (part, tensor) = rest.split_once('/')?;
    let part = HealthPart::ALL.into_iter().find(|p| p.name() == part)?;
    (!tensor.is_empty()).then_some((tensor, part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for part in HealthPart::ALL {
            for t in ["a", "dense/kernel:0", "smdebug/health/counts/x"] {
                let n = health_tensor_name(t, part);
                assert_eq!(reverse_health_tensor_name(&n), Some((t, part)));
            }
        }
        assert_eq!(reverse_health_tensor_name("smdebug/health/counts/"), None);
    }
}
