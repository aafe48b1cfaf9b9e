//! Where a trial lives, parsed from the strings users type.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use object_store::memory::InMemory;

use crate::error::{Result, StorageError};
use crate::local_store::{LocalStorage, LocalSync};
use crate::object::{ObjectStorage, ObjectStoreOptions};
use crate::retry::LocalRetry;
use crate::Storage;

/// A place that holds objects: a local folder or a bucket/container prefix.
///
/// Parsed by [`Location::parse`], the one parser of trial locations (the hook's `out_dir`
/// and TensorBoard folder, the reader's trial paths, the CLI's arguments):
///
/// | string | location |
/// |---|---|
/// | `/data/trial`, `trial`, `~/trial`, `file:///data/trial` | [`Location::Local`] (`~` and `~/…` are expanded with `$HOME` as Python's `os.path.expanduser` does, which smdebug applies to local trials and `out_dir`) |
/// | `s3://bucket/prefix` | [`Location::S3`] (smdebug's `is_s3`: the bucket runs up to the first `/`) |
/// | `gs://bucket/prefix` | [`Location::Gcs`] |
/// | `az://container/prefix` | [`Location::Azure`] |
/// | `memory://name/prefix` | [`Location::Memory`]: a process-wide in-memory store per name, for tests |
///
/// Where this differs from smdebug 1.0.34, which knows only `s3://` and takes every other
/// string for a local path:
///
/// * `scheme://…` with a scheme not in the table (`ftp://x`, `S3://b`, a typo) is an error,
///   not a relative local folder named `ftp:`. Text before `://` that is no URL scheme
///   (`/data/a://b`) still makes a local path, as in smdebug.
/// * `gs://`, `az://`, `memory://` and `file://` are this project's extensions.
/// * For object stores the prefix is normalised: runs of `/` collapse and leading/trailing `/`
///   go (`s3://b`, `s3://b/` and `s3://b//` all mean the whole bucket). smdebug's S3 writer
///   collapses runs too, but keeps a leading `/`: `s3://b//p` is the prefix `/p` there and `p`
///   here (object stores cannot address a key with an empty first component).
/// * `~user/…` is not expanded, nor is `~` when `$HOME` is unset.
/// * Surrounding whitespace is part of the string: the reader (`smdebug_trial::create_trial`)
///   strips it before parsing, as smdebug's `create_trial` does; the hook keeps it, as
///   smdebug's hook does.
///
/// ```
/// use smdebug_storage::Location;
/// let l = Location::parse("s3://my-bucket/jobs//run-1/").unwrap();
/// assert_eq!(l, Location::S3 { bucket: "my-bucket".into(), prefix: "jobs/run-1".into() });
/// assert_eq!(l.to_string(), "s3://my-bucket/jobs/run-1");
/// assert!(Location::parse("ftp://x").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// A folder on a local (or mounted) file system.
    Local(PathBuf),
    /// An Amazon S3 (or S3-compatible) bucket and key prefix.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix, without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// A Google Cloud Storage bucket and key prefix.
    Gcs {
        /// The bucket.
        bucket: String,
        /// The key prefix, without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// An Azure Blob Storage container and key prefix.
    Azure {
        /// The container.
        container: String,
        /// The key prefix, without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// A named in-memory store shared by everything in this process that opens the same
    /// name (so a writer and a reader in one test see the same objects).
    Memory {
        /// The store's name (may be empty).
        name: String,
        /// The key prefix, without leading or trailing `/` (may be empty).
        prefix: String,
    },
}

/// Settings used when opening a [`Location`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageOptions {
    /// Retries of transient local I/O errors.
    pub local_retry: LocalRetry,
    /// Whether local puts fsync (see [`LocalSync`]).
    pub local_sync: LocalSync,
    /// Retries, timeouts and range reads of object stores (also used for `memory://`).
    pub object_store: ObjectStoreOptions,
}

