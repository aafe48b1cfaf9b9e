//! The four tables: their rows, their Arrow schemas (the stable contract documented in
//! `docs/src/export.md`) and the conversion of a run of rows into a record batch.

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

use crate::stats::Statistics;

/// One of the exported tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// One row per (tensor, step, worker): dtype, shape, statistics, optionally the value.
    Tensors,
    /// One row per saved reduction.
    Reductions,
    /// One row per value of a scalar (`scalar/*`, losses).
    Scalars,
    /// One row per (step, worker) that saved something.
    Steps,
}

impl Table {
    /// Every table, in the order they are written.
    pub const ALL: [Table; 4] = [
        Table::Tensors,
        Table::Reductions,
        Table::Scalars,
        Table::Steps,
    ];

    /// The table's name, which is also its file or folder name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Tensors => "tensors",
            Table::Reductions => "reductions",
            Table::Scalars => "scalars",
            Table::Steps => "steps",
        }
    }

    /// The table's Arrow schema. With `lists_as_text` (CSV, which has no list type) the list
    /// columns are strings holding JSON arrays.
    pub fn schema(self, lists_as_text: bool) -> SchemaRef {
        let list = |name: &str, item: DataType, nullable: bool| {
            if lists_as_text {
                Field::new(name, DataType::Utf8, nullable)
            } else {
                Field::new(
                    name,
                    DataType::List(Arc::new(Field::new("item", item, true))),
                    nullable,
                )
            }
        };
        let s = |name: &str| Field::new(name, DataType::Utf8, false);
        let i = |name: &str| Field::new(name, DataType::Int64, false);
        let f = |name: &str| Field::new(name, DataType::Float64, true);
        let key = [
            s("trial"),
            s("worker"),
            s("mode"),
            i("mode_step"),
            i("step"),
        ];
        let mut fields: Vec<Field> = key.to_vec();
        match self {
            Table::Tensors => {
                fields.push(s("tensor"));
                fields.push(list("collections", DataType::Utf8, false));
                fields.push(Field::new("dtype", DataType::Utf8, true));
                fields.push(list("shape", DataType::Int64, true));
                fields.push(Field::new("element_count", DataType::Int64, true));
                fields.push(s("stats_source"));
                for name in ["min", "max", "mean", "std", "l1", "l2"] {
                    fields.push(f(name));
                }
                for name in ["nan_count", "pos_inf_count", "neg_inf_count", "zero_count"] {
                    fields.push(Field::new(name, DataType::Int64, true));
                }
                fields.push(list("values", DataType::Float64, true));
            }
            Table::Reductions => {
                fields.push(s("tensor"));
                fields.push(s("reduction"));
                fields.push(Field::new("abs", DataType::Boolean, false));
                fields.push(Field::new("dtype", DataType::Utf8, true));
                fields.push(f("value"));
            }
            Table::Scalars => {
                fields.push(s("name"));
                fields.push(f("wall_time"));
                fields.push(f("value"));
            }
            Table::Steps => {
                fields.push(Field::new("complete", DataType::Boolean, false));
                fields.push(f("wall_time"));
            }
        }
        Arc::new(Schema::new(fields))
    }
}

/// The columns every table starts with: where a row belongs.
#[derive(Debug, Clone, PartialEq)]
pub struct RowKey {
    /// The trial's name.
    pub trial: Arc<str>,
    /// The worker that saved it.
    pub worker: Arc<str>,
    /// The mode of the step (`TRAIN`, `EVAL`, `PREDICT`, `GLOBAL`).
    pub mode: &'static str,
    /// The step within its mode.
    pub mode_step: i64,
    /// The global step.
    pub step: i64,
}

/// Where a row's statistics come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsSource {
    /// Computed from the raw value.
    Value,
    /// Only reductions were saved: the statistics columns hold the saved ones.
    Reductions,
    /// Neither a value nor a reduction (a shape only, or a value without statistics).
    None,
}

impl StatsSource {
    /// The column text.
    pub fn name(self) -> &'static str {
        match self {
            StatsSource::Value => "value",
            StatsSource::Reductions => "reductions",
            StatsSource::None => "none",
        }
    }
}

/// A row of `tensors`.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRow {
    /// Where it belongs.
    pub key: RowKey,
    /// The tensor's name.
    pub tensor: Arc<str>,
    /// Names of the collections the tensor belongs to, sorted.
    pub collections: Arc<[String]>,
    /// numpy name of the raw value's dtype (None without a raw value).
    pub dtype: Option<&'static str>,
    /// The shape (the value's, else the saved one).
    pub shape: Option<Vec<i64>>,
    /// Number of elements (from the shape).
    pub element_count: Option<i64>,
    /// Where the statistics come from.
    pub source: StatsSource,
    /// The statistics (counts are None unless computed from the value).
    pub stats: Statistics,
    /// Whether the counts are known (computed from the value).
    pub counts: bool,
    /// The value as `f64`, when asked for and small enough.
    pub values: Option<Vec<f64>>,
}

