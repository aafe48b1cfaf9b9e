//! Every record of a trial checked against its events file ([`check_index`] per index
//! file), and the events files no index file names.

use crate::check::{check_index, BadRecord};
use crate::error::DiagnoseError;
use crate::files::TrialFiles;
use serde::Serialize;
use std::collections::BTreeSet;

/// An index file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorruptIndex {
    /// Its key.
    pub file: String,
    /// The parse error.
    pub error: String,
}

/// What [`verify`] found: every index file parsed and every record it lists checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct VerifyReport {
    /// The trial location, as given.
    pub trial: String,
    /// Index entries (records) listed by the index files that parse.
    pub entries: usize,
    /// Those that carry a payload CRC (`smdebug seal` adds it; the original writes none).
    pub with_crc: usize,
    /// Index files that do not parse, in key order.
    pub corrupt_index: Vec<CorruptIndex>,
    /// Records that cannot be trusted, in index-file order.
    pub bad_records: Vec<BadRecord>,
    /// Events files no index file names, in key order.
    pub orphan_events: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing was found wrong.
    pub fn is_sound(&self) -> bool {
        self.corrupt_index.is_empty() && self.bad_records.is_empty()
    }
}

/// Checks every record of the trial at `location` (a local folder, `s3://bucket/prefix`,
/// …) against its events file; an index file without an events file name lists no record
/// to check.
pub fn verify(location: &str) -> Result<VerifyReport, DiagnoseError> {
    Ok(verify_files(location, &TrialFiles::open(location)?))
}

pub(crate) fn verify_files(location: &str, files: &TrialFiles) -> VerifyReport {
    let mut report = VerifyReport {
        trial: location.to_owned(),
        entries: 0,
        with_crc: 0,
        corrupt_index: Vec::new(),
        bad_records: Vec::new(),
        orphan_events: Vec::new(),
    };
    let mut referenced: BTreeSet<&str> = BTreeSet::new();
    for (key, parsed) in &files.index {
        let index = match parsed {
            Ok(i) => i,
            Err(e) => {
                report.corrupt_index.push(CorruptIndex {
                    file: key.clone(),
                    error: e.to_string(),
                });
                continue;
            }
        };
        report.entries += index.tensors.len();
        report.with_crc += index
            .tensors
            .iter()
            .filter(|t| t.payload_crc32c.is_some())
            .count();
        let Some(ev) = index.meta.event_file_name.as_deref() else {
            continue;
        };
        referenced.insert(ev);
        if index.tensors.is_empty() {
            continue;
        }
        let bytes = files.events_bytes(ev);
        let (_, bad) = check_index(key, index, bytes.as_deref());
        report.bad_records.extend(bad);
    }
    report.orphan_events = files
        .events
        .keys()
        .filter(|k| !referenced.contains(k.as_str()))
        .cloned()
        .collect();
    report
}
