//! Trial locations: a local directory or an object-store prefix (FORMAT.md §1).

use std::fmt;

use crate::error::LocationError;

/// An object store a trial can live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Amazon S3 or an S3-compatible server (`s3://`), the only one smdebug knows.
    S3,
    /// Google Cloud Storage (`gs://`), an extension of this project.
    Gcs,
    /// Azure Blob Storage (`az://`), an extension of this project.
    Azure,
}

impl Scheme {
    /// The URL prefix, e.g. `s3://`.
    pub fn prefix(self) -> &'static str {
        match self {
            Scheme::S3 => "s3://",
            Scheme::Gcs => "gs://",
            Scheme::Azure => "az://",
        }
    }

    const ALL: [Scheme; 3] = [Scheme::S3, Scheme::Gcs, Scheme::Azure];
}

/// Where a trial lives: a local directory or `scheme://bucket/prefix`.
///
/// String-level only: nothing here touches the file system or the network (the storage crate
/// does that), so a local path is kept as text, without `~` expansion or normalisation.
///
/// ```
/// use smdebug_index::{TrialLocation, Scheme};
/// let t = TrialLocation::parse(" s3://bucket/runs//a ").unwrap();
/// assert_eq!(t, TrialLocation::ObjectStore { scheme: Scheme::S3, bucket: "bucket".into(), prefix: "runs//a".into() });
/// assert_eq!(t.key("index/000000000/000000000000_worker_0.json"), "runs/a/index/000000000/000000000000_worker_0.json");
/// assert_eq!(t.uri("training_job_end.ts"), "s3://bucket/runs/a/training_job_end.ts");
///
/// let local = TrialLocation::parse("/tmp/trial/").unwrap();
/// assert_eq!(local.key("training_job_end.ts"), "/tmp/trial/training_job_end.ts");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TrialLocation {
    /// A local directory, as given (whitespace stripped).
    Local {
        /// The path.
        path: String,
    },
    /// A prefix in an object-store bucket.
    ObjectStore {
        /// Which store.
        scheme: Scheme,
        /// The bucket: everything up to the first `/` after the scheme.
        bucket: String,
        /// The key prefix: everything after that `/`, as given (may be empty).
        prefix: String,
    },
}

/// Python's `str.strip()` removes these besides Unicode `White_Space`.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Collapses runs of `/` into one, as smdebug's S3 writer does for every key.
fn collapse_slashes(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut previous_slash = false;
    for c in key.chars() {
        if c == '/' && previous_slash {
            continue;
        }
        previous_slash = c == '/';
        out.push(c);
    }
    out
}

impl TrialLocation {
    /// Parses a trial location: strips surrounding whitespace (like `create_trial`), then
    /// `s3://`, `gs://` or `az://` (case-sensitive, as in smdebug) start an object-store
    /// location whose bucket runs up to the first `/` and whose prefix is the rest (`s3://b`
    /// and `s3://b/` both have prefix `""`); anything else is a local path.
    pub fn parse(location: &str) -> Result<Self, LocationError> {
        let stripped = location.trim_matches(is_python_whitespace);
        if stripped.is_empty() {
            return Err(LocationError::Empty);
        }
        if stripped.contains('\0') {
            return Err(LocationError::Nul {
                location: location.to_owned(),
            });
        }
        for scheme in Scheme::ALL {
            if let Some(rest) = stripped.strip_prefix(scheme.prefix()) {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(LocationError::EmptyBucket {
                        location: location.to_owned(),
                        scheme: scheme.prefix(),
                    });
                }
                return Ok(TrialLocation::ObjectStore {
                    scheme,
                    bucket: bucket.to_owned(),
                    prefix: prefix.to_owned(),
                });
            }
        }
        Ok(TrialLocation::Local {
            path: stripped.to_owned(),
        })
    }

    /// Whether the trial is in an object store.
    pub fn is_remote(&self) -> bool {
        matches!(self, TrialLocation::ObjectStore { .. })
    }

    /// The key of a file of the trial, given its key relative to the trial root: for a local
    /// trial the path (`{path}/{relative}`, like `os.path.join`), for an object store the
    /// object key inside the bucket (`{prefix}/{relative}` with runs of `/` collapsed, as
    /// smdebug's S3 writer does).
    pub fn key(&self, relative: &str) -> String {
        match self {
            TrialLocation::Local { path } => join(path, relative),
            TrialLocation::ObjectStore { prefix, .. } => collapse_slashes(&join(prefix, relative)),
        }
    }

    /// Like [`TrialLocation::key`], but for an object store the full URI
    /// (`s3://bucket/key`).
    pub fn uri(&self, relative: &str) -> String {
        match self {
            TrialLocation::Local { .. } => self.key(relative),
            TrialLocation::ObjectStore { scheme, bucket, .. } => {
                format!("{}{bucket}/{}", scheme.prefix(), self.key(relative))
            }
        }
    }

    /// The listing prefix of a trial folder such as `index` or `events` (object stores: the
    /// key prefix with a trailing `/`; local: the folder path with a trailing `/`).
    pub fn dir_key(&self, relative_dir: &str) -> String {
        let mut k = self.key(relative_dir);
        if !k.ends_with('/') {
            k.push('/');
        }
        k
    }
}

