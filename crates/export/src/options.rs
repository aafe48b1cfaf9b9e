//! What an export writes and how.

use smdebug_config::Mode;
use std::fmt;
use std::str::FromStr;

/// The file format of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Apache Parquet, zstd-compressed (`.parquet`).
    #[default]
    Parquet,
    /// Arrow IPC file format, zstd-compressed buffers (`.arrow`).
    Arrow,
    /// CSV with a header line; list columns hold JSON arrays (`.csv`).
    Csv,
}

impl Format {
    /// The file name extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Csv => "csv",
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "parquet" => Ok(Format::Parquet),
            "arrow" | "ipc" => Ok(Format::Arrow),
            "csv" => Ok(Format::Csv),
            _ => Err(format!(
                "unknown format {s:?}: expected parquet, arrow or csv"
            )),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// Which raw values go into the `values` list column of `tensors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValuesMode {
    /// None (the column is null).
    #[default]
    None,
    /// Values of at most [`SMALL_VALUE_ELEMENTS`] elements.
    Small,
    /// Every value.
    All,
}

/// The most elements a value may have to go into the `values` column with
/// [`ValuesMode::Small`].
pub const SMALL_VALUE_ELEMENTS: usize = 64;

impl FromStr for ValuesMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(ValuesMode::None),
            "small" => Ok(ValuesMode::Small),
            "all" => Ok(ValuesMode::All),
            _ => Err(format!(
                "unknown values mode {s:?}: expected none, small or all"
            )),
        }
    }
}

/// How each table is laid out under the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// `TABLE.EXT` when the table fits one file of one step bucket, else partitioned.
    #[default]
    Auto,
    /// Always `TABLE.EXT` (one file, however large: it is built in memory).
    Single,
    /// Always `TABLE/step_bucket=B/part-K.EXT` (Hive partitioning).
    Partitioned,
}

impl FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Layout::Auto),
            "single" => Ok(Layout::Single),
            "partitioned" => Ok(Layout::Partitioned),
            _ => Err(format!(
                "unknown layout {s:?}: expected auto, single or partitioned"
            )),
        }
    }
}

/// A half-open range of global steps, `A:B` (the trial reader's, shared with every command
/// that reads a trial).
pub use smdebug_trial::StepRange;

/// Settings of an export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// File format.
    pub format: Format,
    /// Layout of each table.
    pub layout: Layout,
    /// Keep tensors whose name a Python regex (`re.search`) matches.
    pub tensors: Option<String>,
    /// Keep tensors of this collection.
    pub collection: Option<String>,
    /// Keep steps of this mode.
    pub mode: Option<Mode>,
    /// Keep these global steps.
    pub steps: StepRange,
    /// Keep these workers (all when empty).
    pub workers: Vec<String>,
    /// Raw values in the `values` column.
    pub values: ValuesMode,
    /// Global steps per partition (`step_bucket = step / bucket_steps`).
    pub bucket_steps: i64,
    /// Rows per record batch and Parquet row group.
    pub row_group_rows: usize,
    /// A file is closed and the next part begun past this many bytes (partitioned layout).
    pub part_bytes: usize,
    /// Threads reading and reducing values (0: the machine's parallelism).
    pub threads: usize,
    /// Whether an unreadable record or index file stops the export (else it is skipped,
    /// named in the summary and counted).
    pub strict: bool,
    /// A Hive partition folder (`KEY=VALUE`, escaped by the caller) put between each table
    /// and its files, `TABLE/run=NAME/step_bucket=B/part-K.EXT`: what a fleet export that
    /// writes each run straight into the shared dataset gives. `None`: `TABLE/…`.
    pub partition: Option<String>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            format: Format::Parquet,
            layout: Layout::Auto,
            tensors: None,
            collection: None,
            mode: None,
            steps: StepRange::default(),
            workers: Vec::new(),
            values: ValuesMode::None,
            bucket_steps: 1000,
            row_group_rows: 8192,
            part_bytes: 64 << 20,
            threads: 0,
            strict: false,
            partition: None,
        }
    }
}
