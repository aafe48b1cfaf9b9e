//! Step numbers in file names.

/// Number of steps per `index/` bucket directory (`MAX_INDEX_FILE_NUM_IN_INDEX_PREFIX`).
pub const STEPS_PER_INDEX_BUCKET: i64 = 1000;

/// Formats a step the way smdebug names files: Python's `format(step, "012")`.
///
/// Zero-padded to 12 characters with the sign inside the width, never truncated:
///
/// ```
/// use smdebug_index::format_step;
/// assert_eq!(format_step(1234), "000000001234");
/// assert_eq!(format_step(-1), "-00000000001");
/// assert_eq!(format_step(1_000_000_000_000), "1000000000000");
/// ```
///
/// Python smdebug itself cannot use negative steps (its worker-name regex needs a digit right
/// after the `/`), and steps ≥ 10^12 get 13+ digit names that no longer sort in step order;
/// this crate formats and parses both consistently (see the crate README).
pub fn format_step(step: i64) -> String {
    // Rust's `0` flag pads after the sign, exactly like Python's format spec "012".
    format!("{step:012}")
}

/// The `index/` bucket of a step: `step // 1000` (floor division, as in Python) formatted
/// with width 9.
///
/// ```
/// use smdebug_index::format_index_bucket;
/// assert_eq!(format_index_bucket(1234), "000000001");
/// assert_eq!(format_index_bucket(999), "000000000");
/// assert_eq!(format_index_bucket(-1), "-00000001");
/// ```
pub fn format_index_bucket(step: i64) -> String {
    let bucket = step.div_euclid(STEPS_PER_INDEX_BUCKET);
    format!("{bucket:09}")
}

/// What is wrong with the text of a step number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepTextProblem {
    NotANumber,
    OutOfRange,
}

/// Parses the step part of a file name: an optional `-` followed by ASCII digits (any
/// number of leading zeros), within the `i64` range.
///
/// Stricter than Python's `int()` on purpose: no `+`, no whitespace, no non-ASCII digits, none
/// of which smdebug writes.
pub(crate) fn parse_step_text(text: &str) -> Result<i64, StepTextProblem> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(StepTextProblem::NotANumber);
    }
    text.parse::<i64>().map_err(|_| StepTextProblem::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_python() {
        // Values checked against CPython 3.11 `format(n, "012")` / `format(n // 1000, "09")`.
        assert_eq!(format_step(0), "000000000000");
        assert_eq!(format_step(999_999_999_999), "999999999999");
        assert_eq!(format_step(-12), "-00000000012");
        assert_eq!(format_step(i64::MIN), "-9223372036854775808");
        assert_eq!(format_step(i64::MAX), "9223372036854775807");
        assert_eq!(format_index_bucket(0), "000000000");
        assert_eq!(format_index_bucket(1000), "000000001");
        assert_eq!(format_index_bucket(-1000), "-00000001");
        assert_eq!(format_index_bucket(-1001), "-00000002");
        assert_eq!(format_index_bucket(1_000_000_000_000), "1000000000");
        assert_eq!(format_index_bucket(i64::MIN), "-9223372036854776");
    }

    #[test]
    fn parses_step_text() {
        assert_eq!(parse_step_text("000000001234"), Ok(1234));
        assert_eq!(parse_step_text("-00000000001"), Ok(-1));
        assert_eq!(parse_step_text("-0"), Ok(0));
        assert_eq!(parse_step_text("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(
            parse_step_text("9223372036854775808"),
            Err(StepTextProblem::OutOfRange)
        );
        for bad in ["", "-", "+1", " 1", "1 ", "1a", "--1", "١"] {
            assert_eq!(
                parse_step_text(bad),
                Err(StepTextProblem::NotANumber),
                "{bad:?}"
            );
        }
    }
}
