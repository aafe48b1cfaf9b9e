//! JSON as Python's `json` module reads and writes it.
//!
//! smdebug writes its JSON files with `json.dumps` defaults and reads them with `json.loads`.
//! Byte-identical output and identical acceptance need a model that serde_json's defaults do not
//! give: key order as written (duplicates keep the first position and the last value, like a
//! Python `dict`), integers of any size, the `NaN`/`Infinity` literals, `", "` / `": "`
//! separators and `ensure_ascii` escaping with lower-case hex.

use std::collections::HashMap;
use std::fmt::Write as _;

/// Nesting deeper than this is refused: Python's parser hits its recursion limit near 1000, and
/// a bound keeps hostile input from exhausting the stack.
pub const MAX_DEPTH: usize = 512;

/// A JSON value with Python's reading of it.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `null` (`None`).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal that fits in an `i64`.
    Int(i64),
    /// An integer literal too large for an `i64`, kept as its decimal text (Python ints are
    /// unbounded, so the text is the value).
    BigInt(String),
    /// A literal with a fraction or exponent, or `NaN` / `Infinity` / `-Infinity`.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<PyValue>),
    /// An object, keys in first-seen order.
    Object(Vec<(String, PyValue)>),
}

impl PyValue {
    /// Looks a key up in an object (`None` for other values or a missing key).
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Object(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A short rendering for error messages (JSON text, truncated).
    pub fn repr(&self) -> String {
        let mut s = String::new();
        write_value(&mut s, self);
        if s.len() > 80 {
            let mut cut = 77;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("...");
        }
        s
    }

    /// The Python type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            PyValue::Null => "null",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) | PyValue::BigInt(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Str(_) => "string",
            PyValue::Array(_) => "array",
            PyValue::Object(_) => "object",
        }
    }
}

/// Why a text is not JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {message}")]
pub struct JsonSyntaxError {
    /// Byte offset of the problem in the input.
    pub offset: usize,
    /// What was wrong.
    pub message: String,
}

/// The text of a JSON file's bytes: invalid UTF-8 is a syntax error at the first bad byte,
/// as Python's decoder reports it.
pub fn utf8_text(bytes: &[u8]) -> Result<&str, JsonSyntaxError> {
    std::str::from_utf8(bytes).map_err(|e| JsonSyntaxError {
        offset: e.valid_up_to(),
        message: "invalid UTF-8".into(),
    })
}