/// A row of `reductions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReductionRow {
    /// Where it belongs.
    pub key: RowKey,
    /// The tensor reduced.
    pub tensor: Arc<str>,
    /// The reduction (`min`, `max`, `mean`, `std`, `variance`, `sum`, `prod`, `l1`, `l2`).
    pub reduction: String,
    /// Whether it is of the absolute values.
    pub abs: bool,
    /// numpy name of the saved value's dtype.
    pub dtype: &'static str,
    /// The saved value (None when it is not one real number).
    pub value: Option<f64>,
}

/// A row of `scalars`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarRow {
    /// Where it belongs.
    pub key: RowKey,
    /// The scalar's tensor name.
    pub name: Arc<str>,
    /// The record's wall time (seconds since the Unix epoch).
    pub wall_time: Option<f64>,
    /// The value.
    pub value: f64,
}

/// A row of `steps`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// Which step and worker.
    pub key: RowKey,
    /// Whether every worker of the trial saved this step.
    pub complete: bool,
    /// Wall time of the first record the worker saved at this step.
    pub wall_time: Option<f64>,
}

/// Rows of one table waiting to become a record batch.
#[derive(Debug)]
pub enum Rows {
    /// `tensors` rows.
    Tensors(Vec<TensorRow>),
    /// `reductions` rows.
    Reductions(Vec<ReductionRow>),
    /// `scalars` rows.
    Scalars(Vec<ScalarRow>),
    /// `steps` rows.
    Steps(Vec<StepRow>),
}

impl Rows {
    /// No rows of `table`.
    pub fn new(table: Table) -> Rows {
        match table {
            Table::Tensors => Rows::Tensors(Vec::new()),
            Table::Reductions => Rows::Reductions(Vec::new()),
            Table::Scalars => Rows::Scalars(Vec::new()),
            Table::Steps => Rows::Steps(Vec::new()),
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Tensors(r) => r.len(),
            Rows::Reductions(r) => r.len(),
            Rows::Scalars(r) => r.len(),
            Rows::Steps(r) => r.len(),
        }
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record batch of these rows (which are taken out).
    pub fn take_batch(
        &mut self,
        schema: &SchemaRef,
        lists_as_text: bool,
    ) -> Result<RecordBatch, ArrowError> {
        // Emptied, not replaced: the next row group's rows reuse the allocation instead of
        // growing a fresh one (fresh memory is paid for again at its first touch).
        let columns = match self {
            Rows::Tensors(r) => {
                let c = tensor_columns(r, lists_as_text);
                r.clear();
                c
            }
            Rows::Reductions(r) => {
                let c = reduction_columns(r);
                r.clear();
                c
            }
            Rows::Scalars(r) => {
                let c = scalar_columns(r);
                r.clear();
                c
            }
            Rows::Steps(r) => {
                let c = step_columns(r);
                r.clear();
                c
            }
        };
        RecordBatch::try_new(schema.clone(), columns)
    }
}

fn key_columns<'a>(keys: impl Iterator<Item = &'a RowKey> + Clone) -> Vec<ArrayRef> {
    let mut trial = StringBuilder::new();
    let mut worker = StringBuilder::new();
    let mut mode = StringBuilder::new();
    let mut mode_step = Int64Builder::new();
    let mut step = Int64Builder::new();
    for k in keys {
        trial.append_value(&*k.trial);
        worker.append_value(&*k.worker);
        mode.append_value(k.mode);
        mode_step.append_value(k.mode_step);
        step.append_value(k.step);
    }
    vec![
        Arc::new(trial.finish()),
        Arc::new(worker.finish()),
        Arc::new(mode.finish()),
        Arc::new(mode_step.finish()),
        Arc::new(step.finish()),
    ]
}

/// A number as JSON text; NaN and infinities as Python's `float` reprs, which pandas and
/// `json.loads` read back.
fn json_number(out: &mut String, v: f64) {
    use std::fmt::Write;
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        let _ = write!(out, "{v:?}");
    }
}

fn text_list<T>(items: &[T], mut item: impl FnMut(&mut String, &T)) -> String {
    let mut out = String::from("[");
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item(&mut out, x);
    }
    out.push(']');
    out
}

