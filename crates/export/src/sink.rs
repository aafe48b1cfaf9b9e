//! Writing one table: record batches into files of a bounded size, each stored with one
//! atomic put (a temporary name then a rename on disk, one PUT on object stores), in the
//! single-file or the Hive-partitioned layout.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use smdebug_storage::{BlockingStore, Bytes};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::{ExportError, Result};
use crate::options::{Format, Layout};
use crate::table::{Rows, Table};

/// The version of the tables' schemas, in every Parquet file's key-value metadata under
/// [`SCHEMA_VERSION_KEY`]; it changes only when a column changes meaning or type (columns
/// are only ever added at the end).
pub const SCHEMA_VERSION: &str = "1";

/// The key-value metadata key of [`SCHEMA_VERSION`].
pub const SCHEMA_VERSION_KEY: &str = "smdebug.export.schema_version";

/// What receives one table's record batches: a table's batches handed over as they are
/// made, with the table they belong to.
pub type BatchSink<'a> = dyn FnMut(Table, RecordBatch) -> Result<()> + 'a;

/// Where the table writers' rows go.
pub(crate) enum Target<'a> {
    /// Encoded into files of the export's format, stored under this store.
    Store(BlockingStore),
    /// Handed over as Arrow record batches, unencoded (an in-process consumer: no file,
    /// no compression, no copy).
    Batches(&'a mut BatchSink<'a>),
}

impl Target<'_> {
    fn store(&self) -> Option<&BlockingStore> {
        match self {
            Target::Store(s) => Some(s),
            Target::Batches(_) => None,
        }
    }
}

/// One file being encoded in memory.
enum Encoder {
    Parquet(ArrowWriter<Vec<u8>>),
    Ipc(arrow_ipc::writer::FileWriter<Vec<u8>>),
    Csv(arrow_csv::Writer<Counted>, Arc<AtomicUsize>),
}

/// A buffer that tells how much it holds while a CSV writer owns it.
struct Counted {
    buf: Vec<u8>,
    len: Arc<AtomicUsize>,
}

impl std::io::Write for Counted {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        self.len.store(self.buf.len(), Ordering::Relaxed);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Encoder {
    fn new(format: Format, schema: &SchemaRef, row_group_rows: usize) -> Result<Encoder> {
        Ok(match format {
            Format::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(row_group_rows.max(1)))
                    .set_key_value_metadata(Some(vec![KeyValue::new(
                        SCHEMA_VERSION_KEY.to_owned(),
                        SCHEMA_VERSION.to_owned(),
                    )]))
                    .build();
                Encoder::Parquet(ArrowWriter::try_new(
                    Vec::new(),
                    schema.clone(),
                    Some(props),
                )?)
            }
            Format::Arrow => {
                let options = arrow_ipc::writer::IpcWriteOptions::default()
                    .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))?;
                Encoder::Ipc(arrow_ipc::writer::FileWriter::try_new_with_options(
                    Vec::new(),
                    schema,
                    options,
                )?)
            }
            Format::Csv => {
                let len = Arc::new(AtomicUsize::new(0));
                let buf = Counted {
                    buf: Vec::new(),
                    len: len.clone(),
                };
                Encoder::Csv(
                    arrow_csv::WriterBuilder::new().with_header(true).build(buf),
                    len,
                )
            }
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            Encoder::Parquet(w) => w.write(batch)?,
            Encoder::Ipc(w) => w.write(batch)?,
            Encoder::Csv(w, _) => w.write(batch)?,
        }
        Ok(())
    }

    /// Ends the Parquet row group in progress, so that its buffers are encoded and freed
    /// (the other formats write each batch as it comes).
    fn end_row_group(&mut self) -> Result<()> {
        if let Encoder::Parquet(w) = self {
            w.flush()?;
        }
        Ok(())
    }

    /// Makes room for `total` bytes of file at once: a buffer grown by doubling past a
    /// part's size would hold the old and the new copy together for a moment.
    fn reserve(&mut self, total: usize) {
        let buf = match self {
            Encoder::Parquet(w) => w.inner_mut(),
            Encoder::Ipc(w) => w.get_mut(),
            // arrow-csv lends no access to its output.
            Encoder::Csv(..) => return,
        };
        buf.reserve(total.saturating_sub(buf.len()));
    }

    /// Bytes the file holds so far (encoded, plus what a Parquet row group buffers).
    fn size(&self) -> usize {
        match self {
            Encoder::Parquet(w) => w.bytes_written() + w.in_progress_size(),
            Encoder::Ipc(w) => w.get_ref().len(),
            Encoder::Csv(_, len) => len.load(Ordering::Relaxed),
        }
    }

    fn finish(self) -> Result<Vec<u8>> {
        Ok(match self {
            Encoder::Parquet(w) => w.into_inner()?,
            Encoder::Ipc(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Encoder::Csv(w, _) => w.into_inner().buf,
        })
    }
}