impl Location {
    /// Parses a location string (see the table above).
    pub fn parse(s: &str) -> Result<Location> {
        let bad = |reason: &str| StorageError::InvalidLocation {
            location: s.to_owned(),
            reason: reason.to_owned(),
        };
        if s.is_empty() {
            return Err(bad("empty location"));
        }
        // No file system or object store accepts it; refused here rather than at first use.
        if s.contains('\0') {
            return Err(bad("contains NUL"));
        }
        let Some((scheme, rest)) = s
            .split_once("://")
            .filter(|(scheme, _)| is_url_scheme(scheme))
        else {
            return Ok(Location::Local(expand_home(s)));
        };
        let split = |rest: &str, what: &str| -> Result<(String, String)> {
            let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let prefix: Vec<&str> = prefix.split('/').filter(|c| !c.is_empty()).collect();
            let prefix = prefix.join("/");
            if !prefix.is_empty() {
                crate::validate_key(&prefix).map_err(|e| bad(&e.to_string()))?;
            }
            if name.is_empty() && what != "name" {
                return Err(bad(&format!("no {what}")));
            }
            Ok((name.to_owned(), prefix))
        };
        match scheme {
            "file" => {
                if rest.is_empty() {
                    return Err(bad("empty path"));
                }
                Ok(Location::Local(PathBuf::from(rest)))
            }
            "s3" | "s3a" => {
                let (bucket, prefix) = split(rest, "bucket")?;
                Ok(Location::S3 { bucket, prefix })
            }
            "gs" => {
                let (bucket, prefix) = split(rest, "bucket")?;
                Ok(Location::Gcs { bucket, prefix })
            }
            "az" | "azure" => {
                let (container, prefix) = split(rest, "container")?;
                Ok(Location::Azure { container, prefix })
            }
            "memory" => {
                let (name, prefix) = split(rest, "name")?;
                Ok(Location::Memory { name, prefix })
            }
            _ => Err(bad(&format!(
                "unknown scheme {scheme:?} (expected a local path, file://, s3://, gs://, az:// or memory://)"
            ))),
        }
    }

    /// Opens the location with default [`StorageOptions`].
    pub fn open(&self) -> Result<Arc<dyn Storage>> {
        self.open_with(&StorageOptions::default())
    }

    /// Opens the location. Nothing is contacted yet: a missing bucket or bad credentials show
    /// up as errors of the first operation. Object store credentials, region and endpoint
    /// come from the environment (see the crate README).
    pub fn open_with(&self, options: &StorageOptions) -> Result<Arc<dyn Storage>> {
        let read = options.object_store.read.clone();
        let object = |store: Arc<dyn object_store::ObjectStore>, prefix: &str| {
            ObjectStorage::new(store, prefix, self.to_string(), read.clone())
                .map(|s| Arc::new(s) as Arc<dyn Storage>)
        };
        match self {
            Location::Local(root) => Ok(Arc::new(
                LocalStorage::new(root.clone())
                    .with_retry(options.local_retry.clone())
                    .with_sync(options.local_sync),
            )),
            Location::Memory { name, prefix } => object(memory_store(name), prefix),
            Location::S3 { bucket, prefix } => {
                object(self.s3(bucket, &options.object_store)?, prefix)
            }
            Location::Gcs { bucket, prefix } => {
                object(self.gcs(bucket, &options.object_store)?, prefix)
            }
            Location::Azure { container, prefix } => {
                object(self.azure(container, &options.object_store)?, prefix)
            }
        }
    }

