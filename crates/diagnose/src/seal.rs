//! `seal`: adds the payload CRC key (`payload_crc32c`, docs/src/format.md §10.6) to every
//! tensor entry of every index file of an existing trial, so that copies of it can be
//! verified from then on. smdebug's reader ignores the key.
//!
//! Every record is checked first (framing, length CRC, footer, and a CRC already in the
//! index); if any fails, nothing is written and the error names each bad record by events
//! file and offset. Otherwise each index file is replaced by one put — a temporary file and
//! a rename on local disk, a single request on object stores — so a reader sees either the
//! old or the new file, never a mix.

use crate::check::check_index;
use crate::error::DiagnoseError;
use crate::error::SealProblem;
use crate::files::TrialFiles;
use serde::Serialize;
use smdebug_storage::Bytes;

/// How to seal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SealOptions {
    /// Check and count, write nothing.
    pub dry_run: bool,
}

/// What sealing did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SealReport {
    /// The trial location, as given.
    pub trial: String,
    /// Whether this was a dry run (nothing written).
    pub dry_run: bool,
    /// Index files rewritten (0 in a dry run).
    pub files: usize,
    /// Index files that already carried every CRC.
    pub already: usize,
    /// Entries given a CRC (in a dry run: that would be given one).
    pub entries: usize,
}

/// Seals the trial at `location` (see the module docs); refuses with
/// [`DiagnoseError::NotSealed`], writing nothing, when a record or an index file fails.
pub fn seal(location: &str, options: &SealOptions) -> Result<SealReport, DiagnoseError> {
    let files = TrialFiles::open(location)?;
    let mut problems = Vec::new();
    let mut rewrites = Vec::new();
    let mut done = SealReport {
        trial: location.to_owned(),
        dry_run: options.dry_run,
        ..SealReport::default()
    };
    for (key, parsed) in &files.index {
        let index = match parsed {
            Ok(i) => i,
            Err(e) => {
                problems.push(SealProblem::CorruptIndex {
                    file: key.clone(),
                    error: e.to_string(),
                });
                continue;
            }
        };
        if index.tensors.is_empty() {
            continue;
        }
        let events = index
            .meta
            .event_file_name
            .as_deref()
            .and_then(|k| files.events_bytes(k));
        let (crcs, bad) = check_index(key, index, events.as_deref());
        if !bad.is_empty() {
            problems.extend(
                bad.into_iter()
                    .map(|record| SealProblem::BadRecord { record }),
            );
            continue;
        }
        let missing = index
            .tensors
            .iter()
            .filter(|t| t.payload_crc32c.is_none())
            .count();
        if missing == 0 {
            done.already += 1;
            continue;
        }
        let mut sealed = index.clone();
        for (t, crc) in sealed.tensors.iter_mut().zip(crcs) {
            t.payload_crc32c = crc;
        }
        done.entries += missing;
        rewrites.push((key.clone(), sealed.to_json()));
    }
    if !problems.is_empty() {
        return Err(DiagnoseError::NotSealed { problems });
    }
    if !options.dry_run {
        for (key, text) in rewrites {
            files
                .store
                .put(&key, Bytes::from(text))
                .map_err(DiagnoseError::Write)?;
            done.files += 1;
        }
    }
    Ok(done)
}
