//! What the config wrappers' methods share: errors in the original's exception types and argument conversion.
use crate::{ExceptionClass, NativeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};
use smdebug_config::{ConfigError, PyValue};

/// `weakref.ref`, by which a hook's collection refers to its hook.
pub(super) static WEAKREF: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub(super) fn value_error(msg: impl Into<String>) -> NativeError {
    NativeError::Other(ExceptionClass::SMDebugValueError, msg.into())
}

pub(super) fn type_error(msg: impl Into<String>) -> NativeError {
    NativeError::Other(ExceptionClass::SMDebugTypeError, msg.into())
}

pub(super) fn config_error(e: ConfigError) -> NativeError {
    value_error(e.to_string())
}

/// An argument that was given and is not None.
pub(super) fn given<'a, 'py>(x: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    x.filter(|x| !x.is_none())
}

/// Python's `int(x)`, as the original converts its step arguments.
pub(super) fn py_int(x: &Bound<'_, PyAny>) -> PyResult<i64> {
    x.py()
        .get_type::<pyo3::types::PyInt>()
        .call1((x,))?
        .extract()
}

/// Python's `json.dumps(obj)` read back as a [`PyValue`]: dicts in the JSON form of a
/// config, as `from_dict` takes them.
pub(super) fn json_value(obj: &Bound<'_, PyAny>) -> PyResult<PyValue> {
    let py = obj.py();
    let text: String = py
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()?;
    smdebug_config::pyjson::parse(&text).map_err(|e| value_error(e.to_string()).into_pyerr(py))
}

/// A [`PyValue`] as the Python object `json.loads` would give.
pub(super) fn to_py<'py>(py: Python<'py>, v: &PyValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        PyValue::Null => py.None().into_bound(py),
        PyValue::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        PyValue::Int(i) => (*i).into_pyobject(py)?.into_any(),
        PyValue::BigInt(text) => py.get_type::<pyo3::types::PyInt>().call1((text,))?,
        PyValue::Float(f) => (*f).into_pyobject(py)?.into_any(),
        PyValue::Str(s) => PyString::new(py, s).into_any(),
        PyValue::Array(items) => {
            let l = PyList::empty(py);
            for it in items {
                l.append(to_py(py, it)?)?;
            }
            l.into_any()
        }
        PyValue::Object(fields) => {
            let d = PyDict::new(py);
            for (k, it) in fields {
                d.set_item(k, to_py(py, it)?)?;
            }
            d.into_any()
        }
    })
}

/// A list of ints (`bool` counts, as in Python), else the original's `SMDebugValueError`.
pub(super) fn save_steps_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    let bad =
        || value_error(format!("save_steps={obj} must be type(list(int))")).into_pyerr(obj.py());
    let list = obj.cast::<PyList>().map_err(|_| bad())?;
    list.iter()
        .map(|x| {
            if x.is_instance_of::<pyo3::types::PyInt>() {
                x.extract::<i64>().map_err(|_| bad())
            } else {
                Err(bad())
            }
        })
        .collect()
}

/// Strings from a str (one) or an iterable of them.
pub(super) fn strings_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if let Ok(s) = obj.extract::<String>() {
        return Ok(vec![s]);
    }
    let bad = || type_error(format!("{what}={obj} must be a list of str")).into_pyerr(obj.py());
    obj.try_iter()
        .map_err(|_| bad())?
        .map(|x| x?.extract::<String>().map_err(|_| bad()))
        .collect()
}

// -- SaveConfigMode ---------------------------------------------------------------------
