//! The binding's conversions between Python and Rust values: modes and step states, and
//! tensor values both ways (numpy arrays, and anything numpy can make one of, into a
//! `TensorValue`; decoded values into numpy arrays that view them).
//!
//! A decoded value comes out of the trial's cache as an `Arc<TensorValue>`; the numpy array
//! is a view of that very buffer (no copy after the decode), kept alive by a small owner
//! object set as the array's base. The view is read-only because the buffer is shared with
//! the cache and with other threads: `numpy.array(v)` gives a writable copy. A value saved
//! by the hook is copied once into a buffer the writer owns (see `hook.rs` for the large
//! arrays that are lent instead).

use crate::classes;
use crate::NativeError;
use numpy::npyffi::{self, npy_intp};
use numpy::{
    Element, PyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods, PY_ARRAY_API,
};
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyFloat, PyInt, PyList, PyString};
use smdebug_config::Mode;
use smdebug_exceptions::StepState;
use smdebug_record::TensorValue;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

// Modes and step states.

/// A mode argument: a `ModeKeys` member (ours or the original's: matched by name), a mode
/// name, or smdebug's integer value.
pub(crate) fn mode_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Mode> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Mode::Global);
    };
    let parsed = if let Ok(s) = obj.cast::<PyString>() {
        s.to_cow()?.parse::<Mode>().ok()
    } else if let Ok(name) = obj.getattr("name") {
        name.extract::<String>()
            .ok()
            .and_then(|n| n.parse::<Mode>().ok())
    } else {
        obj.extract::<i64>().ok().and_then(Mode::from_int)
    };
    parsed.ok_or_else(|| {
        NativeError::value(format!(
            "invalid mode {}: expected a ModeKeys member (TRAIN, EVAL, PREDICT, GLOBAL)",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
        .into_pyerr(obj.py())
    })
}

/// `ModeKeys[mode]`.
pub(crate) fn mode_to_py(py: Python<'_>, mode: Mode) -> PyResult<Bound<'_, PyAny>> {
    classes::get(py)?.mode_keys.bind(py).get_item(mode.name())
}

/// `StepState[state]`.
pub(crate) fn step_state_to_py(py: Python<'_>, state: StepState) -> PyResult<Bound<'_, PyAny>> {
    classes::get(py)?.step_state.bind(py).get_item(state.name())
}

// Python values into tensor values (the hook's saves).

/// A value as a numpy array: numpy arrays as they are, objects with `__array__` (torch,
/// jax, tensorflow on CPU, lists, Python numbers) through `numpy.asarray`, objects with only
/// `__dlpack__` through `numpy.from_dlpack`.
///
/// A scalar (a Python number, bool or str, or a numpy scalar) becomes an array of shape
/// `[1]`, as the original's `make_numpy_array` makes it (`np.array([x])`).
fn as_numpy<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = value.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let py = value.py();
    let np = py.import("numpy")?;
    let scalar = value.is_instance_of::<PyFloat>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyComplex>()
        || value.is_instance(&np.getattr("generic")?)?;
    let arr = if scalar {
        np.call_method1("array", (PyList::new(py, [value])?,))?
    } else if !value.hasattr("__array__")? && value.hasattr("__dlpack__")? {
        np.call_method1("from_dlpack", (value,))?
    } else {
        np.call_method1("asarray", (value,))?
    };
    Ok(arr.cast_into::<PyUntypedArray>()?)
}

/// The tensor value of a Python value (one copy; two for a byte-swapped array, which numpy
/// first turns into native order).
pub(crate) fn tensor_value(value: &Bound<'_, PyAny>) -> PyResult<TensorValue> {
    let mut arr = as_numpy(value)?;
    if arr.dtype().is_native_byteorder() == Some(false) {
        let native = arr.dtype().call_method1("newbyteorder", ("=",))?;
        arr = arr
            .call_method1("astype", (native,))?
            .cast_into::<PyUntypedArray>()?;
    }
    if arr.dtype().kind() == b'U' {
        // Text (the XGBoost hook's tree tables): a string tensor, as the original writes it.
        let items: Vec<String> = arr
            .call_method0("ravel")?
            .call_method0("tolist")?
            .extract()?;
        let shape = arr.shape().to_vec();
        let a = ndarray::ArrayD::from_shape_vec(shape, items)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        return Ok(TensorValue::from(a));
    }
    macro_rules! try_types {
        ($($t:ty),*) => {
            $(if let Some(v) = copy_typed::<$t>(&arr)? { return Ok(v); })*
        };
    }
    try_types!(
        f32,
        f64,
        half::f16,
        i64,
        i32,
        i16,
        i8,
        u8,
        u16,
        u32,
        u64,
        bool,
        num_complex::Complex32,
        num_complex::Complex64
    );
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "cannot save an array of dtype {}: expected a numeric, bool or str dtype",
        arr.dtype().str()?
    )))
}

/// Copies a typed numpy array into a tensor value owned by the writer.
fn copy_typed<T: Element + Clone>(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Option<TensorValue>>
where
    TensorValue: From<ndarray::ArrayD<T>>,
{
    let Ok(a) = arr.cast::<PyArrayDyn<T>>() else {
        return Ok(None);
    };
    // SAFETY: the view lives only for the copy, which runs with the GIL held and calls no
    // Python code, so nothing can resize or free the array meanwhile; a writer elsewhere
    // (another thread's Rust code holding a numpy `readwrite` borrow without the GIL) would
    // at worst make us copy values mid-update, as any copy in Python would. The checked
    // `try_readonly` costs about a microsecond per call in numpy's borrow table, a fifth of
    // a small save.
    let view = unsafe { a.as_array() };
    Ok(Some(TensorValue::from(view.to_owned())))
}

// Decoded tensor values into numpy arrays (the trial's values).

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