    #[cfg(feature = "s3")]
    fn s3(
        &self,
        bucket: &str,
        options: &ObjectStoreOptions,
    ) -> Result<Arc<dyn object_store::ObjectStore>> {
        use object_store::aws::AmazonS3Builder;
        install_tls_provider();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let endpoint = options
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"));
        // An explicit http:// endpoint is a deliberate choice (a local test server), as
        // boto3 treats it; otherwise plain HTTP needs AWS_ALLOW_HTTP=true.
        let allow_http = env("AWS_ALLOW_HTTP").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"));
        // A plain http:// endpoint never does TLS: skip loading the system's root
        // certificates, a few milliseconds of every process that opens such a store.
        let plain = endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(options.retry_config())
            .with_client_options(
                options
                    .client_options(allow_http)
                    .with_no_system_certificates(plain),
            );
        if let Some(region) = env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")) {
            builder = builder.with_region(region);
        }
        if let Some(endpoint) = endpoint {
            // Custom servers (moto, MinIO, …) rarely have per-bucket DNS names.
            // Both keys: from_env may have set the S3-specific one, which wins in build().
            builder = builder
                .with_config(
                    object_store::aws::AmazonS3ConfigKey::S3Endpoint,
                    endpoint.clone(),
                )
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
        }
        builder
            .build()
            .map(|s| Arc::new(s) as Arc<dyn object_store::ObjectStore>)
            .map_err(|e| self.open_error(e))
    }

    #[cfg(not(feature = "s3"))]
    fn s3(&self, _: &str, _: &ObjectStoreOptions) -> Result<Arc<dyn object_store::ObjectStore>> {
        Err(self.unsupported("s3", "s3"))
    }

    #[cfg(feature = "gcp")]
    fn gcs(
        &self,
        bucket: &str,
        options: &ObjectStoreOptions,
    ) -> Result<Arc<dyn object_store::ObjectStore>> {
        install_tls_provider();
        // Plain HTTP allowed, as object_store's own GCS default: the base URL is Google's
        // https one unless `GOOGLE_BASE_URL` or the service account's `gcs_base_url` names
        // another, a deliberate choice (an emulator), as an http:// S3 endpoint is.
        object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(bucket)
            .with_retry(options.retry_config())
            .with_client_options(options.client_options(true))
            .build()
            .map(|s| Arc::new(s) as Arc<dyn object_store::ObjectStore>)
            .map_err(|e| self.open_error(e))
    }

    #[cfg(not(feature = "gcp"))]
    fn gcs(&self, _: &str, _: &ObjectStoreOptions) -> Result<Arc<dyn object_store::ObjectStore>> {
        Err(self.unsupported("gs", "gcp"))
    }

    #[cfg(feature = "azure")]
    fn azure(
        &self,
        container: &str,
        options: &ObjectStoreOptions,
    ) -> Result<Arc<dyn object_store::ObjectStore>> {
        install_tls_provider();
        // `AZURE_STORAGE_USE_EMULATOR=true` (and `AZURITE_BLOB_STORAGE_URL`) select Azurite,
        // which build() then allows over plain HTTP.
        object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_container_name(container)
            .with_retry(options.retry_config())
            .with_client_options(options.client_options(false))
            .build()
            .map(|s| Arc::new(s) as Arc<dyn object_store::ObjectStore>)
            .map_err(|e| self.open_error(e))
    }

    #[cfg(not(feature = "azure"))]
    fn azure(&self, _: &str, _: &ObjectStoreOptions) -> Result<Arc<dyn object_store::ObjectStore>> {
        Err(self.unsupported("az", "azure"))
    }

    #[allow(dead_code)] // unused when no cloud feature is enabled
    fn open_error(&self, source: object_store::Error) -> StorageError {
        StorageError::ObjectStore {
            op: crate::Operation::Open,
            location: self.to_string(),
            key: String::new(),
            source: Box::new(source),
        }
    }

    #[allow(dead_code)] // unused when every cloud feature is enabled
    fn unsupported(&self, scheme: &'static str, feature: &'static str) -> StorageError {
        StorageError::UnsupportedScheme {
            location: self.to_string(),
            scheme,
            feature,
        }
    }
}

