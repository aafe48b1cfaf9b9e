//! The consuming side of an export: the rows of each entry, in order, into the table
//! writers, with the running totals and progress.

use crate::entry::{FirstRecords, Outcome, Unit};
use crate::error::{ExportError, Result};
use crate::sink::{TableWriter, Target};
use crate::summary::{Progress, Summary};
use crate::table::{Rows, Table};
use std::collections::BTreeMap;

/// The `tensors` rows waiting with values (`--values all`) are written as a row group once
/// their values take this many bytes, so that memory stays bounded however large the values.
const ROW_GROUP_VALUE_BYTES: usize = 8 << 20;

/// What the consuming thread alone changes: the table writers and the running totals.
pub(crate) struct Sink<'b> {
    pub(crate) strict: bool,
    pub(crate) out: Target<'b>,
    pub(crate) writers: BTreeMap<Table, TableWriter>,
    pub(crate) summary: Summary,
    pub(crate) done: u64,
    pub(crate) total: u64,
    /// Bytes of the `values` lists among the waiting `tensors` rows.
    pub(crate) waiting_values: usize,
}

impl Sink<'_> {
    pub(crate) fn writer(&mut self, t: Table) -> &mut TableWriter {
        self.writers.get_mut(&t).expect("a writer per table")
    }

    pub(crate) fn report(&self, progress: &mut dyn FnMut(Progress)) {
        progress(Progress {
            done: self.done,
            total: self.total.max(self.done),
        });
    }

    pub(crate) fn flush_all(&mut self, bucket: i64, force: bool) -> Result<()> {
        if force {
            self.waiting_values = 0;
        }
        for w in self.writers.values_mut() {
            w.flush(&mut self.out, bucket, force)?;
        }
        Ok(())
    }

    /// Writes the tables that have a row group's worth of rows waiting, and the `tensors`
    /// rows early when their values reach [`ROW_GROUP_VALUE_BYTES`].
    pub(crate) fn flush_full(&mut self, bucket: i64, row_group: usize) -> Result<()> {
        if self.waiting_values >= ROW_GROUP_VALUE_BYTES {
            self.waiting_values = 0;
            self.writers
                .get_mut(&Table::Tensors)
                .expect("a writer per table")
                .flush_group(&mut self.out, bucket)?;
        }
        for w in self.writers.values_mut() {
            if w.waiting() >= row_group {
                w.flush(&mut self.out, bucket, false)?;
            }
        }
        Ok(())
    }

    pub(crate) fn take_outcome(
        &mut self,
        u: &Unit,
        o: Outcome,
        firsts: &mut FirstRecords,
        selected: bool,
    ) -> Result<()> {
        if selected {
            self.done += 1;
        }
        if let Some(s) = o.skipped.first() {
            if self.strict {
                return Err(ExportError::BadRecord {
                    what: s.what.clone(),
                    step: u.step,
                    worker: u.worker.to_string(),
                    message: s.message.clone(),
                });
            }
        }
        self.summary.skipped_records.extend(o.skipped);
        self.summary.skipped_records.extend(o.notes);
        self.summary.value_bytes += o.value_bytes;
        if let Some((mode, ms, loc)) = o.step_info {
            let e = firsts
                .entry((u.step, u.worker.clone()))
                .or_insert((mode, ms, None));
            if let Some(loc) = loc {
                if e.2.as_ref().is_none_or(|f| loc.start < f.start) {
                    e.2 = Some(loc);
                }
            }
        }
        if let Some(r) = o.tensor {
            self.waiting_values += r.values.as_ref().map_or(0, |v| v.len() * 8);
            if let Rows::Tensors(rows) = self.writer(Table::Tensors).rows() {
                rows.push(r);
            }
        }
        if !o.reductions.is_empty() {
            if let Rows::Reductions(rows) = self.writer(Table::Reductions).rows() {
                rows.extend(o.reductions);
            }
        }
        if let Some(r) = o.scalar {
            if let Rows::Scalars(rows) = self.writer(Table::Scalars).rows() {
                rows.push(r);
            }
        }
        Ok(())
    }
}