/// Settings shared by the writers of one export.
#[derive(Debug, Clone)]
pub struct SinkSettings {
    /// File format.
    pub format: Format,
    /// Layout.
    pub layout: Layout,
    /// Rows per record batch (and Parquet row group).
    pub row_group_rows: usize,
    /// A file is closed (and the next part begun) past this many bytes.
    pub part_bytes: usize,
    /// A partition folder between the table and its files ([`ExportOptions::partition`]).
    ///
    /// [`ExportOptions::partition`]: crate::ExportOptions::partition
    pub partition: Option<String>,
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Rows.
    pub rows: u64,
    /// Bytes of the files.
    pub bytes: u64,
    /// Keys of the files, relative to the output.
    pub files: Vec<String>,
}

/// The writer of one table.
pub struct TableWriter {
    table: Table,
    schema: SchemaRef,
    settings: SinkSettings,
    rows: Rows,
    /// The open file and the bucket its rows belong to.
    open: Option<(Encoder, i64)>,
    /// A finished first file held back until it is known whether it is the only one
    /// (then it takes the single-file name).
    held: Option<(Vec<u8>, i64)>,
    /// Whether the table is being written as a partitioned folder.
    partitioned: bool,
    /// Next part number (unique within the export, so appended parts never collide).
    next_part: u64,
    /// Prefix of part names (distinguishes the parts of separate runs into one folder).
    run: String,
    written: Written,
}

impl TableWriter {
    /// A writer of `table`; `run` goes into part names.
    pub fn new(table: Table, settings: SinkSettings, run: &str) -> TableWriter {
        TableWriter {
            table,
            schema: table.schema(settings.format == Format::Csv),
            partitioned: settings.layout == Layout::Partitioned,
            settings,
            rows: Rows::new(table),
            open: None,
            held: None,
            next_part: 0,
            run: run.to_owned(),
            written: Written::default(),
        }
    }

    /// The rows waiting to be written (append to them, then call [`TableWriter::flush`]).
    pub fn rows(&mut self) -> &mut Rows {
        &mut self.rows
    }

    /// How many rows are waiting.
    pub fn waiting(&self) -> usize {
        self.rows.len()
    }

    /// Writes every waiting row as a row group of its own, however few: for rows so large
    /// (values with `--values all`) that a row group of the usual row count would not fit
    /// in memory.
    pub(crate) fn flush_group(&mut self, target: &mut Target<'_>, bucket: i64) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        self.flush(target, bucket, true)?;
        let Some(store) = target.store() else {
            return Ok(());
        };
        if let Some((enc, _)) = self.open.as_mut() {
            enc.end_row_group()?;
            if enc.size() >= self.settings.part_bytes && self.settings.layout != Layout::Single {
                self.partitioned = true;
                self.close_file(store)?;
            }
        }
        Ok(())
    }

    /// Writes the waiting rows, which belong to step bucket `bucket`, once there are enough
    /// of them for a row group (all of them when `force`).
    pub(crate) fn flush(
        &mut self,
        target: &mut Target<'_>,
        bucket: i64,
        force: bool,
    ) -> Result<()> {
        if self.rows.is_empty() || (!force && self.rows.len() < self.settings.row_group_rows) {
            return Ok(());
        }
        let store = match target {
            Target::Store(store) => &*store,
            Target::Batches(give) => {
                // Slices of a row group each, as the files get (a slice shares the
                // batch's buffers).
                let batch = self.rows.take_batch(&self.schema, false)?;
                let step = self.settings.row_group_rows.max(1);
                let mut offset = 0;
                while offset < batch.num_rows() {
                    let len = step.min(batch.num_rows() - offset);
                    self.written.rows += len as u64;
                    give(self.table, batch.slice(offset, len))?;
                    offset += len;
                }
                return Ok(());
            }
        };
        if matches!(&self.open, Some((_, b)) if *b != bucket) {
            // Rows of a new bucket: the table spans several buckets, so it is partitioned.
            self.partitioned |= self.settings.layout != Layout::Single;
            if self.partitioned {
                self.close_file(store)?;
            }
        }
        let batch = self
            .rows
            .take_batch(&self.schema, self.settings.format == Format::Csv)?;
        // Slices of a row group each, so that a file is closed soon after it passes the
        // part size however many rows were waiting.
        let step = self.settings.row_group_rows.max(1);
        let mut offset = 0;
        while offset < batch.num_rows() {
            let len = step.min(batch.num_rows() - offset);
            if self.open.is_none() {
                let enc = Encoder::new(
                    self.settings.format,
                    &self.schema,
                    self.settings.row_group_rows,
                )?;
                self.open = Some((enc, bucket));
            }
            let (enc, _) = self.open.as_mut().expect("opened above");
            enc.write(&batch.slice(offset, len))?;
            offset += len;
            self.written.rows += len as u64;
            let part = self.settings.part_bytes;
            if self.settings.layout != Layout::Single && enc.size() >= part / 2 {
                enc.reserve(part.saturating_add(part / 4));
            }
            if enc.size() >= self.settings.part_bytes && self.settings.layout != Layout::Single {
                self.partitioned = true;
                self.close_file(store)?;
            }
        }
        Ok(())
    }

