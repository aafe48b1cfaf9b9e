//! What the four config wrappers share: where a wrapper's value lives ([`Place`]), the one
//! accessor that reaches it there ([`Wrapper::with`]), and the copy, JSON and equality
//! methods built on it.
use super::args::to_py;
use crate::NativeError;
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::types::PyType;
use pyo3::PyClass;
use smdebug_config::{ConfigError, PyValue};
use std::sync::{Mutex, MutexGuard};

/// Locks a wrapper's place; a poisoned lock still holds a whole value (every change is
/// one assignment), so it is used as it is.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a wrapper's value lives.
pub(crate) enum Place<T, P> {
    /// The wrapper's own value.
    Own(T),
    /// A part of another wrapper's value (`P` says which), reached through it.
    Part(P),
}

/// What a wrapper whose value is a part of another's keeps: a handle of that other wrapper
/// (and which part). The handle is cloned out of the lock, so that reaching the parent
/// never holds two wrappers' locks at once.
pub(crate) trait Parent<T>: Sized {
    /// Another reference to the same parent.
    fn clone_ref(&self, py: Python<'_>) -> Self;

    /// Runs `f` on the part of the parent's value this handle names (an error if the
    /// parent no longer has that part).
    fn with_part<R>(
        self,
        py: Python<'_>,
        f: impl FnOnce(&mut T) -> Result<R, NativeError>,
    ) -> PyResult<R>;
}

/// A config wrapper class: a frozen pyclass whose value lives in a [`Place`].
pub(crate) trait Wrapper: PyClass<Frozen = True> + Sync {
    /// The `smdebug_config` type wrapped.
    type Value: Clone + PartialEq;
    /// What a part keeps of its parent.
    type Parent: Parent<Self::Value>;

    /// Where the value lives.
    fn place(&self) -> &Mutex<Place<Self::Value, Self::Parent>>;

    /// Runs `f` on the value, wherever it lives. `f` runs with a lock held, so it must not
    /// call Python; its error becomes the Python exception once the lock is released.
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Self::Value) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let parent = {
            let mut g = lock(self.place());
            match &mut *g {
                Place::Own(v) => {
                    let r = f(v);
                    drop(g);
                    return r.map_err(|e| e.into_pyerr(py));
                }
                Place::Part(p) => p.clone_ref(py),
            }
        };
        parent.with_part(py, f)
    }

    /// A copy of the value.
    fn value(&self, py: Python<'_>) -> PyResult<Self::Value> {
        self.with(py, |v| Ok(v.clone()))
    }

    /// Puts `obj` (an instance of this class or of a subclass) in `place`; returns it.
    fn install<'py>(
        obj: Bound<'py, PyAny>,
        place: Place<Self::Value, Self::Parent>,
    ) -> PyResult<Bound<'py, PyAny>> {
        *lock(obj.cast::<Self>()?.get().place()) = place;
        Ok(obj)
    }

    /// `cls(*args)` holding the value `text` parses to (a config's `from_json`).
    fn from_json_text<'py>(
        cls: &Bound<'py, PyType>,
        text: &str,
        parse: fn(&str) -> Result<Self::Value, ConfigError>,
        args: impl FnOnce(&Self::Value) -> Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let v = parse(text).map_err(|e| super::args::config_error(e).into_pyerr(py))?;
        let obj = cls.call1(pyo3::types::PyTuple::new(py, args(&v))?)?;
        Self::install(obj, Place::Own(v))
    }

    /// The value's JSON object form (`to_json_dict`), as `form` gives it.
    fn json_dict<'py>(
        &self,
        py: Python<'py>,
        form: fn(&Self::Value) -> PyValue,
    ) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |v| Ok(form(v)))?)
    }

    /// `__eq__`: the other object is a wrapper of the same class with an equal value.
    fn equals(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<Self>() else {
            return Ok(false);
        };
        let theirs = o.get().value(py)?;
        self.with(py, |v| Ok(*v == theirs))
    }
}
