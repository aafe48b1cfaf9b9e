//! Python's `str.strip()` whitespace rule, which smdebug applies to text users type (trial
//! paths in `create_trial`, regex lists in the hook configuration) and to text read from
//! files (an index file's `meta.mode`).

/// Whether Python's `str.isspace()` is true for `c`, the set `str.strip()` removes: Unicode
/// `White_Space` plus U+001C..U+001F (which Python counts as separators).
///
/// Not the rule of `int()` (see [`crate::pyjson::py_int_str`]), which keeps U+001C..U+001F.
///
/// ```
/// assert!(smdebug_config::is_python_whitespace('\u{1f}'));
/// assert!(smdebug_config::is_python_whitespace('\u{3000}'));
/// assert!(!smdebug_config::is_python_whitespace('\u{200b}'));
/// ```
pub fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `s.strip()`: `s` without leading and trailing [`is_python_whitespace`] characters.
///
/// ```
/// assert_eq!(smdebug_config::python_strip("\t s3://b/p \n\u{1c}"), "s3://b/p");
/// ```
pub fn python_strip(s: &str) -> &str {
    s.trim_matches(is_python_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code point for which CPython 3.11 `chr(c).isspace()` is true.
    const PYTHON_WHITESPACE: &[u32] = &[
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
        0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000,
    ];

    #[test]
    fn whitespace_is_pythons_over_every_code_point() {
        let ours: Vec<u32> = (0..=0x10ffff)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_whitespace(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, PYTHON_WHITESPACE);
    }

    #[test]
    fn strips_both_ends_only() {
        assert_eq!(python_strip(" a b\u{85}"), "a b");
        assert_eq!(python_strip("\u{1d}\u{1e}"), "");
        assert_eq!(python_strip("a\u{200b}"), "a\u{200b}");
    }
}