    fn close_file(&mut self, store: &BlockingStore) -> Result<()> {
        let Some((enc, bucket)) = self.open.take() else {
            return Ok(());
        };
        let bytes = enc.finish()?;
        if self.partitioned {
            if let Some((held, b)) = self.held.take() {
                self.put_part(store, held, b)?;
            }
            self.put_part(store, bytes, bucket)
        } else {
            self.held = Some((bytes, bucket));
            Ok(())
        }
    }

    /// The folder of the table's partitioned files: `TABLE`, or `TABLE/PARTITION`.
    fn folder(&self) -> String {
        match &self.settings.partition {
            Some(p) => format!("{}/{p}", self.table.name()),
            None => self.table.name().to_owned(),
        }
    }

    /// The key of the single layout's one file: `TABLE.EXT`, or
    /// `TABLE/PARTITION/part-00000.EXT`.
    fn single_key(&self) -> String {
        let ext = self.settings.format.extension();
        match &self.settings.partition {
            Some(p) => format!("{}/{p}/part-00000.{ext}", self.table.name()),
            None => format!("{}.{ext}", self.table.name()),
        }
    }

    fn put_part(&mut self, store: &BlockingStore, bytes: Vec<u8>, bucket: i64) -> Result<()> {
        let key = format!(
            "{}/step_bucket={bucket}/part-{}{:05}.{}",
            self.folder(),
            self.run,
            self.next_part,
            self.settings.format.extension()
        );
        self.next_part += 1;
        self.put(store, key, bytes)
    }

    fn put(&mut self, store: &BlockingStore, key: String, bytes: Vec<u8>) -> Result<()> {
        self.written.bytes += bytes.len() as u64;
        store
            .put(&key, Bytes::from(bytes))
            .map_err(|source| ExportError::Write {
                key: key.clone(),
                source,
            })?;
        self.written.files.push(key);
        Ok(())
    }

    /// Writes every waiting row and closes the open file, so that everything given so far
    /// is stored (`--follow` calls this after each round).
    pub(crate) fn sync(&mut self, target: &mut Target<'_>, bucket: i64) -> Result<()> {
        self.flush(target, bucket, true)?;
        let Some(store) = target.store() else {
            return Ok(());
        };
        self.partitioned |= self.settings.layout != Layout::Single;
        self.close_file(store)
    }

    /// Writes what is left; a table that fit one file in the `auto` layout is stored as
    /// `TABLE.EXT`, and a table without rows as an empty file of that name.
    pub(crate) fn finish(mut self, target: &mut Target<'_>, bucket: i64) -> Result<Written> {
        self.flush(target, bucket, true)?;
        let Some(store) = target.store() else {
            return Ok(self.written);
        };
        self.close_file(store)?;
        if let Some((bytes, _)) = self.held.take() {
            let key = self.single_key();
            self.put(store, key, bytes)?;
        } else if self.written.files.is_empty() {
            // No rows at all: an empty file still carries the schema for readers.
            let enc = Encoder::new(
                self.settings.format,
                &self.schema,
                self.settings.row_group_rows,
            )?;
            let key = if self.partitioned {
                format!(
                    "{}/step_bucket=0/part-{}{:05}.{}",
                    self.folder(),
                    self.run,
                    self.next_part,
                    self.settings.format.extension()
                )
            } else {
                self.single_key()
            };
            let mut enc = enc;
            if self.settings.format == Format::Csv {
                // arrow-csv writes the header with the first batch only.
                enc.write(&RecordBatch::new_empty(self.schema.clone()))?;
            }
            self.put(store, key, enc.finish()?)?;
        }
        Ok(self.written)
    }
}
