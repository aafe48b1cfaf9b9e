//! Key rules shared by every backend, so a key that works on disk works in a bucket and back.

use crate::error::{Result, StorageError};

/// The longest key accepted, in bytes: S3's limit, so a trial can always be copied to S3.
pub const MAX_KEY_LEN: usize = 1024;

/// Checks that `key` is a safe relative key: non-empty, at most [`MAX_KEY_LEN`] bytes,
/// `/`-separated components that are neither empty (no leading, trailing or doubled `/`) nor
/// `.`/`..`, and no NUL or backslash anywhere (a backslash is a separator on Windows, so it
/// could smuggle a `..` past these checks there).
///
/// ```
/// use smdebug_storage::validate_key;
/// assert!(validate_key("events/000000000001/000000000001_worker_0.tfevents").is_ok());
/// assert!(validate_key("../etc/passwd").is_err());
/// assert!(validate_key("/abs").is_err());
/// ```
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(invalid(key, "empty key"));
    }
    check_common(key)?;
    for component in key.split('/') {
        check_component(key, component)?;
    }
    Ok(())
}

/// Checks a list prefix: like [`validate_key`] but it may be empty (everything) and may end
/// with `/`; its last component may be partial (`index/0000` matches `index/000000000/…`).
pub fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty() {
        return Ok(());
    }
    check_common(prefix)?;
    let body = prefix.strip_suffix('/').unwrap_or(prefix);
    if body.is_empty() {
        return Err(invalid(prefix, "a prefix cannot be only \"/\""));
    }
    for component in body.split('/') {
        check_component(prefix, component)?;
    }
    Ok(())
}

fn check_common(key: &str) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(invalid(key, "longer than 1024 bytes"));
    }
    if key.contains('\0') {
        return Err(invalid(key, "contains NUL"));
    }
    if key.contains('\\') {
        return Err(invalid(key, "contains a backslash"));
    }
    if key.starts_with('/') {
        return Err(invalid(key, "absolute (starts with /)"));
    }
    Ok(())
}

fn check_component(key: &str, component: &str) -> Result<()> {
    match component {
        "" => Err(invalid(
            key,
            "empty path component (leading, trailing or doubled /)",
        )),
        "." | ".." => Err(invalid(key, "\".\" or \"..\" path component")),
        // A drive prefix (`C:`) would make the joined path absolute on Windows.
        c if cfg!(windows) && c.contains(':') => Err(invalid(key, "contains ':' (Windows drive)")),
        _ => Ok(()),
    }
}

pub(crate) fn invalid(key: &str, reason: &'static str) -> StorageError {
    StorageError::InvalidKey {
        key: key.to_owned(),
        reason,
    }
}

/// The part of a list prefix up to and including its last `/` (the deepest folder every
/// match lives under), e.g. `index/000` → `index/`, `a/b/` → `a/b/`, `abc` → ``.
pub(crate) fn prefix_dir(prefix: &str) -> &str {
    match prefix.rfind('/') {
        Some(i) => &prefix[..=i],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_trial_keys() {
        for k in [
            "a",
            "training_job_end.ts",
            "index/000000000/000000000001_worker_0.json",
            "collections/000000000/worker_0_collections.json",
            "weird name with spaces/ünïcödé",
            "..hidden/x..y/.z",
        ] {
            validate_key(k).unwrap();
        }
    }

    #[test]
    fn rejects_hostile_keys() {
        for k in [
            "",
            "/",
            "/etc/passwd",
            "..",
            "../x",
            "a/../../x",
            "a/./b",
            "a//b",
            "a/",
            "./a",
            "a\0b",
            "a\\..\\b",
            "C:\\x",
        ] {
            let err = validate_key(k).unwrap_err();
            assert!(
                matches!(err, StorageError::InvalidKey { .. }),
                "{k:?}: {err}"
            );
        }
        validate_key(&"a".repeat(MAX_KEY_LEN + 1)).unwrap_err();
        validate_key(&"a".repeat(MAX_KEY_LEN)).unwrap();
    }

    #[test]
    fn prefixes() {
        for p in ["", "a", "a/", "index/0000", "a/b/"] {
            validate_prefix(p).unwrap();
        }
        for p in ["/", "//", "/a", "a//", "../", "a/../b/", "a\\b"] {
            validate_prefix(p).unwrap_err();
        }
        assert_eq!(prefix_dir("index/000"), "index/");
        assert_eq!(prefix_dir("a/b/"), "a/b/");
        assert_eq!(prefix_dir("abc"), "");
    }

    proptest! {
        /// Whatever is accepted joins under a root without escaping it.
        #[test]
        fn accepted_keys_stay_under_root(key in "[a./\\\\\0]{0,12}") {
            if validate_key(&key).is_ok() {
                let root = std::path::Path::new("/root");
                let joined = root.join(&key);
                prop_assert!(joined.starts_with(root));
                for c in joined.strip_prefix(root).unwrap().components() {
                    prop_assert!(matches!(c, std::path::Component::Normal(_)), "{key:?}");
                }
            }
        }
    }
}
