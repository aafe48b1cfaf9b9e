//! Python `re.search` semantics for collection regexes.
//!
//! smdebug matches tensor names with `re.search(pattern, name)`: unanchored, Python syntax.
//! Patterns are translated where Python and Rust read the same text differently, compiled with
//! the `regex` crate when it can, and with `fancy-regex` only when the pattern needs
//! look-around or back-references (smdebug's own defaults do: `^(?!gradient).*weight`).
//!
//! Translations (Python meaning → Rust text):
//! * `{` that does not start a valid quantifier is a literal in Python → `\{`; `{,n}` → `{0,n}`.
//! * Inside a class, `[`, `&`, `~` and `-` after `-` are literals in Python but set operators or
//!   nested classes in Rust → escaped.
//! * `\Z` (end of string) → `\z`; `\<` / `\>` are literals in Python, word boundaries in Rust
//!   → `<` / `>`.
//! * `$` matches at the end **or before a final `\n`** in Python. For names without a final
//!   newline that is Rust's `$`; names that end with `\n` are matched with a second,
//!   look-ahead form `(?=\n?\z)` compiled on demand.

use crate::error::ConfigError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Patterns whose compiled form [`PyRegex::new`] keeps for the process, at most: a reader of
/// many trials meets the same few collection patterns in every one, and building their
/// automata again per trial costs more than reading a small trial.
const MEMO_PATTERNS: usize = 1024;

/// The compiled patterns kept so far (see [`MEMO_PATTERNS`]).
fn memo() -> &'static Mutex<HashMap<String, PyRegex>> {
    static MEMO: OnceLock<Mutex<HashMap<String, PyRegex>>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

#[derive(Debug)]
enum Engine {
    Std(regex::Regex),
    Fancy(Box<fancy_regex::Regex>),
}

impl Engine {
    fn compile(rust: &str) -> Result<Engine, String> {
        match regex::Regex::new(rust) {
            Ok(r) => Ok(Engine::Std(r)),
            Err(std_err) => fancy_regex::Regex::new(rust)
                .map(|r| Engine::Fancy(Box::new(r)))
                .map_err(|e| format!("{e} (regex crate: {std_err})")),
        }
    }

    fn is_match(&self, s: &str) -> Result<bool, String> {
        match self {
            Engine::Std(r) => Ok(r.is_match(s)),
            Engine::Fancy(r) => r.is_match(s).map_err(|e| e.to_string()),
        }
    }

    fn is_fancy(&self) -> bool {
        matches!(self, Engine::Fancy(_))
    }
}

/// A compiled Python regex, matched with `re.search` semantics.
///
/// ```
/// use smdebug_config::PyRegex;
/// let weights = PyRegex::new("^(?!gradient).*weight").unwrap();
/// assert!(weights.search("fc1.weight").unwrap());
/// assert!(!weights.search("gradient/fc1.weight").unwrap());
/// assert!(PyRegex::new("(").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct PyRegex(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    pattern: String,
    main: Engine,
    /// `Some` when the pattern has a `$` that must also match before a final newline.
    nl_text: Option<String>,
    nl: OnceLock<Result<Engine, String>>,
}

impl PyRegex {
    /// Compiles a Python pattern; the error names the pattern. A pattern compiled before in
    /// this process is shared rather than compiled again (the first 1,024 distinct
    /// patterns): a compiled pattern never changes.
    pub fn new(pattern: &str) -> Result<PyRegex, ConfigError> {
        let lock = || memo().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = lock().get(pattern) {
            return Ok(r.clone());
        }
        let compiled = PyRegex::compile(pattern)?;
        let mut memo = lock();
        if memo.len() < MEMO_PATTERNS {
            memo.insert(pattern.to_owned(), compiled.clone());
        }
        Ok(compiled)
    }

    fn compile(pattern: &str) -> Result<PyRegex, ConfigError> {
        let err = |message: String| ConfigError::Regex {
            pattern: pattern.to_string(),
            message,
        };
        let t = translate(pattern).map_err(err)?;
        let main = Engine::compile(&t.dollar_plain).map_err(err)?;
        let nl_text = if t.has_dollar {
            Some(t.dollar_newline)
        } else {
            None
        };
        Ok(PyRegex(Arc::new(Inner {
            pattern: pattern.to_string(),
            main,
            nl_text,
            nl: OnceLock::new(),
        })))
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.0.pattern
    }

    /// Whether the pattern needed the look-around engine.
    pub fn uses_fancy(&self) -> bool {
        self.0.main.is_fancy()
    }

    /// `re.search(pattern, name) is not None`.
    ///
    /// Fails only when the backtracking engine gives up (its step limit), which Python never
    /// does.
    pub fn search(&self, name: &str) -> Result<bool, ConfigError> {
        let err = |message: String| ConfigError::Regex {
            pattern: self.0.pattern.clone(),
            message,
        };
        if let (Some(text), true) = (&self.0.nl_text, name.ends_with('\n')) {
            let engine = self.0.nl.get_or_init(|| Engine::compile(text));
            return match engine {
                Ok(e) => e.is_match(name).map_err(err),
                Err(m) => Err(err(m.clone())),
            };
        }
        self.0.main.is_match(name).map_err(err)
    }
}

