//! The text Python's `json.dumps` produces with its defaults (`ensure_ascii=True`,
//! separators `", "` and `": "`), for the few shapes smdebug writes.

use std::fmt::Write as _;

/// Appends `s` as a JSON string literal exactly as `json.dumps` writes it: `\"`, `\\`, the
/// short escapes `\b \f \n \r \t`, every other code point outside U+0020..=U+007E as `\uXXXX`
/// (lower-case hex; UTF-16 surrogate pairs above U+FFFF); `/` is not escaped.
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    // Writing into a String cannot fail.
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Appends `"key": ` (with the separator that follows a key).
pub(crate) fn push_key(out: &mut String, key: &str) {
    push_str(out, key);
    out.push_str(": ");
}

/// Appends an integer as Python writes an `int`.
pub(crate) fn push_int(out: &mut String, value: impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumped(s: &str) -> String {
        let mut out = String::new();
        push_str(&mut out, s);
        out
    }

    #[test]
    fn escapes_like_python() {
        // Expected strings produced by CPython 3.11 json.dumps.
        assert_eq!(dumped("a/b:0"), r#""a/b:0""#);
        assert_eq!(dumped("q\"b\\"), r#""q\"b\\""#);
        assert_eq!(dumped("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(dumped("\0\u{1f}\u{7f}"), r#""\u0000\u001f\u007f""#);
        assert_eq!(dumped("é€"), r#""\u00e9\u20ac""#);
        assert_eq!(dumped("😀"), r#""\ud83d\ude00""#);
        assert_eq!(dumped(""), r#""""#);
    }
}
