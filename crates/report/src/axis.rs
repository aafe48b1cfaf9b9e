//! The value axis of a chart, shared by the report's SVG charts and `smdebug plot`.

/// The drawn range of values `lo..=hi` (the data's minimum and maximum): padded by 5 % of
/// the span, or around a single value, so that no point sits on the frame. Data that are
/// all non-negative (norms, variances, counts, most losses) never get an axis below zero:
/// a negative tick under a quantity that cannot be negative reads as a value.
pub(crate) fn value_range(lo: f64, hi: f64) -> (f64, f64) {
    let (a, b) = if hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, lo + pad)
    };
    if lo >= 0.0 {
        (a.max(0.0), b)
    } else {
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::value_range;

    #[test]
    fn non_negative_data_start_at_zero_or_at_the_data() {
        // A gradient norm near zero: the padding would reach below zero.
        let (lo, hi) = value_range(1e-5, 0.0134);
        assert_eq!(lo, 0.0);
        assert!(hi > 0.0134);
        // Far from zero: the axis starts just below the data, not at zero.
        let (lo, hi) = value_range(10.0, 20.0);
        assert!((lo - 9.5).abs() < 1e-12 && (hi - 20.5).abs() < 1e-12);
        // A single value at zero or above.
        assert_eq!(value_range(0.0, 0.0), (0.0, 1.0));
        let (lo, hi) = value_range(2.0, 2.0);
        assert!((0.0..2.0).contains(&lo) && hi > 2.0);
    }

    #[test]
    fn data_with_negative_values_keep_their_padding() {
        assert_eq!(value_range(-1.0, 1.0), (-1.1, 1.1));
        let (lo, hi) = value_range(-3.0, -3.0);
        assert!(lo < -3.0 && hi > -3.0);
    }
}