/// The default name of a trial (`create_trial`): the text after the last `/` of the
/// whitespace-stripped location (Python's `os.path.basename`), so `…/run_1/` gives `""`.
///
/// ```
/// assert_eq!(smdebug_index::default_trial_name(" s3://b/runs/run_1 "), "run_1");
/// assert_eq!(smdebug_index::default_trial_name("/tmp/run_1/"), "");
/// ```
pub fn default_trial_name(location: &str) -> String {
    let stripped = location.trim_matches(is_python_whitespace);
    stripped.rsplit('/').next().unwrap_or_default().to_owned()
}

/// `os.path.join(base, rel)` for a relative `rel`: adds a `/` unless `base` is empty or
/// already ends with one.
fn join(base: &str, relative: &str) -> String {
    if base.is_empty() {
        relative.to_owned()
    } else if base.ends_with('/') {
        format!("{base}{relative}")
    } else {
        format!("{base}/{relative}")
    }
}

impl fmt::Display for TrialLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrialLocation::Local { path } => f.write_str(path),
            TrialLocation::ObjectStore {
                scheme,
                bucket,
                prefix,
            } => {
                if prefix.is_empty() {
                    write!(f, "{}{bucket}", scheme.prefix())
                } else {
                    write!(f, "{}{bucket}/{prefix}", scheme.prefix())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(scheme: Scheme, bucket: &str, prefix: &str) -> TrialLocation {
        TrialLocation::ObjectStore {
            scheme,
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    #[test]
    fn is_s3_cases() {
        // TESTS.md C.21–C.23, C.27
        assert_eq!(
            TrialLocation::parse("a/b/c").unwrap(),
            TrialLocation::Local {
                path: "a/b/c".into()
            }
        );
        assert_eq!(
            TrialLocation::parse("s3://a/b").unwrap(),
            remote(Scheme::S3, "a", "b")
        );
        assert_eq!(
            TrialLocation::parse("s3://a").unwrap(),
            remote(Scheme::S3, "a", "")
        );
        assert_eq!(
            TrialLocation::parse("s3://a/").unwrap(),
            remote(Scheme::S3, "a", "")
        );
        assert_eq!(
            TrialLocation::parse("\t s3://a/b/c/ \n\u{1f}").unwrap(),
            remote(Scheme::S3, "a", "b/c/")
        );
        assert_eq!(
            TrialLocation::parse("gs://g/p").unwrap(),
            remote(Scheme::Gcs, "g", "p")
        );
        assert_eq!(
            TrialLocation::parse("az://c/p").unwrap(),
            remote(Scheme::Azure, "c", "p")
        );
        assert!(!TrialLocation::parse("S3://a/b").unwrap().is_remote());
        assert_eq!(TrialLocation::parse("  "), Err(LocationError::Empty));
        assert!(matches!(
            TrialLocation::parse("s3:///x"),
            Err(LocationError::EmptyBucket { .. })
        ));
        assert!(matches!(
            TrialLocation::parse("a\0"),
            Err(LocationError::Nul { .. })
        ));
    }

    #[test]
    fn keys_and_uris() {
        let t = TrialLocation::parse("s3://b").unwrap();
        assert_eq!(t.key("index/x.json"), "index/x.json");
        assert_eq!(t.uri("index/x.json"), "s3://b/index/x.json");
        assert_eq!(t.dir_key("index"), "index/");
        let t = TrialLocation::parse("s3://b/p/").unwrap();
        assert_eq!(t.key("events//x"), "p/events/x");
        assert_eq!(t.to_string(), "s3://b/p/");
        assert_eq!(default_trial_name("s3://b/p/"), "");
        assert_eq!(default_trial_name("s3://b"), "b");
        let t = TrialLocation::parse("s3://b//p").unwrap();
        assert_eq!(
            t.key("a"),
            "/p/a",
            "a leading slash is kept, runs collapsed"
        );
        let l = TrialLocation::parse("rel/trial").unwrap();
        assert_eq!(l.key("index"), "rel/trial/index");
        assert_eq!(l.dir_key("index"), "rel/trial/index/");
        assert_eq!(default_trial_name("rel/trial"), "trial");
    }
}
