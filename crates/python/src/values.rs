//! Decoded tensor values as numpy arrays.
//!
//! A value comes out of the trial's cache as an `Arc<TensorValue>`; the numpy array is a
//! view of that very buffer (no copy after the decode), kept alive by a small owner object
//! set as the array's base. The view is read-only because the buffer is shared with the
//! cache and with other threads: `numpy.array(v)` gives a writable copy.

use numpy::npyffi::{self, npy_intp};
use numpy::{Element, PyArray, PyArrayDescrMethods, PyArrayMethods, PY_ARRAY_API};
use pyo3::prelude::*;
use pyo3::types::PyList;
use smdebug_record::TensorValue;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Keeps a cached value alive while numpy arrays view it.
#[pyclass(frozen, module = "smdebug_rs._native")]
pub(crate) struct ValueOwner {
    value: Arc<TensorValue>,
}

fn view<'py, T: Element>(
    array: &ndarray::ArrayD<T>,
    owner: &Bound<'py, ValueOwner>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = owner.py();
    if !array.is_standard_layout() {
        // Decoded values are C-ordered; should one not be, numpy gets a checked view.
        // SAFETY: as below: the buffer belongs to `owner`, the array's base.
        let arr = unsafe { PyArray::<T, _>::borrow_from_array(array, owner.clone().into_any()) };
        drop(arr.readwrite().make_nonwriteable());
        return Ok(arr.into_any());
    }
    let mut dims: Vec<npy_intp> = array.shape().iter().map(|&d| d as npy_intp).collect();
    // Created read-only (flags without NPY_ARRAY_WRITEABLE) rather than made read-only
    // afterwards through the numpy crate's borrow checking, which takes and releases two
    // entries of its process-wide borrow table: a third of the binding's cost per value.
    // SAFETY: `dims` describes the array's C-ordered buffer (null strides: numpy computes
    // the C-contiguous ones); the descriptor reference is stolen by the call; the buffer
    // belongs to the `TensorValue` inside `owner`, which is never mutated or moved (it sits
    // behind an `Arc`), and `owner` becomes the array's base, so the buffer outlives every
    // view of it.
    unsafe {
        let ptr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            T::get_dtype(py).into_dtype_ptr(),
            dims.len() as c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            array.as_ptr() as *mut c_void,
            0,
            std::ptr::null_mut(),
        );
        if ptr.is_null() {
            return Err(PyErr::fetch(py));
        }
        // Owns `ptr` from here: dropped (and the array freed) if setting the base fails.
        let arr = Bound::from_owned_ptr(py, ptr);
        let base = owner.clone().into_any().into_ptr();
        // Steals the reference to `base`, also on failure.
        if PY_ARRAY_API.PyArray_SetBaseObject(py, ptr as *mut npyffi::PyArrayObject, base) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
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
        TensorValue::Float16(a) => view(a, &owner)?,
        TensorValue::Float32(a) => view(a, &owner)?,
        TensorValue::Float64(a) => view(a, &owner)?,
        TensorValue::Int8(a) => view(a, &owner)?,
        TensorValue::Int16(a) => view(a, &owner)?,
        TensorValue::Int32(a) => view(a, &owner)?,
        TensorValue::Int64(a) => view(a, &owner)?,
        TensorValue::UInt8(a) => view(a, &owner)?,
        TensorValue::UInt16(a) => view(a, &owner)?,
        TensorValue::UInt32(a) => view(a, &owner)?,
        TensorValue::UInt64(a) => view(a, &owner)?,
        TensorValue::Bool(a) => view(a, &owner)?,
        TensorValue::Complex64(a) => view(a, &owner)?,
        TensorValue::Complex128(a) => view(a, &owner)?,
        TensorValue::Str(a) => {
            let items: Vec<&str> = a.iter().map(String::as_str).collect();
            let arr = py
                .import("numpy")?
                .call_method1("array", (PyList::new(py, items)?,))?;
            arr.call_method1("reshape", (a.shape().to_vec(),))?
        }
    })
}
