//! The typed errors of this crate.

use std::fmt;
use std::ops::Range;

/// The storage operation that failed, named in every [`StorageError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Opening a [`Location`](crate::Location) (parsing, building a client).
    Open,
    /// [`Storage::list`](crate::Storage::list).
    List,
    /// [`Storage::get`](crate::Storage::get).
    Get,
    /// [`Storage::get_range`](crate::Storage::get_range) and
    /// [`Storage::get_ranges`](crate::Storage::get_ranges).
    GetRange,
    /// [`Storage::put`](crate::Storage::put).
    Put,
    /// [`Storage::exists`](crate::Storage::exists).
    Exists,
    /// [`Storage::delete`](crate::Storage::delete).
    Delete,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Open => "open",
            Operation::List => "list",
            Operation::Get => "get",
            Operation::GetRange => "ranged get",
            Operation::Put => "put",
            Operation::Exists => "exists",
            Operation::Delete => "delete",
        })
    }
}

/// Everything that can go wrong when touching stored bytes.
///
/// Every variant names the store (`location`, as given to [`Location::parse`](crate::Location::parse))
/// and, where there is one, the key, so a message alone says what failed where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// A key (or list prefix) that is not a safe relative `/`-separated key.
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected key, verbatim.
        key: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A location string that cannot be parsed.
    #[error("invalid location {location:?}: {reason}")]
    InvalidLocation {
        /// The rejected location, verbatim.
        location: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A location whose backend was not compiled in.
    #[error("cannot open {location}: this build has no {scheme} support (enable the cargo feature `{feature}` of smdebug-storage)")]
    UnsupportedScheme {
        /// The location.
        location: String,
        /// The URL scheme (`s3`, `gs`, `az`).
        scheme: &'static str,
        /// The cargo feature that enables it.
        feature: &'static str,
    },
    /// The object does not exist.
    #[error("{op} {location} key {key:?}: no such object")]
    NotFound {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The missing key.
        key: String,
    },
    /// A byte range whose start lies after its end.
    #[error("{op} {location} key {key:?}: invalid range {}..{} (start after end)", range.start, range.end)]
    InvalidRange {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The key.
        key: String,
        /// The requested range.
        range: Range<u64>,
    },
    /// A byte range that reaches beyond the end of the object.
    #[error("{op} {location} key {key:?}: range {}..{} is beyond the end of the object ({size} bytes)", range.start, range.end)]
    RangeOutOfBounds {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The key.
        key: String,
        /// The requested range.
        range: Range<u64>,
        /// The object's actual size.
        size: u64,
    },
    /// An object opened for reads ([`SyncStorage::open_sync`](crate::SyncStorage::open_sync))
    /// was removed, or replaced by another object under its key, since it was opened: its
    /// old bytes are not served. Open the key again for the object it names now.
    #[error("{op} {location} key {key:?}: the object was removed or replaced since it was opened")]
    Replaced {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The key.
        key: String,
    },
    /// A local filesystem error (after the bounded retries of transient ones).
    #[error("{op} {location} key {key:?}: {source}")]
    Io {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The key (or list prefix).
        key: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An object store error (after object_store's bounded retries of transient ones).
    #[error("{op} {location} key {key:?}: {source}")]
    ObjectStore {
        /// The operation.
        op: Operation,
        /// The store.
        location: String,
        /// The key (or list prefix).
        key: String,
        /// The cause (boxed: it is large, and errors travel through every call).
        #[source]
        source: Box<object_store::Error>,
    },
    /// The blocking facade could not start its runtime, or a task it ran panicked, or an
    /// object store opened before a `fork` was used in the child.
    #[error("blocking storage facade: {reason}")]
    Runtime {
        /// What happened.
        reason: String,
    },
}

impl StorageError {
    /// True for [`StorageError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::NotFound { .. })
    }

    /// True for [`StorageError::Replaced`]: an opened object is gone or another one holds
    /// its key; opening the key again reads what it names now.
    pub fn is_replaced(&self) -> bool {
        matches!(self, StorageError::Replaced { .. })
    }

    /// True for a range the object cannot serve ([`StorageError::InvalidRange`],
    /// [`StorageError::RangeOutOfBounds`]): the request was answered, the object is shorter
    /// than asked. Any other failure of a read (a server that does not answer, a dropped
    /// connection) has already been retried and would fail again the same way.
    pub fn is_range_error(&self) -> bool {
        matches!(
            self,
            StorageError::InvalidRange { .. } | StorageError::RangeOutOfBounds { .. }
        )
    }

    /// The same error for another caller that shared the failed request (several values read
    /// in one request): the same variant and fields; a source error, which cannot be cloned,
    /// is carried by its message.
    pub fn duplicate(&self) -> StorageError {
        use StorageError::*;
        match self {
            InvalidKey { key, reason } => InvalidKey {
                key: key.clone(),
                reason,
            },
            InvalidLocation { location, reason } => InvalidLocation {
                location: location.clone(),
                reason: reason.clone(),
            },
            UnsupportedScheme {
                location,
                scheme,
                feature,
            } => UnsupportedScheme {
                location: location.clone(),
                scheme,
                feature,
            },
            NotFound { op, location, key } => NotFound {
                op: *op,
                location: location.clone(),
                key: key.clone(),
            },
            Replaced { op, location, key } => Replaced {
                op: *op,
                location: location.clone(),
                key: key.clone(),
            },
            InvalidRange {
                op,
                location,
                key,
                range,
            } => InvalidRange {
                op: *op,
                location: location.clone(),
                key: key.clone(),
                range: range.clone(),
            },
            RangeOutOfBounds {
                op,
                location,
                key,
                range,
                size,
            } => RangeOutOfBounds {
                op: *op,
                location: location.clone(),
                key: key.clone(),
                range: range.clone(),
                size: *size,
            },
            Io {
                op,
                location,
                key,
                source,
            } => Io {
                op: *op,
                location: location.clone(),
                key: key.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            ObjectStore {
                op,
                location,
                key,
                source,
            } => ObjectStore {
                op: *op,
                location: location.clone(),
                key: key.clone(),
                source: Box::new(object_store::Error::Generic {
                    store: "smdebug-storage",
                    source: source.to_string().into(),
                }),
            },
            Runtime { reason } => Runtime {
                reason: reason.clone(),
            },
        }
    }
}

/// `Result` with [`StorageError`].
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
