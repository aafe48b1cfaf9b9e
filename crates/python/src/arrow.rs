//! `Trial.to_arrow()` / `to_pandas()`: the tables of smdebug-export handed to pyarrow
//! through the Arrow C stream interface (a PyCapsule named `arrow_array_stream` returned by
//! `__arrow_c_stream__`), so no Python object is built per row.
//!
//! The export runs over the user's own trial, refreshed first, and hands its record batches
//! over as they are made (`smdebug_export::export_batches`): no file, no encoding, no
//! compression between the export and pyarrow.

use crate::convert::mode_arg;
use crate::trial::PyTrial;
use crate::{run, ExceptionClass, NativeError};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use smdebug_export::{export_batches, ExportOptions, StepRange, Table, ValuesMode};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The tables an export writes, in `docs/src/export.md` order.
const TABLES: [&str; 4] = ["tensors", "reductions", "scalars", "steps"];

/// One exported table, readable once as an Arrow C stream (`pyarrow.table(obj)`,
/// `pyarrow.RecordBatchReader.from_stream(obj)`, polars, DuckDB…).
#[pyclass(module = "smdebug_rs._native", name = "ArrowTable")]
pub(crate) struct ArrowTable {
    schema: SchemaRef,
    batches: Mutex<Option<Vec<RecordBatch>>>,
}

#[pymethods]
impl ArrowTable {
    /// The Arrow PyCapsule stream protocol. The batches move into the stream: a second
    /// call raises `SMDebugRuntimeError`.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is ours; a consumer that wants another casts afterwards (the protocol
        // allows ignoring the request).
        let _ = requested_schema;
        let batches = self
            .batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                NativeError::Other(
                    ExceptionClass::SMDebugRuntimeError,
                    "this table's Arrow stream was already consumed".into(),
                )
                .into_pyerr(py)
            })?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            self.schema.clone(),
        ));
        let stream = FFI_ArrowArrayStream::new(reader);
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// Number of rows.
    fn num_rows(&self) -> usize {
        self.batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or(0, |b| b.iter().map(RecordBatch::num_rows).sum())
    }
}

/// Exports the trial's tables in memory: `{table: ArrowTable}`.
#[pyfunction]
#[pyo3(signature = (trial, tables=None, *, tensors=None, collection=None, mode=None, steps=None, workers=None, values="none"))]
#[allow(clippy::too_many_arguments)]
fn export_tables<'py>(
    py: Python<'py>,
    trial: &Bound<'py, PyTrial>,
    tables: Option<Vec<String>>,
    tensors: Option<String>,
    collection: Option<String>,
    mode: Option<&Bound<'_, PyAny>>,
    steps: Option<(Option<i64>, Option<i64>)>,
    workers: Option<Vec<String>>,
    values: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let tables = tables.unwrap_or_else(|| TABLES.iter().map(|s| s.to_string()).collect());
    for t in &tables {
        if !TABLES.contains(&t.as_str()) {
            return Err(NativeError::value(format!(
                "unknown table {t:?}: expected one of {}",
                TABLES.join(", ")
            ))
            .into_pyerr(py));
        }
    }
    let values: ValuesMode = values
        .parse()
        .map_err(|e: String| NativeError::value(e).into_pyerr(py))?;
    let mode = match mode {
        Some(m) if !m.is_none() => Some(mode_arg(Some(m))?),
        _ => None,
    };
    let (start, end) = steps.unwrap_or((None, None));
    let options = ExportOptions {
        tensors,
        collection,
        mode,
        steps: StepRange { start, end },
        workers: workers.unwrap_or_default(),
        values,
        strict: true,
        ..ExportOptions::default()
    };
    let inner = trial.get().trial(py)?;
    let out = run(py, move || {
        // The user's own trial, refreshed as any query of it would be: the tables hold the
        // steps `tensor_names()` would show, and a trial on object storage is not listed and
        // read again by a second open. The export reads each value once (`value_once`), so
        // it does not fill the trial's value cache with values never asked for again.
        inner.maybe_refresh()?;
        let mut out: BTreeMap<Table, Vec<RecordBatch>> = BTreeMap::new();
        export_batches(&inner, &options, &mut |_| {}, &mut |table, batch| {
            if tables.iter().any(|t| t == table.name()) {
                out.entry(table).or_default().push(batch);
            }
            Ok(())
        })
        .map_err(NativeError::from)?;
        Ok(tables
            .iter()
            .map(|name| {
                let table = Table::ALL
                    .into_iter()
                    .find(|t| t.name() == name)
                    .expect("checked against TABLES above");
                (
                    name.clone(),
                    (table.schema(false), out.remove(&table).unwrap_or_default()),
                )
            })
            .collect::<Vec<_>>())
    })?;
    let d = PyDict::new(py);
    for (name, (schema, batches)) in out {
        d.set_item(
            name,
            ArrowTable {
                schema,
                batches: Mutex::new(Some(batches)),
            },
        )?;
    }
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowTable>()?;
    m.add_function(wrap_pyfunction!(export_tables, m)?)?;
    Ok(())
}