fn tensor_columns(rows: &[TensorRow], lists_as_text: bool) -> Vec<ArrayRef> {
    let mut cols = key_columns(rows.iter().map(|r| &r.key));
    let mut tensor = StringBuilder::new();
    let mut dtype = StringBuilder::new();
    let mut count = Int64Builder::new();
    let mut source = StringBuilder::new();
    let mut f: Vec<Float64Builder> = (0..6).map(|_| Float64Builder::new()).collect();
    let mut c: Vec<Int64Builder> = (0..4).map(|_| Int64Builder::new()).collect();
    for r in rows {
        tensor.append_value(&*r.tensor);
        dtype.append_option(r.dtype);
        count.append_option(r.element_count);
        source.append_value(r.source.name());
        let s = &r.stats;
        for (b, v) in f.iter_mut().zip([s.min, s.max, s.mean, s.std, s.l1, s.l2]) {
            b.append_option(v);
        }
        let counts = [s.nan_count, s.pos_inf_count, s.neg_inf_count, s.zero_count];
        for (b, v) in c.iter_mut().zip(counts) {
            b.append_option(r.counts.then_some(v as i64));
        }
    }
    let (collections, shape, values): (ArrayRef, ArrayRef, ArrayRef) = if lists_as_text {
        let mut cb = StringBuilder::new();
        let mut sb = StringBuilder::new();
        let mut vb = StringBuilder::new();
        for r in rows {
            cb.append_value(text_list(&r.collections, |o, s| {
                o.push_str(&serde_json_string(s))
            }));
            sb.append_option(
                r.shape
                    .as_ref()
                    .map(|s| text_list(s, |o, d| o.push_str(&d.to_string()))),
            );
            vb.append_option(
                r.values
                    .as_ref()
                    .map(|v| text_list(v, |o, x| json_number(o, *x))),
            );
        }
        (
            Arc::new(cb.finish()),
            Arc::new(sb.finish()),
            Arc::new(vb.finish()),
        )
    } else {
        let mut cb = ListBuilder::new(StringBuilder::new());
        let mut sb = ListBuilder::new(Int64Builder::new());
        let mut vb = ListBuilder::new(Float64Builder::new());
        for r in rows {
            for name in r.collections.iter() {
                cb.values().append_value(name);
            }
            cb.append(true);
            match &r.shape {
                Some(s) => {
                    sb.values().append_slice(s);
                    sb.append(true);
                }
                None => sb.append(false),
            }
            match &r.values {
                Some(v) => {
                    vb.values().append_slice(v);
                    vb.append(true);
                }
                None => vb.append(false),
            }
        }
        (
            Arc::new(cb.finish()),
            Arc::new(sb.finish()),
            Arc::new(vb.finish()),
        )
    };
    cols.push(Arc::new(tensor.finish()));
    cols.push(collections);
    cols.push(Arc::new(dtype.finish()));
    cols.push(shape);
    cols.push(Arc::new(count.finish()));
    cols.push(Arc::new(source.finish()));
    for mut b in f {
        cols.push(Arc::new(b.finish()));
    }
    for mut b in c {
        cols.push(Arc::new(b.finish()));
    }
    cols.push(values);
    cols
}

/// A JSON string literal (for names inside the CSV list columns).
fn serde_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn reduction_columns(rows: &[ReductionRow]) -> Vec<ArrayRef> {
    let mut cols = key_columns(rows.iter().map(|r| &r.key));
    let mut tensor = StringBuilder::new();
    let mut reduction = StringBuilder::new();
    let mut abs = BooleanBuilder::new();
    let mut dtype = StringBuilder::new();
    let mut value = Float64Builder::new();
    for r in rows {
        tensor.append_value(&*r.tensor);
        reduction.append_value(&r.reduction);
        abs.append_value(r.abs);
        dtype.append_value(r.dtype);
        value.append_option(r.value);
    }
    cols.push(Arc::new(tensor.finish()));
    cols.push(Arc::new(reduction.finish()));
    cols.push(Arc::new(abs.finish()));
    cols.push(Arc::new(dtype.finish()));
    cols.push(Arc::new(value.finish()));
    cols
}

fn scalar_columns(rows: &[ScalarRow]) -> Vec<ArrayRef> {
    let mut cols = key_columns(rows.iter().map(|r| &r.key));
    let mut name = StringBuilder::new();
    let mut wall = Float64Builder::new();
    let mut value = Float64Builder::new();
    for r in rows {
        name.append_value(&*r.name);
        wall.append_option(r.wall_time);
        value.append_value(r.value);
    }
    cols.push(Arc::new(name.finish()));
    cols.push(Arc::new(wall.finish()));
    cols.push(Arc::new(value.finish()));
    cols
}

fn step_columns(rows: &[StepRow]) -> Vec<ArrayRef> {
    let mut cols = key_columns(rows.iter().map(|r| &r.key));
    let mut complete = BooleanBuilder::new();
    let mut wall = Float64Builder::new();
    for r in rows {
        complete.append_value(r.complete);
        wall.append_option(r.wall_time);
    }
    cols.push(Arc::new(complete.finish()));
    cols.push(Arc::new(wall.finish()));
    cols
}
