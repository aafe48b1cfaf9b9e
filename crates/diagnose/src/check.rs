//! One index file's records checked against its events file: the framing (length CRC,
//! footer, bounds) and the index's `payload_crc32c` (docs/src/format.md §5, §10.6). Pure:
//! bytes in, problems out.

use serde::Serialize;
use smdebug_index::{classify_key, IndexFile, TrialFile};
use smdebug_record::{decode_record_at, masked_crc32c};
use std::fmt;

/// A record an index entry points at that cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadRecord {
    /// The index file that lists it.
    pub index_file: String,
    /// The events file it is in.
    pub events_file: String,
    /// Its offset there.
    pub offset: u64,
    /// The tensor's name (the index entry's name).
    pub tensor: String,
    /// The global step, from the index file's name (`None` if the name does not parse).
    pub step: Option<i64>,
    /// The worker, from the index file's name.
    pub worker: Option<String>,
    /// What is wrong.
    pub problem: RecordProblem,
}

/// What is wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RecordProblem {
    /// The events file is missing.
    MissingEventsFile,
    /// The record does not parse at the place the index names (truncated, bad length CRC,
    /// bad footer, out of the file's bounds).
    Corrupt {
        /// The record reader's error.
        error: String,
    },
    /// The payload's CRC differs from the index's `payload_crc32c`.
    CrcMismatch {
        /// The index's value.
        expected: u32,
        /// The payload's.
        computed: u32,
    },
}

impl fmt::Display for BadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            RecordProblem::MissingEventsFile => write!(
                f,
                "{}: tensor {:?}: events file {} is missing",
                self.index_file, self.tensor, self.events_file
            ),
            RecordProblem::Corrupt { error } => write!(
                f,
                "{} at byte {}: tensor {:?} (listed in {}): {error}",
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

/// Checks every record `index` lists against `events` (the whole events file, `None` when
/// it is missing); returns the payload CRC of each entry (`None` where the record is bad)
/// and the problems. `index_key` is the index file's key, named in each problem.
///
/// ```
/// use smdebug_diagnose::{check_index, RecordProblem};
/// use smdebug_index::IndexFile;
///
/// let key = "index/000000000/000000000000_worker_0.json";
/// let text = br#"{"meta": {"mode": "GLOBAL", "mode_step": 0, "event_file_name": "events/000000000000/000000000000_worker_0.tfevents"}, "tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 20}], "shape_payload": []}"#;
/// let index = IndexFile::parse(key, text)?;
/// // An events file too short for the record the index names.
/// let (crcs, bad) = check_index(key, &index, Some(&[0u8; 4]));
/// assert_eq!(crcs, [None]);
/// assert!(matches!(bad[0].problem, RecordProblem::Corrupt { .. }));
/// assert_eq!((bad[0].offset, bad[0].step), (0, Some(0)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_index(
    index_key: &str,
    index: &IndexFile,
    events: Option<&[u8]>,
) -> (Vec<Option<u32>>, Vec<BadRecord>) {
    let events_file = index.meta.event_file_name.clone().unwrap_or_default();
    let (step, worker) = match classify_key(index_key) {
        Ok(TrialFile::Index(f)) => (Some(f.step), Some(f.worker().into_owned())),
        _ => (None, None),
    };
    let mut crcs = Vec::with_capacity(index.tensors.len());
    let mut bad = Vec::new();
    for t in &index.tensors {
        let problem = |p: RecordProblem| BadRecord {
            index_file: index_key.to_owned(),
            events_file: events_file.clone(),
            offset: t.start_idx,
            tensor: t.name.clone(),
            step,
            worker: worker.clone(),
            problem: p,
        };
        let Some(file) = events else {
            bad.push(problem(RecordProblem::MissingEventsFile));
            crcs.push(None);
            continue;
        };
        match decode_record_at(file, t.start_idx, t.length) {
            Err(e) => {
                bad.push(problem(RecordProblem::Corrupt {
                    error: e.to_string(),
                }));
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
