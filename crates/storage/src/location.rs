//! Where a trial lives, parsed from the strings users type.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use object_store::memory::InMemory;

use crate::error::{Result, StorageError};
use crate::local::{LocalStorage, LocalSync};
use crate::object::{ObjectStorage, ObjectStoreOptions};
use crate::retry::LocalRetry;
use crate::Storage;

/// A place that holds objects: a local folder or a bucket/container prefix.
///
/// Parsed by [`Location::parse`]:
///
/// | string | location |
/// |---|---|
/// | `/data/trial`, `trial`, `~/trial`, `file:///data/trial` | [`Location::Local`] (`~` is expanded with `$HOME`, as smdebug does for `out_dir`) |
/// | `s3://bucket/prefix` | [`Location::S3`] |
/// | `gs://bucket/prefix` | [`Location::Gcs`] |
/// | `az://container/prefix` | [`Location::Azure`] |
/// | `memory://name/prefix` | [`Location::Memory`]: a process-wide in-memory store per name, for tests |
///
/// For object stores the prefix is normalised like smdebug does on S3: runs of `/` collapse
/// and leading/trailing `/` go (`s3://b`, `s3://b/` and `s3://b//` all mean the whole bucket).
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
        let Some((scheme, rest)) = s.split_once("://") else {
            if s.is_empty() {
                return Err(bad("empty location"));
            }
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
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(options.retry_config())
            .with_client_options(options.client_options(allow_http));
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
        object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(bucket)
            .with_retry(options.retry_config())
            .with_client_options(options.client_options(false))
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

fn expand_home(s: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    if s == "~" {
        if let Some(h) = home() {
            return h;
        }
    } else if let Some(rest) = s.strip_prefix("~/") {
        if let Some(h) = home() {
            return h.join(rest);
        }
    }
    PathBuf::from(s)
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

/// reqwest is built without a default crypto provider (to avoid aws-lc-sys); use ring's.
#[cfg(feature = "http-client")]
fn install_tls_provider() {
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
    fn expands_home() {
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(
                Location::parse("~/t").unwrap(),
                Location::Local(PathBuf::from(home).join("t"))
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
