//! The object store backend (S3, GCS, Azure, memory) on top of the `object_store` crate.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{SinkExt, StreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{Operation, Result, StorageError};
use crate::key::{invalid, prefix_dir, validate_key, validate_prefix};
use crate::ranges::{get_ranges_with, ReadOptions};
use crate::{ListOptions, ObjectMeta, Storage};

/// Retry, timeout and read settings of the object store clients.
///
/// Every request is retried with exponential backoff at most `max_retries` times and for at
/// most `retry_timeout` in total (5xx answers, dropped connections, and timeouts of
/// read-only requests; a PUT that timed out is *not* retried blindly: its error is
/// returned, and the object may or may not have been written — never partially).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectStoreOptions {
    /// Attempts after the first one.
    pub max_retries: usize,
    /// No retry starts later than this after the first attempt.
    pub retry_timeout: Duration,
    /// Pause before the first retry (then doubled, with jitter).
    pub initial_backoff: Duration,
    /// Longest pause between attempts.
    pub max_backoff: Duration,
    /// Longest time one request may take, body included.
    pub request_timeout: Duration,
    /// Longest time to establish a connection.
    pub connect_timeout: Duration,
    /// How [`Storage::get_ranges`] merges and parallelises reads.
    pub read: ReadOptions,
    /// S3 only: the endpoint URL, overriding `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`
    /// (requests are then path-style, and an `http://` endpoint allows plain HTTP).
    pub endpoint: Option<String>,
}

impl Default for ObjectStoreOptions {
    fn default() -> Self {
        ObjectStoreOptions {
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(5),
            read: ReadOptions::default(),
            endpoint: None,
        }
    }
}

impl ObjectStoreOptions {
    /// object_store's retry configuration for these options.
    #[cfg(feature = "http-client")]
    pub(crate) fn retry_config(&self) -> object_store::RetryConfig {
        object_store::RetryConfig {
            backoff: object_store::BackoffConfig {
                init_backoff: self.initial_backoff,
                max_backoff: self.max_backoff,
                base: 2.0,
            },
            max_retries: self.max_retries,
            retry_timeout: self.retry_timeout,
        }
    }

    /// object_store's HTTP client options for these options.
    #[cfg(feature = "http-client")]
    pub(crate) fn client_options(&self, allow_http: bool) -> object_store::ClientOptions {
        object_store::ClientOptions::new()
            .with_timeout(self.request_timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_allow_http(allow_http)
    }
}

/// Objects in an [`ObjectStore`] under a key prefix (`s3://bucket/prefix` → store of the
/// bucket, prefix `prefix`). Usually made by [`Location::open`](crate::Location::open).
#[derive(Debug, Clone)]
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    location: String,
    read: ReadOptions,
}

