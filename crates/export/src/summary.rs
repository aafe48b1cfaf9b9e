//! What an export reports: what it wrote and skipped, and how far it is.

use crate::sink::Written;
use std::collections::BTreeMap;

/// Something the export skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// What was skipped (a tensor at a step of a worker, or an index file's step).
    pub what: String,
    /// Why (the error, which names the file and offset).
    pub message: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Per table: rows, bytes and files written.
    pub tables: BTreeMap<&'static str, Written>,
    /// Records that could not be read (their rows are missing).
    pub skipped_records: Vec<Skipped>,
    /// Index files that could not be parsed (their steps are missing).
    pub skipped_index_files: Vec<Skipped>,
    /// Bytes of raw values read and reduced.
    pub value_bytes: u64,
    /// Wall-clock seconds the export took.
    pub seconds: f64,
}

impl Summary {
    /// Rows written to all tables.
    pub fn rows(&self) -> u64 {
        self.tables.values().map(|w| w.rows).sum()
    }

    /// Bytes written to all tables.
    pub fn bytes(&self) -> u64 {
        self.tables.values().map(|w| w.bytes).sum()
    }
}

/// How far an export is: `(tensor, step, worker)` entries done out of those known so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Entries done.
    pub done: u64,
    /// Entries known (grows while `--follow` finds new steps).
    pub total: u64,
}
