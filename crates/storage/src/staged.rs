//! A put in two halves: the bytes written first, published later ([`StagedPut`]).

use bytes::Bytes;

use crate::error::Result;
use crate::local_write::StagedFile;

/// An object written but not yet visible under its key ([`BlockingStore::stage`]); its
/// [`BlockingStore::publish`] makes it visible, atomically, as a put would.
///
/// It lets a writer that must publish objects in a fixed order (an events file before the
/// index file that points into it, steps in order) write several of them at once and
/// publish them one by one afterwards. On local disk the data is in a temporary file
/// (a name ending in `.tmp`, hidden from listings), synced when the store
/// fsyncs its puts ([`LocalSync`](crate::LocalSync)); publishing renames it (and syncs the
/// folder). Dropped unpublished, the temporary file is removed. Other stores have no hidden
/// half-written state: staging keeps the bytes and publishing is the whole put.
///
/// [`BlockingStore::stage`]: crate::BlockingStore::stage
/// [`BlockingStore::publish`]: crate::BlockingStore::publish
#[derive(Debug)]
pub struct StagedPut {
    key: String,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Written under a temporary name (local disk).
    Written(StagedFile),
    /// Nothing written yet: the publish puts these bytes.
    Pending(Bytes),
}

impl StagedPut {
    /// A put staged by a local store.
    pub(crate) fn written(key: &str, file: StagedFile) -> Self {
        StagedPut {
            key: key.to_owned(),
            state: State::Written(file),
        }
    }

    /// A put of `data` under `key` that writes nothing before its publish.
    pub fn pending(key: &str, data: Bytes) -> Self {
        StagedPut {
            key: key.to_owned(),
            state: State::Pending(data),
        }
    }

    /// The key it is published under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether its bytes are already written (publishing then costs a rename, not a put).
    pub fn is_written(&self) -> bool {
        matches!(self.state, State::Written(_))
    }

    /// Publishes it: a rename when written, else `put(key, bytes)`.
    pub(crate) fn publish_with(self, put: impl FnOnce(&str, Bytes) -> Result<()>) -> Result<()> {
        match self.state {
            State::Written(file) => file.publish(&self.key),
            State::Pending(data) => put(&self.key, data),
        }
    }
}