impl ObjectStorage {
    /// Keys of this storage live under `prefix` (`""` for the whole store; otherwise a
    /// valid key without a trailing `/`) in `store`; `location` names it in errors.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        location: impl Into<String>,
        read: ReadOptions,
    ) -> Result<Self> {
        if !prefix.is_empty() {
            validate_key(prefix)?;
        }
        Ok(ObjectStorage {
            store,
            prefix: prefix.to_owned(),
            location: location.into(),
            read,
        })
    }

    /// The underlying object store.
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The key prefix inside the object store.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn full(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    fn path(&self, key: &str) -> Result<Path> {
        validate_key(key)?;
        Path::parse(self.full(key)).map_err(|_| invalid(key, "not a valid object store path"))
    }

    fn error(&self, op: Operation, key: &str, source: object_store::Error) -> StorageError {
        match source {
            // For a put or a list, "not found" means the bucket, not the object: keep the cause.
            object_store::Error::NotFound { .. }
                if matches!(op, Operation::Get | Operation::GetRange) =>
            {
                StorageError::NotFound {
                    op,
                    location: self.location.clone(),
                    key: key.to_owned(),
                }
            }
            source => StorageError::ObjectStore {
                op,
                location: self.location.clone(),
                key: key.to_owned(),
                source: Box::new(source),
            },
        }
    }

    /// `prefix/` inside the object store: what is cut from listed paths to give keys.
    fn strip(&self) -> String {
        if self.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.prefix)
        }
    }

    /// The objects under `prefix` after `start_after` and before `end`, one item per
    /// listing page (object_store asks for the next page only when the stream is polled
    /// again). Pages come in ascending key order (S3, GCS and Azure list in UTF-8 byte
    /// order, the in-memory store in key order), so the stream ends at the first key that
    /// reaches `end` without asking for more.
    fn pages(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        end: Option<&str>,
    ) -> Result<BoxStream<'static, Result<Vec<ObjectMeta>>>> {
        validate_prefix(prefix)?;
        // object_store lists by folder; the string prefix is applied below.
        let dir = self.full(prefix_dir(prefix).trim_end_matches('/'));
        let dir = dir.trim_end_matches('/');
        let dir_path = if dir.is_empty() {
            None
        } else {
            Some(Path::parse(dir).map_err(|_| invalid(prefix, "not a valid object store path"))?)
        };
        let offset = start_after
            .filter(|s| validate_key(s).is_ok())
            .and_then(|s| Path::parse(self.full(s)).ok());
        let stream = match &offset {
            Some(offset) => self.store.list_with_offset(dir_path.as_ref(), offset),
            None => self.store.list(dir_path.as_ref()),
        };
        let strip = self.strip();
        let (prefix, start_after, end) = (
            prefix.to_owned(),
            start_after.map(str::to_owned),
            end.map(str::to_owned),
        );
        let me = self.clone();
        // object_store yields objects one by one but fetches them a page at a time; group
        // what is ready into pages so that a consumer can start work on a page at once.
        let pages = stream.ready_chunks(1000).scan(false, move |done, chunk| {
            if *done {
                return futures::future::ready(None);
            }
            let mut page = Vec::with_capacity(chunk.len());
            for m in chunk {
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        *done = true;
                        return futures::future::ready(Some(Err(me.error(
                            Operation::List,
                            &prefix,
                            e,
                        ))));
                    }
                };
                let Some(key) = m.location.as_ref().strip_prefix(strip.as_str()) else {
                    continue;
                };
                if end.as_deref().is_some_and(|e| key >= e) {
                    *done = true;
                    break;
                }
                if key.starts_with(prefix.as_str())
                    && start_after.as_deref().is_none_or(|s| key > s)
                {
                    page.push(ObjectMeta {
                        key: key.to_owned(),
                        size: m.size,
                    });
                }
            }
            futures::future::ready(Some(Ok(page)))
        });
        Ok(Box::pin(pages))
    }

    async fn size(&self, key: &str, path: &Path) -> Result<u64> {
        self.store
            .head(path)
            .await
            .map(|m| m.size)
            .map_err(|e| self.error(Operation::GetRange, key, e))
    }
}

#[async_trait]
impl Storage for ObjectStorage {
    fn location(&self) -> String {
        self.location.clone()
    }

    /// Sizes come with every page of an object-store listing, so `names_only` changes
    /// nothing here.
    async fn list_opts(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>> {
        let mut pages = self.pages(prefix, options.start_after, options.end)?;
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            out.extend(page?);
        }
        out.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        out.dedup_by(|a, b| a.key == b.key);
        Ok(out)
    }

