//! A trial's files by kind, listed once: what `doctor`, `verify` and `seal` read. Index
//! files are read and parsed here; events files only when a check asks for one.

use crate::error::DiagnoseError;
use smdebug_index::{classify_key, IndexFile, IndexFileError, TrialFile};
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::collections::BTreeMap;

/// The trial's files, listed once.
pub(crate) struct TrialFiles {
    /// The trial's storage.
    pub(crate) store: BlockingStore,
    /// Index files: key → parsed (or the parse error).
    pub(crate) index: BTreeMap<String, Result<IndexFile, IndexFileError>>,
    /// Events files: key → size.
    pub(crate) events: BTreeMap<String, u64>,
    /// Collections files: key → worker.
    pub(crate) collections: BTreeMap<String, String>,
    /// Whether `training_job_end.ts` exists.
    pub(crate) ended: bool,
}

impl TrialFiles {
    /// Lists and parses the trial at `path` (index files are read, events files are not).
    pub(crate) fn open(path: &str) -> Result<TrialFiles, DiagnoseError> {
        let location = Location::parse(path).map_err(|source| DiagnoseError::Location {
            path: path.to_owned(),
            source,
        })?;
        let store = BlockingStore::open(&location).map_err(|source| DiagnoseError::Open {
            path: path.to_owned(),
            source,
        })?;
        let listed = store.list("", None).map_err(|source| DiagnoseError::List {
            path: path.to_owned(),
            source,
        })?;
        let mut files = TrialFiles {
            store,
            index: BTreeMap::new(),
            events: BTreeMap::new(),
            collections: BTreeMap::new(),
            ended: false,
        };
        for meta in listed {
            // Names a reader refuses are not the diagnosis's business: the reader skips them.
            match classify_key(&meta.key) {
                Ok(TrialFile::Index(_)) if meta.key.ends_with(".json") => {
                    let bytes =
                        files
                            .store
                            .get(&meta.key)
                            .map_err(|source| DiagnoseError::Read {
                                file: meta.key.clone(),
                                source,
                            })?;
                    let parsed = IndexFile::parse(&meta.key, &bytes);
                    files.index.insert(meta.key, parsed);
                }
                Ok(TrialFile::Events(_)) => {
                    files.events.insert(meta.key, meta.size);
                }
                Ok(TrialFile::Collections { worker }) => {
                    files.collections.insert(meta.key, worker);
                }
                Ok(TrialFile::EndOfJob) => files.ended = true,
                _ => {}
            }
        }
        Ok(files)
    }

    /// Reads an events file whole (`None` when it is missing or unreadable: every record
    /// it should hold is then reported as such).
    pub(crate) fn events_bytes(&self, key: &str) -> Option<Bytes> {
        self.store.get(key).ok()
    }
}