impl std::str::FromStr for Location {
    type Err = StorageError;
    fn from_str(s: &str) -> Result<Location> {
        Location::parse(s)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, name, prefix) = match self {
            Location::Local(p) => return write!(f, "{}", p.display()),
            Location::S3 { bucket, prefix } => ("s3", bucket, prefix),
            Location::Gcs { bucket, prefix } => ("gs", bucket, prefix),
            Location::Azure { container, prefix } => ("az", container, prefix),
            Location::Memory { name, prefix } => ("memory", name, prefix),
        };
        write!(f, "{scheme}://{name}")?;
        if !prefix.is_empty() {
            write!(f, "/{prefix}")?;
        }
        Ok(())
    }
}

/// RFC 3986's `scheme`: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_url_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Python's `os.path.expanduser` for `~` and `~/…`: `$HOME` without trailing `/`, then the
/// rest from its `/` on (`/` when that leaves nothing). Anything else, and everything when
/// `$HOME` is unset, stays as it is.
fn expand_home(s: &str) -> PathBuf {
    let rest = match s.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => return PathBuf::from(s),
    };
    let Some(home) = std::env::var_os("HOME") else {
        return PathBuf::from(s);
    };
    match home.to_str() {
        Some(home) => {
            let expanded = format!("{}{rest}", home.trim_end_matches('/'));
            if expanded.is_empty() {
                PathBuf::from("/")
            } else {
                PathBuf::from(expanded)
            }
        }
        // A non-UTF-8 home: joined as a path, which differs only in doubled `/`.
        None => PathBuf::from(home).join(rest.trim_start_matches('/')),
    }
}

/// The process-wide in-memory store called `name`.
fn memory_store(name: &str) -> Arc<dyn object_store::ObjectStore> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<InMemory>>>> = OnceLock::new();
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        // A panic elsewhere while holding the lock leaves the map itself intact.
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    stores
        .entry(name.to_owned())
        .or_insert_with(|| Arc::new(InMemory::new()))
        .clone()
}

