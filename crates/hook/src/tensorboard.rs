//! TensorBoard summaries as smdebug writes them (`core/tfevent/summary.py`): tag cleaning,
//! the default histogram buckets and the histogram itself.

use smdebug_record::proto::HistogramProto;
use smdebug_record::TensorValue;
use std::sync::OnceLock;

/// smdebug's `_clean_tag`: every character other than `-`, `/`, `.` and word characters
/// becomes `_`, then leading `/` are stripped (`act:0` → `act_0`).
///
/// Python's `\w` is Unicode-aware; this uses Rust's `char::is_alphanumeric`, which agrees on
/// letters and digits of every script.
pub fn clean_tag(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c == '-' || c == '/' || c == '.' || c == '_' || c.is_alphanumeric() {
                c
            } else {
                '_'
            }
        })
        .collect();
    cleaned.trim_start_matches('/').to_owned()
}

/// The default bucket edges (`_get_default_bins`): ±1e-12 growing by ×1.1 (by repeated
/// multiplication, as TensorFlow does) up to 1e20, and 0; 1549 edges.
pub fn default_bucket_edges() -> &'static [f64] {
    static EDGES: OnceLock<Vec<f64>> = OnceLock::new();
    EDGES.get_or_init(|| {
        let mut pos = Vec::new();
        let mut v = 1e-12f64;
        while v < 1e20 {
            pos.push(v);
            v *= 1.1;
        }
        let mut edges: Vec<f64> = pos.iter().rev().map(|v| -v).collect();
        edges.push(0.0);
        edges.extend_from_slice(&pos);
        edges
    })
}

/// The elements of a numeric tensor as `f64` (C order); `None` for bool, complex and string
/// tensors, which smdebug does not histogram (bool) or cannot (the others).
pub fn values_f64(t: &TensorValue) -> Option<Vec<f64>> {
    fn conv<T: Copy>(a: &ndarray::ArrayD<T>, f: impl Fn(T) -> f64) -> Vec<f64> {
        a.iter().map(|&x| f(x)).collect()
    }
    Some(match t {
        TensorValue::Float16(a) => conv(a, f64::from),
        TensorValue::Float32(a) => conv(a, f64::from),
        TensorValue::Float64(a) => conv(a, |x| x),
        TensorValue::Int8(a) => conv(a, f64::from),
        TensorValue::Int16(a) => conv(a, f64::from),
        TensorValue::Int32(a) => conv(a, f64::from),
        TensorValue::Int64(a) => conv(a, |x| x as f64),
        TensorValue::UInt8(a) => conv(a, f64::from),
        TensorValue::UInt16(a) => conv(a, f64::from),
        TensorValue::UInt32(a) => conv(a, f64::from),
        TensorValue::UInt64(a) => conv(a, |x| x as f64),
        TensorValue::Bool(_)
        | TensorValue::Complex64(_)
        | TensorValue::Complex128(_)
        | TensorValue::Str(_) => return None,
    })
}

/// smdebug's `_make_histogram` over the default buckets: counts per bucket
/// (`[e_i, e_{i+1})`, the last one closed; NaN and values outside the edges are not counted),
/// trimmed to the support with one empty bucket on the left, and `bucket_limit` holding the
/// right edge of each output bucket. `None` when no value falls in any bucket (smdebug then
/// logs a warning and writes nothing).
pub fn make_histogram(values: &[f64]) -> Option<HistogramProto> {
    if values.is_empty() {
        return None;
    }
    let edges = default_bucket_edges();
    let nbins = edges.len() - 1;
    let mut counts = vec![0f64; nbins];
    let last = edges[nbins];
    for &v in values {
        if !(v >= edges[0] && v <= last) {
            continue;
        }
        // Number of edges <= v, minus one, is the bin; v == last edge goes in the last bin.
        let bin = edges
            .partition_point(|&e| e <= v)
            .saturating_sub(1)
            .min(nbins - 1);
        counts[bin] += 1.0;
    }
    let start = counts.iter().position(|&c| c > 0.0)?;
    let end = counts.iter().rposition(|&c| c > 0.0)? + 1;
    let bucket: Vec<f64> = if start > 0 {
        counts[start - 1..end].to_vec()
    } else {
        std::iter::once(0.0)
            .chain(counts[..end].iter().copied())
            .collect()
    };
    let bucket_limit = edges[start..=end].to_vec();
    // numpy's min/max propagate NaN; f64::min would skip it.
    let fold = |pick: fn(f64, f64) -> bool| {
        values.iter().copied().fold(values[0], |acc, x| {
            if acc.is_nan() || x.is_nan() {
                f64::NAN
            } else if pick(x, acc) {
                x
            } else {
                acc
            }
        })
    };
    Some(HistogramProto {
        min: fold(|x, acc| x < acc),
        max: fold(|x, acc| x > acc),
        num: values.len() as f64,
        sum: values.iter().sum(),
        sum_squares: values.iter().map(|x| x * x).sum(),
        bucket_limit,
        bucket,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_match_smdebug() {
        let e = default_bucket_edges();
        assert_eq!(e.len(), 1549);
        assert_eq!(e[774], 0.0);
        assert_eq!(e[775], 1e-12);
        assert!((e[0] + 9.9208e19).abs() < 1e16, "{}", e[0]);
    }

    #[test]
    fn six_zeros_give_the_documented_histogram() {
        let h = make_histogram(&[0.0; 6]).unwrap();
        assert_eq!(h.bucket_limit, [0.0, 1e-12]);
        assert_eq!(h.bucket, [0.0, 6.0]);
        assert_eq!((h.min, h.max, h.num), (0.0, 0.0, 6.0));
    }

    #[test]
    fn first_limit_is_the_left_edge_of_the_first_nonempty_bin() {
        let h = make_histogram(&[1.0, 2.0, -3.0, 1e-13]).unwrap();
        assert_eq!(h.bucket.len(), 603);
        assert_eq!(h.bucket_limit.len(), 603);
        assert!(
            (h.bucket_limit[0] + 3.1666).abs() < 1e-3,
            "{}",
            h.bucket_limit[0]
        );
        assert_eq!(h.bucket.iter().sum::<f64>(), 4.0);
        assert_eq!(h.bucket[0], 0.0);
    }

    #[test]
    fn value_in_bin_zero_gets_a_zero_bucket_prepended() {
        let e = default_bucket_edges();
        let h = make_histogram(&[e[0]]).unwrap();
        assert_eq!(h.bucket, [0.0, 1.0]);
        assert_eq!(h.bucket_limit, [e[0], e[1]]);
    }

    #[test]
    fn nan_only_gives_no_histogram_and_nan_propagates_to_min() {
        assert!(make_histogram(&[f64::NAN]).is_none());
        let h = make_histogram(&[1.0, f64::NAN]).unwrap();
        assert!(h.min.is_nan() && h.max.is_nan());
    }

    #[test]
    fn tags_are_cleaned_like_smdebug() {
        assert_eq!(clean_tag("act:0"), "act_0");
        assert_eq!(clean_tag("//weights/fc1.weight"), "weights/fc1.weight");
        assert_eq!(clean_tag("a b(c)-d"), "a_b_c_-d");
        assert_eq!(clean_tag("température"), "température");
    }
}
