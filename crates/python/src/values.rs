//! Decoded tensor values as numpy arrays.
//!
//! A value comes out of the trial's cache as an `Arc<TensorValue>`; the numpy array is a
//! view of that very buffer (no copy after the decode), kept alive by a small owner object
//! set as the array's base. The view is read-only because the buffer is shared with the
//! cache and with other threads: `numpy.array(v)` gives a writable copy.

use numpy::{Element, PyArray, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyList;
use smdebug_record::TensorValue;
use std::sync::Arc;

/// Keeps a cached value alive while numpy arrays view it.
#[pyclass(frozen, module = "smdebug_rs._native")]
pub(crate) struct ValueOwner {
    value: Arc<TensorValue>,
}

fn view<'py, T: Element>(
    array: &ndarray::ArrayD<T>,
    owner: &Bound<'py, ValueOwner>,
) -> Bound<'py, PyAny> {
    // SAFETY: the array's buffer belongs to the `TensorValue` inside `owner`, which is never
    // mutated or moved (it sits behind an `Arc`), and `owner` is the numpy array's base
    // object, so the buffer outlives every view of it.
    let arr = unsafe { PyArray::<T, _>::borrow_from_array(array, owner.clone().into_any()) };
    drop(arr.readwrite().make_nonwriteable());
    arr.into_any()
}

/// The value as a numpy array of its dtype (strings: a numpy array of `str`, a copy).
pub(crate) fn to_numpy<'py>(
    py: Python<'py>,
    value: Arc<TensorValue>,
) -> PyResult<Bound<'py, PyAny>> {
    let owner = Bound::new(
        py,
        ValueOwner {
            value: Arc::clone(&value),
        },
    )?;
    let v = &owner.get().value;
    Ok(match &**v {
        TensorValue::Float16(a) => view(a, &owner),
        TensorValue::Float32(a) => view(a, &owner),
        TensorValue::Float64(a) => view(a, &owner),
        TensorValue::Int8(a) => view(a, &owner),
        TensorValue::Int16(a) => view(a, &owner),
        TensorValue::Int32(a) => view(a, &owner),
        TensorValue::Int64(a) => view(a, &owner),
        TensorValue::UInt8(a) => view(a, &owner),
        TensorValue::UInt16(a) => view(a, &owner),
        TensorValue::UInt32(a) => view(a, &owner),
        TensorValue::UInt64(a) => view(a, &owner),
        TensorValue::Bool(a) => view(a, &owner),
        TensorValue::Complex64(a) => view(a, &owner),
        TensorValue::Complex128(a) => view(a, &owner),
        TensorValue::Str(a) => {
            let items: Vec<&str> = a.iter().map(String::as_str).collect();
            let arr = py
                .import("numpy")?
                .call_method1("array", (PyList::new(py, items)?,))?;
            arr.call_method1("reshape", (a.shape().to_vec(),))?
        }
    })
}