/// Installs ring's TLS provider as the process default, once: reqwest is built without a
/// default crypto provider here (to avoid aws-lc-sys), so any HTTPS client of the process
/// (an object store, a webhook) needs it before it is built.
#[cfg(feature = "http-client")]
pub fn install_tls_provider() {
    // Fails only when the application installed its own provider first, which then wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations() {
        let cases = [
            (
                "s3://b",
                Location::S3 {
                    bucket: "b".into(),
                    prefix: "".into(),
                },
            ),
            (
                "s3://b/",
                Location::S3 {
                    bucket: "b".into(),
                    prefix: "".into(),
                },
            ),
            (
                "s3://b//x///y/",
                Location::S3 {
                    bucket: "b".into(),
                    prefix: "x/y".into(),
                },
            ),
            (
                "gs://g/p",
                Location::Gcs {
                    bucket: "g".into(),
                    prefix: "p".into(),
                },
            ),
            (
                "az://c/p/q",
                Location::Azure {
                    container: "c".into(),
                    prefix: "p/q".into(),
                },
            ),
            (
                "memory://",
                Location::Memory {
                    name: "".into(),
                    prefix: "".into(),
                },
            ),
            (
                "memory://m/t",
                Location::Memory {
                    name: "m".into(),
                    prefix: "t".into(),
                },
            ),
            ("/tmp/x", Location::Local("/tmp/x".into())),
            ("rel/x", Location::Local("rel/x".into())),
            ("file:///tmp/x", Location::Local("/tmp/x".into())),
            // Text before `://` that is no URL scheme: a local path, as in smdebug.
            ("/data/a://b", Location::Local("/data/a://b".into())),
            ("a b://c", Location::Local("a b://c".into())),
            ("1x://y", Location::Local("1x://y".into())),
            ("://y", Location::Local("://y".into())),
            ("~user/x", Location::Local("~user/x".into())),
            (
                "s3://bucket.with.dots/p r e",
                Location::S3 {
                    bucket: "bucket.with.dots".into(),
                    prefix: "p r e".into(),
                },
            ),
        ];
        for (s, want) in cases {
            assert_eq!(Location::parse(s).unwrap(), want, "{s}");
        }
        for s in [
            "",
            "s3://",
            "s3:///x",
            "gs://",
            "http://x/y",
            "s3://b/../x",
            "file://",
            "ftp://x",
            "S3://b/p",
            "a\0",
            "s3://b/\0",
        ] {
            assert!(
                matches!(
                    Location::parse(s),
                    Err(StorageError::InvalidLocation { .. })
                ),
                "{s}"
            );
        }
    }

    #[test]
    fn expands_home_like_python_expanduser() {
        let home = std::env::var("HOME").expect("tests run with $HOME set");
        let home = home.trim_end_matches('/');
        let root = if home.is_empty() { "/" } else { home };
        for (s, want) in [
            ("~", root.to_owned()),
            ("~/t", format!("{home}/t")),
            ("~//t/", format!("{home}//t/")),
        ] {
            assert_eq!(
                Location::parse(s).unwrap(),
                Location::Local(want.into()),
                "{s}"
            );
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "s3://b/p/q",
            "gs://b",
            "az://c/p",
            "memory://m/x",
            "/abs/path",
        ] {
            let l = Location::parse(s).unwrap();
            assert_eq!(l.to_string(), s);
            assert_eq!(Location::parse(&l.to_string()).unwrap(), l);
        }
    }

    /// A path component that is not `.` or `..` (those are refused in prefixes).
    fn component() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        "[a-zA-Z0-9_ .:-]{1,8}".prop_filter("not . or ..", |c| c != "." && c != "..")
    }

    proptest::proptest! {
        #[test]
        fn object_store_prefixes_normalise_and_round_trip(
            scheme in proptest::sample::select(vec!["s3", "s3a", "gs", "az", "azure", "memory"]),
            bucket in "[a-z0-9][a-z0-9.-]{0,20}",
            parts in proptest::collection::vec((component(), 1usize..4), 0..5),
            leading in 0usize..3,
            trailing in 0usize..3,
        ) {
            let mut text = format!("{scheme}://{bucket}/{}", "/".repeat(leading));
            for (part, slashes) in &parts {
                text.push_str(part);
                text.push_str(&"/".repeat(*slashes));
            }
            text.push_str(&"/".repeat(trailing));
            let prefix = parts.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join("/");
            let (name, prefix) = (bucket.clone(), prefix);
            let want = match scheme {
                "s3" | "s3a" => Location::S3 { bucket: name, prefix },
                "gs" => Location::Gcs { bucket: name, prefix },
                "az" | "azure" => Location::Azure { container: name, prefix },
                _ => Location::Memory { name, prefix },
            };
            let parsed = Location::parse(&text).unwrap();
            proptest::prop_assert_eq!(&parsed, &want, "{}", text);
            proptest::prop_assert_eq!(Location::parse(&parsed.to_string()).unwrap(), parsed);
        }

        #[test]
        fn strings_without_a_scheme_are_local_paths_as_given(s in "[^\\x00~][^\\x00]{0,40}") {
            proptest::prop_assume!(!s.contains("://"));
            proptest::prop_assert_eq!(Location::parse(&s).unwrap(), Location::Local(PathBuf::from(&s)));
        }

        #[test]
        fn any_string_parses_or_is_a_typed_error(s in "\\PC{0,40}|[a-z0-9]{1,5}://\\PC{0,30}") {
            match Location::parse(&s) {
                Ok(Location::Local(_)) => {}
                Ok(other) => proptest::prop_assert_eq!(Location::parse(&other.to_string()).unwrap(), other),
                Err(e) => proptest::prop_assert!(matches!(e, StorageError::InvalidLocation { .. }), "{}", e),
            }
        }
    }

    #[cfg(not(feature = "gcp"))]
    #[test]
    fn missing_feature_is_a_typed_error() {
        let err = Location::parse("gs://b/p").unwrap().open().unwrap_err();
        assert!(
            matches!(err, StorageError::UnsupportedScheme { feature: "gcp", .. }),
            "{err}"
        );
    }
}