impl PartialEq for PyRegex {
    fn eq(&self, other: &Self) -> bool {
        self.0.pattern == other.0.pattern
    }
}

struct Translated {
    dollar_plain: String,
    dollar_newline: String,
    has_dollar: bool,
}

/// Rewrites Python syntax into text the Rust engines read with the same meaning.
fn translate(p: &str) -> Result<Translated, String> {
    let chars: Vec<char> = p.chars().collect();
    check_lookbehinds(&chars)?;
    let mut a = String::with_capacity(p.len() + 8);
    let mut b = String::with_capacity(p.len() + 8);
    let mut has_dollar = false;
    let mut i = 0;
    let push = |a: &mut String, b: &mut String, s: &str| {
        a.push_str(s);
        b.push_str(s);
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err("bad escape (end of pattern)".into());
                };
                match n {
                    'Z' => push(&mut a, &mut b, "\\z"),
                    '<' | '>' => push(&mut a, &mut b, &n.to_string()),
                    _ => {
                        let mut s = String::from('\\');
                        s.push(n);
                        push(&mut a, &mut b, &s);
                    }
                }
                i += 2;
            }
            '[' => {
                let (text, next) = translate_class(&chars, i)?;
                push(&mut a, &mut b, &text);
                i = next;
            }
            '{' => {
                let (text, next) = translate_brace(&chars, i);
                push(&mut a, &mut b, &text);
                i = next;
            }
            '$' => {
                has_dollar = true;
                a.push('$');
                b.push_str("(?=\\n?\\z)");
                i += 1;
            }
            _ => {
                a.push(c);
                b.push(c);
                i += 1;
            }
        }
    }
    Ok(Translated {
        dollar_plain: a,
        dollar_newline: b,
        has_dollar,
    })
}

