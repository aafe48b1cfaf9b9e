//! What `smdebug seal` and `smdebug doctor` both read: a trial's files by kind, and every
//! record an index file points at, checked against its events file (framing, CRCs, the
//! index's `payload_crc32c`).
use anyhow::{Context, Result};
use smdebug_index::{classify_key, IndexFile, IndexFileError, TrialFile};
use smdebug_record::{decode_record_at, masked_crc32c};
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::collections::BTreeMap;

/// The trial's files, listed once.
pub struct TrialFiles {
    /// The trial's storage.
    pub store: BlockingStore,
    /// Index files: key → parsed (or the parse error).
    pub index: BTreeMap<String, std::result::Result<IndexFile, IndexFileError>>,
    /// Events files: key → size.
    pub events: BTreeMap<String, u64>,
    /// Collections files: key → worker.
    pub collections: BTreeMap<String, String>,
    /// Whether `training_job_end.ts` exists.
    pub ended: bool,
    /// Keys a reader refuses (names that do not parse), with the reason.
    pub bad_names: Vec<(String, String)>,
}

impl TrialFiles {
    /// Lists and parses the trial at `path` (index files are read, events files are not).
    pub fn open(path: &str) -> Result<TrialFiles> {
        let location = Location::parse(path).with_context(|| format!("bad trial path {path}"))?;
        let store =
            BlockingStore::open(&location).with_context(|| format!("cannot open trial {path}"))?;
        let listed = store
            .list("", None)
            .with_context(|| format!("cannot list trial {path}"))?;
        let mut files = TrialFiles {
            store,
            index: BTreeMap::new(),
            events: BTreeMap::new(),
            collections: BTreeMap::new(),
            ended: false,
            bad_names: Vec::new(),
        };
        for meta in listed {
            match classify_key(&meta.key) {
                Ok(TrialFile::Index(_)) if meta.key.ends_with(".json") => {
                    let bytes = files
                        .store
                        .get(&meta.key)
                        .with_context(|| format!("cannot read {}", meta.key))?;
                    files
                        .index
                        .insert(meta.key.clone(), IndexFile::parse(&meta.key, &bytes));
                }
                Ok(TrialFile::Events(_)) => {
                    files.events.insert(meta.key, meta.size);
                }
                Ok(TrialFile::Collections { worker }) => {
                    files.collections.insert(meta.key, worker);
                }
                Ok(TrialFile::EndOfJob) => files.ended = true,
                Ok(_) => {}
                Err(e) => files.bad_names.push((meta.key, e.to_string())),
            }
        }
        Ok(files)
    }

    /// Reads an events file whole (`None` when it is missing).
    pub fn events_bytes(&self, key: &str) -> Option<Bytes> {
        self.store.get(key).ok()
    }
}

/// A record an index entry points at that cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// The index file that lists it.
    pub index_file: String,
    /// The events file it is in.
    pub events_file: String,
    /// Its offset there.
    pub offset: u64,
    /// The tensor's name.
    pub tensor: String,
    /// What is wrong.
    pub problem: RecordProblem,
}

/// What is wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordProblem {
    /// The events file is missing.
    MissingEventsFile,
    /// The record does not parse at the place the index names (truncated, bad length CRC,
    /// bad footer, out of the file's bounds).
    Corrupt(String),
    /// The payload's CRC differs from the index's `payload_crc32c`.
    CrcMismatch {
        /// The index's value.
        expected: u32,
        /// The payload's.
        computed: u32,
    },
}

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.problem {
            RecordProblem::MissingEventsFile => write!(
                f,
                "{}: tensor {:?}: events file {} is missing",
                self.index_file, self.tensor, self.events_file
            ),
            RecordProblem::Corrupt(e) => write!(
                f,
                "{} at byte {}: tensor {:?} (listed in {}): {e}",
                self.events_file, self.offset, self.tensor, self.index_file
            ),
            RecordProblem::CrcMismatch { expected, computed } => write!(
                f,
                "{} at byte {}: tensor {:?} (listed in {}): payload CRC {computed:#010x}, index says {expected:#010x}",
                self.events_file, self.offset, self.tensor, self.index_file
            ),
        }
    }
}

/// Checks every record `index` lists against `events` (the whole events file); returns the
/// payload CRC of each entry (`None` where the record is bad) and the problems.
pub fn check_index(
    index_key: &str,
    index: &IndexFile,
    events: Option<&[u8]>,
) -> (Vec<Option<u32>>, Vec<BadRecord>) {
    let events_file = index.meta.event_file_name.clone().unwrap_or_default();
    let mut crcs = Vec::with_capacity(index.tensors.len());
    let mut bad = Vec::new();
    for t in &index.tensors {
        let problem = |p: RecordProblem| BadRecord {
            index_file: index_key.to_owned(),
            events_file: events_file.clone(),
            offset: t.start_idx,
            tensor: t.name.clone(),
            problem: p,
        };
        let Some(file) = events else {
            bad.push(problem(RecordProblem::MissingEventsFile));
            crcs.push(None);
            continue;
        };
        match decode_record_at(file, t.start_idx, t.length) {
            Err(e) => {
                bad.push(problem(RecordProblem::Corrupt(e.to_string())));
                crcs.push(None);
            }
            Ok(rec) => {
                let computed = masked_crc32c(rec.payload);
                match t.payload_crc32c {
                    Some(expected) if expected != computed => {
                        bad.push(problem(RecordProblem::CrcMismatch { expected, computed }));
                        crcs.push(None);
                    }
                    _ => crcs.push(Some(computed)),
                }
            }
        }
    }
    (crcs, bad)
}