    async fn list_folders(&self, dir: &str) -> Result<Vec<String>> {
        crate::validate_folder(dir)?;
        let full = self.full(dir.trim_end_matches('/'));
        let full = full.trim_end_matches('/');
        let dir_path = if full.is_empty() {
            None
        } else {
            Some(Path::parse(full).map_err(|_| invalid(dir, "not a valid object store path"))?)
        };
        let listed = self
            .store
            .list_with_delimiter(dir_path.as_ref())
            .await
            .map_err(|e| self.error(Operation::List, dir, e))?;
        let strip = self.strip();
        let mut out: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| {
                let key = p.as_ref().strip_prefix(strip.as_str())?;
                key.starts_with(dir).then(|| format!("{key}/"))
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn list_pages(
        self: Arc<Self>,
        prefix: String,
        start_after: Option<String>,
        end: Option<String>,
    ) -> BoxStream<'static, Result<Vec<ObjectMeta>>> {
        // A task drives the listing into a channel of two pages, so the next page is on its
        // way while the caller works on this one. It starts on the first poll (inside the
        // caller's runtime) and stops when the receiver is dropped.
        let (tx, rx) = futures::channel::mpsc::channel::<Result<Vec<ObjectMeta>>>(1);
        let start = futures::stream::once(async move {
            tokio::spawn(async move {
                let mut tx = tx;
                match self.pages(&prefix, start_after.as_deref(), end.as_deref()) {
                    Ok(mut pages) => {
                        while let Some(page) = pages.next().await {
                            let failed = page.is_err();
                            if tx.send(page).await.is_err() || failed {
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                    }
                }
            });
            futures::stream::empty()
        })
        .flatten();
        Box::pin(start.chain(rx))
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        let path = self.path(key)?;
        let result = self
            .store
            .get(&path)
            .await
            .map_err(|e| self.error(Operation::Get, key, e))?;
        result
            .bytes()
            .await
            .map_err(|e| self.error(Operation::Get, key, e))
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path(key)?;
        let out_of_bounds = |size| StorageError::RangeOutOfBounds {
            op: Operation::GetRange,
            location: self.location.clone(),
            key: key.to_owned(),
            range: range.clone(),
            size,
        };
        if range.start > range.end {
            return Err(StorageError::InvalidRange {
                op: Operation::GetRange,
                location: self.location.clone(),
                key: key.to_owned(),
                range,
            });
        }
        if range.is_empty() {
            // HTTP cannot ask for zero bytes; the object must still exist and be long enough.
            let size = self.size(key, &path).await?;
            return if range.end <= size {
                Ok(Bytes::new())
            } else {
                Err(out_of_bounds(size))
            };
        }
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        match self.store.get_opts(&path, options).await {
            Ok(result) => {
                let size = result.meta.size;
                if result.range != range {
                    // Servers answer a range past the end with the part that exists.
                    return Err(out_of_bounds(size));
                }
                let bytes = result
                    .bytes()
                    .await
                    .map_err(|e| self.error(Operation::GetRange, key, e))?;
                if bytes.len() as u64 != range.end - range.start {
                    return Err(out_of_bounds(size));
                }
                Ok(bytes)
            }
            Err(object_store::Error::NotFound { .. }) => Err(StorageError::NotFound {
                op: Operation::GetRange,
                location: self.location.clone(),
                key: key.to_owned(),
            }),
            Err(e) if unanswered(&e) => Err(self.error(Operation::GetRange, key, e)),
            Err(e) => {
                // A range starting past the end is refused (416); say so precisely.
                match self.size(key, &path).await {
                    Ok(size) if range.end > size => Err(out_of_bounds(size)),
                    _ => Err(self.error(Operation::GetRange, key, e)),
                }
            }
        }
    }

    async fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        get_ranges_with(self, key, ranges, &self.read).await
    }

    async fn put(&self, key: &str, data: Bytes) -> Result<()> {
        let path = self.path(key)?;
        // One PUT: the object appears whole or not at all.
        self.store
            .put(&path, PutPayload::from(data))
            .await
            .map(|_| ())
            .map_err(|e| self.error(Operation::Put, key, e))
    }

    async fn exists(&self, key: &str) -> Result<bool> {
        let path = self.path(key)?;
        match self.store.head(&path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.error(Operation::Exists, key, e)),
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(Operation::Delete, key, e)),
        }
    }
}

/// Whether the request got no answer at all (a timeout or a failed connection, after the
/// retries): then asking the object's size to explain a refused range would only wait as
/// long again.
fn unanswered(e: &object_store::Error) -> bool {
    #[cfg(feature = "http-client")]
    {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if let Some(r) = c.downcast_ref::<reqwest::Error>() {
                if r.is_timeout() || r.is_connect() {
                    return true;
                }
            }
            cause = c.source();
        }
    }
    let _ = e;
    false
}