/// Python refuses look-behinds whose width is not fixed; fancy-regex would accept some, so they
/// are refused here first.
fn check_lookbehinds(chars: &[char]) -> Result<(), String> {
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => i = skip_class(chars, i),
            '(' if chars[i + 1..].starts_with(&['?', '<', '='])
                || chars[i + 1..].starts_with(&['?', '<', '!']) =>
            {
                let (w, end) = width_seq(chars, i + 4, 0);
                if w.is_none() || chars.get(end) != Some(&')') {
                    return Err("look-behind requires fixed-width pattern".into());
                }
                i += 4;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

fn skip_class(chars: &[char], start: usize) -> usize {
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            ']' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Width of an alternation starting at `i` up to an unmatched `)` or the end: `None` when the
/// branches differ or a branch has no fixed width. Returns the index where it stopped.
fn width_seq(chars: &[char], mut i: usize, depth: usize) -> (Option<usize>, usize) {
    if depth > 64 {
        return (None, i);
    }
    let mut branch: Option<usize> = Some(0);
    let mut result: Option<Option<usize>> = None;
    let mut last: Option<usize> = None;
    while let Some(&c) = chars.get(i) {
        let atom: Option<usize>;
        match c {
            ')' => break,
            '|' => {
                result = Some(match result {
                    None => branch,
                    Some(r) if r == branch => r,
                    Some(_) => None,
                });
                branch = Some(0);
                last = None;
                i += 1;
                continue;
            }
            '\\' => {
                let n = chars.get(i + 1).copied().unwrap_or('\\');
                atom = if matches!(n, 'b' | 'B' | 'A' | 'Z') {
                    Some(0)
                } else {
                    Some(1)
                };
                i += 2;
            }
            '[' => {
                atom = Some(1);
                i = skip_class(chars, i);
            }
            '^' | '$' => {
                atom = Some(0);
                i += 1;
            }
            '(' => {
                let mut j = i + 1;
                let zero = chars.get(j) == Some(&'?')
                    && matches!(chars.get(j + 1), Some('=' | '!'))
                    || chars[j..].starts_with(&['?', '<', '='])
                    || chars[j..].starts_with(&['?', '<', '!']);
                if chars.get(j) == Some(&'?') {
                    // Skip the group's flags or name up to its body.
                    if chars[j..].starts_with(&['?', 'P', '<']) {
                        while j < chars.len() && chars[j] != '>' {
                            j += 1;
                        }
                        j += 1;
                    } else if chars[j..].starts_with(&['?', '<']) {
                        j += 3;
                    } else if matches!(chars.get(j + 1), Some(':' | '=' | '!')) {
                        j += 2;
                    } else {
                        return (None, i);
                    }
                }
                let (w, end) = width_seq(chars, j, depth + 1);
                atom = if zero { w.map(|_| 0) } else { w };
                i = end + 1;
            }
            '*' | '+' | '?' => return (None, i),
            '{' => {
                let (text, next) = translate_brace(chars, i);
                if text == "\\{" {
                    atom = Some(1);
                    i = next;
                } else {
                    let inner = &text[1..text.len() - 1];
                    let fixed = match inner.split_once(',') {
                        None => inner.parse::<usize>().ok(),
                        Some((a, b)) if a == b => a.parse::<usize>().ok(),
                        _ => None,
                    };
                    match (fixed, last) {
                        (Some(n), Some(l)) => {
                            branch = branch.and_then(|b| (b - l).checked_add(l.checked_mul(n)?));
                            last = None;
                            i = next;
                            continue;
                        }
                        _ => return (None, i),
                    }
                }
            }
            _ => {
                atom = Some(1);
                i += 1;
            }
        }
        last = atom;
        branch = match (branch, atom) {
            (Some(b), Some(a)) => b.checked_add(a),
            _ => None,
        };
    }
    let w = match result {
        None => branch,
        Some(r) if r == branch => r,
        Some(_) => None,
    };
    (w, i)
}

/// A `[...]` class starting at `start`; returns the Rust text and the index after `]`.
fn translate_class(chars: &[char], start: usize) -> Result<(String, usize), String> {
    let mut out = String::from("[");
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` right after `[` or `[^` is a literal in both dialects.
    if chars.get(i) == Some(&']') {
        out.push_str("\\]");
        i += 1;
    }
    let mut prev_dash = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                out.push(']');
                return Ok((out, i + 1));
            }
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err("bad escape (end of pattern)".into());
                };
                match n {
                    '<' | '>' => out.push(n),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                i += 2;
                prev_dash = false;
                continue;
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '-' if prev_dash => out.push_str("\\-"),
            _ => out.push(c),
        }
        prev_dash = c == '-';
        i += 1;
    }
    Err(format!("unterminated character set at position {start}"))
}

/// A `{` at `start`: a Python quantifier (`{m}`, `{m,}`, `{,n}`, `{m,n}`) or a literal.
fn translate_brace(chars: &[char], start: usize) -> (String, usize) {
    let mut j = start + 1;
    let mut lo = String::new();
    while j < chars.len() && chars[j].is_ascii_digit() {
        lo.push(chars[j]);
        j += 1;
    }
    let mut hi: Option<String> = None;
    if chars.get(j) == Some(&',') {
        j += 1;
        let mut h = String::new();
        while j < chars.len() && chars[j].is_ascii_digit() {
            h.push(chars[j]);
            j += 1;
        }
        hi = Some(h);
    }
    let valid = chars.get(j) == Some(&'}') && !(lo.is_empty() && hi.is_none());
    if !valid {
        return ("\\{".to_string(), start + 1);
    }
    let lo = if lo.is_empty() { "0".to_string() } else { lo };
    let text = match hi {
        None => format!("{{{lo}}}"),
        Some(h) => format!("{{{lo},{h}}}"),
    };
    (text, j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        PyRegex::new(p).unwrap().search(s).unwrap()
    }

    #[test]
    fn a_pattern_is_compiled_once() {
        let a = PyRegex::new("^memo-test-(?!x).*$").unwrap();
        let b = PyRegex::new("^memo-test-(?!x).*$").unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(b.search("memo-test-y").unwrap());
        assert!(!b.search("memo-test-x").unwrap());
        let other = PyRegex::new("^memo-test-(?!y).*$").unwrap();
        assert!(!Arc::ptr_eq(&a.0, &other.0));
        assert!(PyRegex::new("memo-test-(").is_err());
        assert!(PyRegex::new("memo-test-(").is_err());
    }

    #[test]
    fn defaults_use_the_right_engine() {
        assert!(!PyRegex::new("^gradient").unwrap().uses_fancy());
        assert!(PyRegex::new("^(?!gradient).*weight").unwrap().uses_fancy());
        assert!(m("^[a-zA-z]+-.+(?<!(auc|map))$", "train-rmse"));
        assert!(!m("^[a-zA-z]+-.+(?<!(auc|map))$", "train-auc"));
        assert!(m("[Ll]oss_(?!input).*output", "Loss_output_0"));
        assert!(!m("[Ll]oss_(?!input).*output", "loss_input_0_output"));
    }

    #[test]
    fn python_dialect_differences() {
        assert!(m("^labels$", "labels\n"));
        assert!(!m("^labels$", "labels\n\n"));
        assert!(m("^labels$", "labels"));
        assert!(m("a{", "xa{"));
        assert!(m("a{,2}b", "aab"));
        assert!(m("x{1,", "x{1,"));
        assert!(m("[[]", "a[b"));
        assert!(m("[a&&b]", "&"));
        assert!(m("\\<w\\>", "<w>"));
        assert!(m("ab\\Z", "ab"));
        assert!(!m("ab\\Z", "ab\n"));
        assert!(m("", "anything"));
        assert!(m("(?<=ab|cd)x", "cdx"));
        assert!(m("(?<=a{2}(b))x", "aabx"));
    }

    #[test]
    fn errors_name_the_pattern() {
        for bad in [
            "(",
            "[a",
            "a\\",
            "*a",
            "(?<=a+)b",
            "(?<!ab|c)x",
            "(?<=a{1,2})",
        ] {
            let e = PyRegex::new(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }
}
