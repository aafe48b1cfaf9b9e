//! The firing log: an append-only file of JSON lines, one per firing, each made durable
//! (`fsync`) before it counts as recorded.

use crate::error::{FleetError, Result};
use crate::record::{FiringKey, FiringRecord};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The firings recorded so far, in a file or (without one) in memory only.
///
/// A firing is *recorded* once its whole line is in the file and synced; a line cut short
/// by a crash (no final newline) was never recorded and is cut off when the log is opened.
/// [`FiringLog::record`] refuses a firing whose key is already there, so a firing found
/// again after a restart is never written twice.
#[derive(Debug)]
pub struct FiringLog {
    file: Option<(PathBuf, File)>,
    bytes: u64,
    seen: HashSet<FiringKey>,
    per_trial: HashMap<String, u64>,
}

impl FiringLog {
    /// A log kept in memory only (nothing survives the process).
    pub fn in_memory() -> Self {
        FiringLog {
            file: None,
            bytes: 0,
            seen: HashSet::new(),
            per_trial: HashMap::new(),
        }
    }

    /// Opens (or creates) the log at `path` and returns it with the firings it holds.
    /// A torn last line is cut off; any other line that is not a firing is an error.
    pub fn open(path: &Path) -> Result<(Self, Vec<FiringRecord>)> {
        let io = |source| FleetError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io)?;
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            file.set_len(whole as u64).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        let mut records = Vec::new();
        let mut seen = HashSet::new();
        let mut per_trial: HashMap<String, u64> = HashMap::new();
        for (n, line) in text[..whole].split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let record: FiringRecord =
                serde_json::from_slice(line).map_err(|e| FleetError::Corrupt {
                    path: path.to_owned(),
                    reason: format!("line {}: not a firing: {e}", n + 1),
                })?;
            if seen.insert(record.key()) {
                *per_trial.entry(record.trial.clone()).or_default() += 1;
            }
            records.push(record);
        }
        Ok((
            FiringLog {
                file: Some((path.to_owned(), file)),
                bytes: whole as u64,
                seen,
                per_trial,
            },
            records,
        ))
    }

    /// Whether this firing is recorded.
    pub fn contains(&self, key: &FiringKey) -> bool {
        self.seen.contains(key)
    }

    /// Records a firing (appended and synced); `Ok(false)` when it was recorded before.
    pub fn record(&mut self, firing: &FiringRecord) -> Result<bool> {
        let key = firing.key();
        if self.seen.contains(&key) {
            return Ok(false);
        }
        let mut line = firing.to_line();
        line.push('\n');
        if let Some((path, file)) = &mut self.file {
            // One write of the whole line (the file is opened for appending), then a sync:
            // a crash leaves the line whole, cut short, or absent, never interleaved.
            file.write_all(line.as_bytes())
                .and_then(|()| file.sync_data())
                .map_err(|source| FleetError::Io {
                    path: path.clone(),
                    source,
                })?;
        }
        self.bytes += line.len() as u64;
        *self.per_trial.entry(firing.trial.clone()).or_default() += 1;
        self.seen.insert(key);
        Ok(true)
    }

    /// Bytes recorded (the file's length).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Firings recorded.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Firings recorded for one trial (by fleet name).
    pub fn count(&self, trial: &str) -> u64 {
        self.per_trial.get(trial).copied().unwrap_or(0)
    }

    /// Whether no firing is recorded.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// The file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn firing(step: i64) -> FiringRecord {
        FiringRecord {
            trial: "t".into(),
            rule: "R".into(),
            step,
            mode: Some("TRAIN".into()),
            mode_step: Some(step),
            tensor: None,
            message: "m".into(),
            actions: vec![],
        }
    }

    #[test]
    fn torn_lines_are_cut_and_duplicates_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("firings.jsonl");
        let (mut log, old) = FiringLog::open(&path).unwrap();
        assert!(old.is_empty());
        assert!(log.record(&firing(1)).unwrap());
        assert!(!log.record(&firing(1)).unwrap());
        drop(log);
        // A crash in the middle of the second line.
        let torn = firing(2).to_line();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&torn.as_bytes()[..torn.len() / 2]).unwrap();
        drop(f);
        let (mut log, old) = FiringLog::open(&path).unwrap();
        assert_eq!(old, [firing(1)]);
        assert!(log.record(&firing(2)).unwrap());
        assert_eq!(log.bytes(), std::fs::metadata(&path).unwrap().len());
        let (_, all) = FiringLog::open(&path).unwrap();
        assert_eq!(all, [firing(1), firing(2)]);

        std::fs::write(&path, "{\"trial\":1}\n").unwrap();
        let err = FiringLog::open(&path).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