/// Parses a whole document (surrounding whitespace allowed, nothing else after the value).
pub fn parse(text: &str) -> Result<PyValue, JsonSyntaxError> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        pos: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(p.err("extra data after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, message: &str) -> JsonSyntaxError {
        JsonSyntaxError {
            offset: self.pos,
            message: message.to_string(),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.pos..].starts_with(lit.as_bytes()) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<PyValue, JsonSyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.s.get(self.pos) {
            None => Err(self.err("expected a value, found the end")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(PyValue::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => {
                if self.eat("-Infinity") {
                    return Ok(PyValue::Float(f64::NEG_INFINITY));
                }
                self.number()
            }
            Some(_) => {
                if self.eat("null") {
                    Ok(PyValue::Null)
                } else if self.eat("true") {
                    Ok(PyValue::Bool(true))
                } else if self.eat("false") {
                    Ok(PyValue::Bool(false))
                } else if self.eat("NaN") {
                    Ok(PyValue::Float(f64::NAN))
                } else if self.eat("Infinity") {
                    Ok(PyValue::Float(f64::INFINITY))
                } else {
                    Err(self.err("expected a value"))
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<PyValue, JsonSyntaxError> {
        self.pos += 1;
        let mut items: Vec<(String, PyValue)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        self.ws();
        if self.eat("}") {
            return Ok(PyValue::Object(items));
        }
        loop {
            self.ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(":") {
                return Err(self.err("expected ':'"));
            }
            self.ws();
            let v = self.value(depth + 1)?;
            // Python builds a dict: a repeated key keeps its first position, takes the last value.
            match index.get(&key) {
                Some(&i) => items[i].1 = v,
                None => {
                    index.insert(key.clone(), items.len());
                    items.push((key, v));
                }
            }
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("}") {
                return Ok(PyValue::Object(items));
            }
            return Err(self.err("expected ',' or '}'"));
        }
    }

    fn array(&mut self, depth: usize) -> Result<PyValue, JsonSyntaxError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat("]") {
            return Ok(PyValue::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("]") {
                return Ok(PyValue::Array(items));
            }
            return Err(self.err("expected ',' or ']'"));
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonSyntaxError> {
        let h = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err("truncated \\u escape"))?;
        let mut v = 0u32;
        for &b in h {
            let d = (b as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\u escape"))?;
            v = v * 16 + d;
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonSyntaxError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.s.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Slicing at ASCII delimiters keeps UTF-8 boundaries intact.
            out.push_str(&self.text[start..self.pos]);
            match self.s.get(self.pos) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = *self
                        .s
                        .get(self.pos)
                        .ok_or_else(|| self.err("unterminated escape"))?;
                    self.pos += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let at = self.pos;
                            let u = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&u) && self.eat("\\u") {
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    u32::MAX
                                }
                            } else {
                                u
                            };
                            // Python keeps lone surrogates in a str; a Rust String cannot.
                            let ch = char::from_u32(cp).ok_or(JsonSyntaxError {
                                offset: at,
                                message: "lone UTF-16 surrogate in \\u escape (not representable)"
                                    .into(),
                            })?;
                            out.push(ch);
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.err("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }

    fn number(&mut self) -> Result<PyValue, JsonSyntaxError> {
        let start = self.pos;
        self.eat("-");
        match self.s.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = self.s.get(self.pos) {
                    self.pos += 1;
                }
            }
            _ => return Err(self.err("expected a digit")),
        }
        let mut float = false;
        if self.s.get(self.pos) == Some(&b'.')
            && matches!(self.s.get(self.pos + 1), Some(b'0'..=b'9'))
        {
            float = true;
            self.pos += 1;
            while let Some(b'0'..=b'9') = self.s.get(self.pos) {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.pos) {
            let save = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.s.get(self.pos) {
                self.pos += 1;
            }
            if matches!(self.s.get(self.pos), Some(b'0'..=b'9')) {
                float = true;
                while let Some(b'0'..=b'9') = self.s.get(self.pos) {
                    self.pos += 1;
                }
            } else {
                // Python's scanner stops before an incomplete exponent; what follows is then
                // "extra data" or a missing delimiter.
                self.pos = save;
            }
        }
        let text = &self.text[start..self.pos];
        if float {
            Ok(PyValue::Float(text.parse::<f64>().map_err(|_| {
                JsonSyntaxError {
                    offset: start,
                    message: "invalid number".into(),
                }
            })?))
        } else {
            Ok(match text.parse::<i64>() {
                Ok(i) => PyValue::Int(i),
                Err(_) => PyValue::BigInt(normalize_big(text)),
            })
        }
    }
}

fn normalize_big(text: &str) -> String {
    // JSON forbids leading zeros, so the literal is already Python's `str(int)` form.
    text.to_string()
}

/// Serializes a value exactly as `json.dumps(value)` does with default arguments.
pub fn to_string(v: &PyValue) -> String {
    let mut s = String::new();
    write_value(&mut s, v);
    s
}

/// Appends `json.dumps(v)` to `out`.
pub fn write_value(out: &mut String, v: &PyValue) {
    match v {
        PyValue::Null => out.push_str("null"),
        PyValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        PyValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        PyValue::BigInt(t) => out.push_str(t),
        PyValue::Float(f) => write_float(out, *f),
        PyValue::Str(s) => write_str(out, s),
        PyValue::Array(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, it);
            }
            out.push(']');
        }
        PyValue::Object(items) => {
            out.push('{');
            for (i, (k, it)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_key(out, k);
                write_value(out, it);
            }
            out.push('}');
        }
    }
}

/// Appends an object key and the separator after it (`"key": `), as `json.dumps` writes it.
pub fn write_key(out: &mut String, key: &str) {
    write_str(out, key);
    out.push_str(": ");
}

/// Appends a string as `json.dumps` writes it with `ensure_ascii=True`: `\"`, `\\`, the
/// short escapes `\b \f \n \r \t`, every other code point outside U+0020..=U+007E as
/// `\uXXXX` (lower-case hex; UTF-16 surrogate pairs above U+FFFF); `/` is not escaped.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Appends Python's `float.__repr__` (shortest round-trip digits, Python's switch to
/// exponent notation) with `json`'s spellings of the non-finite values.
pub fn write_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // `{:e}` gives the shortest round-trip digits as d.ddddde±x.
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                out.push_str(&digits);
                for _ in 0..(int_len - n) {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len as usize]);
                out.push('.');
                out.push_str(&digits[int_len as usize..]);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// Python's `int(x)` for a JSON value: ints as they are, bools as 0/1, floats truncated toward
/// zero, strings parsed as Python parses them (surrounding whitespace, a sign, `_` between
/// digits). `None` when Python would raise or the value does not fit in an `i64`.
pub fn py_int(v: &PyValue) -> Option<i64> {
    match v {
        PyValue::Int(i) => Some(*i),
        PyValue::Bool(b) => Some(*b as i64),
        PyValue::Float(f) => {
            if !f.is_finite() {
                return None;
            }
            let t = f.trunc();
            if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&t) {
                Some(t as i64)
            } else {
                None
            }
        }
        PyValue::Str(s) => py_int_str(s),
        _ => None,
    }
}

/// Python's `int(s)` for a string, limited to ASCII digits and the `i64` range.
///
/// `int()` strips Unicode `White_Space` only, which is Rust's [`char::is_whitespace`]; it
/// keeps U+001C..U+001F, unlike `str.strip()` ([`crate::python_strip`]).
pub fn py_int_str(s: &str) -> Option<i64> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let mut acc: i128 = 0;
    for b in body.bytes() {
        match b {
            b'0'..=b'9' => {
                acc = acc * 10 + (b - b'0') as i128;
                if acc > (i64::MAX as i128) + 1 {
                    return None;
                }
            }
            b'_' => {}
            _ => return None,
        }
    }
    let v = if neg { -acc } else { acc };
    i64::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumped(s: &str) -> String {
        let mut out = String::new();
        write_str(&mut out, s);
        out
    }

    #[test]
    fn strings_escape_like_python() {
        // Expected strings produced by CPython 3.11 json.dumps.
        assert_eq!(dumped("a/b:0"), r#""a/b:0""#);
        assert_eq!(dumped("q\"b\\"), r#""q\"b\\""#);
        assert_eq!(dumped("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(dumped("\0\u{1f}\u{7f}"), r#""\u0000\u001f\u007f""#);
        assert_eq!(dumped("é€"), r#""\u00e9\u20ac""#);
        assert_eq!(dumped("😀"), r#""\ud83d\ude00""#);
        assert_eq!(dumped(""), r#""""#);
        let mut out = String::new();
        write_key(&mut out, "k");
        assert_eq!(out, r#""k": "#);
    }

    #[test]
    fn dumps_matches_python_text() {
        let v = parse(r#"{"a": [1, 2.5, null, true], "b": "\u00e9\ud83d\ude00/\u007f", "c": {}}"#)
            .unwrap();
        assert_eq!(
            to_string(&v),
            r#"{"a": [1, 2.5, null, true], "b": "\u00e9\ud83d\ude00/\u007f", "c": {}}"#
        );
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let v = parse(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a": 3, "b": 2}"#);
    }

    #[test]
    fn floats_like_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (2.5, "2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0.0"),
            (1.5e300, "1.5e+300"),
            (0.1, "0.1"),
            (123456789.125, "123456789.125"),
        ];
        for (f, want) in cases {
            let mut s = String::new();
            write_float(&mut s, f);
            assert_eq!(s, want, "{f}");
        }
    }

    #[test]
    fn big_ints_and_specials() {
        let v = parse("[123456789012345678901234567890, -Infinity, NaN, 1E5]").unwrap();
        assert_eq!(
            to_string(&v),
            "[123456789012345678901234567890, -Infinity, NaN, 100000.0]"
        );
    }

    #[test]
    fn rejects_bad_json_with_offsets() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "\"\\x\"",
            "01",
            "\"\u{1}\"",
            "1 2",
            "\"\\ud800\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn int_conversion_like_python() {
        assert_eq!(py_int_str(" 12 "), Some(12));
        assert_eq!(py_int_str("1_000"), Some(1000));
        assert_eq!(py_int_str("-5"), Some(-5));
        assert_eq!(py_int_str("1__0"), None);
        assert_eq!(py_int_str("abc"), None);
        assert_eq!(py_int_str("None"), None);
        assert_eq!(py_int(&PyValue::Float(2.7)), Some(2));
        assert_eq!(py_int(&PyValue::Float(-2.7)), Some(-2));
        assert_eq!(py_int(&PyValue::Bool(true)), Some(1));
        assert_eq!(py_int(&PyValue::Float(f64::NAN)), None);
        assert_eq!(py_int(&PyValue::Null), None);
    }
}
