//! `Collection`, on its own or as a handle of a hook's collection.
use super::args::*;
use super::types::*;
use super::wrapper::*;
use crate::classes;
use crate::hook::PyHook;
use crate::{ExceptionClass, NativeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PySet, PyString, PyType};
use smdebug_config::{Collection, ReductionConfig, SaveConfig};
use std::sync::Mutex;

impl Parent<Collection> for InHook {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        InHook {
            hook: self.hook.clone_ref(py),
            name: self.name.clone(),
        }
    }

    fn with_part<R>(
        self,
        py: Python<'_>,
        f: impl FnOnce(&mut Collection) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let InHook { hook, name } = self;
        let hook = hook.bind(py).call0()?;
        let hook = hook.cast::<PyHook>().map_err(|_| {
            NativeError::Other(
                ExceptionClass::SMDebugRuntimeError,
                format!("collection {name:?} belongs to a hook that no longer exists"),
            )
            .into_pyerr(py)
        })?;
        hook.borrow().with_collection(py, &name, f)
    }
}

/// A config a collection may hold, which a wrapper can be a view of.
trait CollectionPart: Sized {
    /// What it is, for the error when the collection no longer holds one.
    const WHAT: &'static str;
    /// The collection's own config of this kind, if it has one.
    fn of(c: &mut Collection) -> Option<&mut Self>;
}

impl CollectionPart for SaveConfig {
    const WHAT: &'static str = "save config";
    fn of(c: &mut Collection) -> Option<&mut Self> {
        c.save_config.as_mut()
    }
}

impl CollectionPart for ReductionConfig {
    const WHAT: &'static str = "reduction config";
    fn of(c: &mut Collection) -> Option<&mut Self> {
        c.reduction_config.as_mut()
    }
}

impl<T: CollectionPart> Parent<T> for Py<PyCollection> {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        Py::clone_ref(self, py)
    }

    fn with_part<R>(
        self,
        py: Python<'_>,
        f: impl FnOnce(&mut T) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        self.get().with(py, |c| {
            let name = c.name.clone();
            match T::of(c) {
                Some(part) => f(part),
                None => Err(value_error(format!(
                    "collection {name:?} has no {} any more",
                    T::WHAT
                ))),
            }
        })
    }
}

impl Wrapper for PyCollection {
    type Value = Collection;
    type Parent = InHook;

    fn place(&self) -> &Mutex<Place<Collection, InHook>> {
        &self.place
    }
}

impl PyCollection {
    /// Makes this object a handle of collection `name` of `hook` (whose value it no longer
    /// keeps).
    pub(crate) fn bind_to(&self, hook: &Bound<'_, PyHook>, name: String) -> PyResult<()> {
        let py = hook.py();
        let weak = WEAKREF.import(py, "weakref", "ref")?.call1((hook,))?;
        *lock(&self.place) = Place::Part(InHook {
            hook: weak.unbind(),
            name,
        });
        Ok(())
    }
}

/// A `smdebug_rs.core.collection.Collection` holding `c` (a trial's collections, a dry-run
/// hook's).
pub(crate) fn collection_to_py(py: Python<'_>, c: Collection) -> PyResult<Bound<'_, PyAny>> {
    let obj = classes::get(py)?
        .collection
        .bind(py)
        .call1((c.name.as_str(),))?;
    PyCollection::install(obj, Place::Own(c))
}

/// A `smdebug_rs.core.collection.Collection` that is a handle of collection `name` of
/// `hook`.
pub(crate) fn hook_collection_to_py<'py>(
    hook: &Bound<'py, PyHook>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let py = hook.py();
    let obj = classes::get(py)?.collection.bind(py).call1((name,))?;
    obj.cast::<PyCollection>()?
        .get()
        .bind_to(hook, name.to_owned())?;
    Ok(obj)
}

#[pymethods]
impl PyCollection {
    #[new]
    #[pyo3(signature = (name, include_regex=None, tensor_names=None, reduction_config=None, save_config=None, save_histogram=true))]
    fn new(
        name: String,
        include_regex: Option<&Bound<'_, PyAny>>,
        tensor_names: Option<&Bound<'_, PyAny>>,
        reduction_config: Option<&Bound<'_, PyAny>>,
        save_config: Option<&Bound<'_, PyAny>>,
        save_histogram: bool,
    ) -> PyResult<Self> {
        let mut c = Collection::new(name);
        if let Some(r) = given(include_regex) {
            let py = r.py();
            c.set_include_regex(strings_arg(r, "include_regex")?)
                .map_err(|e| config_error(e).into_pyerr(py))?;
        }
        if let Some(t) = given(tensor_names) {
            c.tensor_names = tensor_names_arg(t)?.into_iter().collect();
        }
        if let Some(r) = given(reduction_config) {
            c.reduction_config = Some(PyReductionConfig::from_py(r)?);
        }
        if let Some(s) = given(save_config) {
            c.save_config = Some(PySaveConfig::from_py(s)?);
        }
        c.save_histogram = save_histogram;
        Ok(PyCollection {
            place: Mutex::new(Place::Own(c)),
        })
    }

    /// The collection's name.
    #[getter]
    fn get_name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| Ok(c.name.clone()))
    }

    /// The include regexes (a copy; `smdebug_rs.core.collection.Collection` gives a live
    /// list).
    #[getter]
    fn get_include_regex(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |c| Ok(c.include_regex().to_vec()))
    }

    /// Replaces the include regexes; one that cannot be compiled is `SMDebugValueError`
    /// and changes nothing.
    #[setter]
    fn set_include_regex(&self, py: Python<'_>, x: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let patterns = match x.filter(|x| !x.is_none()) {
            Some(x) => strings_arg(x, "include_regex")?,
            None => Vec::new(),
        };
        self.with(py, |c| c.set_include_regex(patterns).map_err(config_error))
    }

    /// Names of tensors in the collection by name (a copy, as a set).
    #[getter]
    fn get_tensor_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PySet>> {
        let names: Vec<String> = self.with(py, |c| Ok(c.tensor_names.iter().cloned().collect()))?;
        PySet::new(py, names)
    }

    /// Replaces the tensor names: a list or a set (else `SMDebugTypeError`, as the
    /// original).
    #[setter]
    fn set_tensor_names(&self, py: Python<'_>, x: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let names = match x.filter(|x| !x.is_none()) {
            Some(x) => tensor_names_arg(x)?,
            None => Vec::new(),
        };
        self.with(py, |c| {
            c.tensor_names = names.into_iter().collect();
            Ok(())
        })
    }

    /// The collection's own reduction config (a view of it), or None.
    #[getter]
    fn get_reduction_config<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if !slf.get().with(py, |c| Ok(c.reduction_config.is_some()))? {
            return Ok(py.None().into_bound(py));
        }
        let obj = classes::get(py)?.reduction_config.bind(py).call0()?;
        PyReductionConfig::install(obj, Place::Part(slf.clone().unbind()))
    }

    /// Sets the collection's own reduction config (a copy), or None for the hook's.
    #[setter]
    fn set_reduction_config(&self, py: Python<'_>, x: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let r = x
            .filter(|x| !x.is_none())
            .map(PyReductionConfig::from_py)
            .transpose()?;
        self.with(py, |c| {
            c.reduction_config = r;
            Ok(())
        })
    }

    /// The collection's own save config (a view of it), or None.
    #[getter]
    fn get_save_config<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if !slf.get().with(py, |c| Ok(c.save_config.is_some()))? {
            return Ok(py.None().into_bound(py));
        }
        PySaveConfig::wrap(py, Place::Part(slf.clone().unbind()))
    }

    /// Sets the collection's own save config (a copy of a SaveConfig, or a dict
    /// `{mode: SaveConfigMode}`), or None for the hook's.
    #[setter]
    fn set_save_config(&self, py: Python<'_>, x: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let s = x
            .filter(|x| !x.is_none())
            .map(PySaveConfig::from_py)
            .transpose()?;
        self.with(py, |c| {
            c.save_config = s;
            Ok(())
        })
    }

    /// Whether TensorBoard histograms are written for its tensors.
    #[getter]
    fn get_save_histogram(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |c| Ok(c.save_histogram))
    }

    #[setter]
    fn set_save_histogram(&self, py: Python<'_>, x: bool) -> PyResult<()> {
        self.with(py, |c| {
            c.save_histogram = x;
            Ok(())
        })
    }

    /// Adds a regex or a list of them (`SMDebugTypeError` for anything else, as the
    /// original; `SMDebugValueError` for a regex that cannot be compiled).
    fn include(&self, py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<()> {
        let patterns: Vec<String> = if let Ok(s) = t.extract::<String>() {
            vec![s]
        } else if let Ok(l) = t.cast::<PyList>() {
            l.iter()
                .map(|x| x.extract::<String>())
                .collect::<PyResult<_>>()
                .map_err(|_| type_error("Can only include str or list").into_pyerr(py))?
        } else {
            return Err(type_error("Can only include str or list").into_pyerr(py));
        };
        self.with(py, |c| {
            let mut all = c.include_regex().to_vec();
            all.extend(patterns);
            c.set_include_regex(all).map_err(config_error)
        })
    }

    /// Adds a tensor by name.
    fn add_tensor_name(&self, py: Python<'_>, tname: String) -> PyResult<()> {
        self.with(py, |c| {
            c.add_tensor_name(tname);
            Ok(())
        })
    }

    /// Removes a tensor name (nothing if absent).
    fn remove_tensor_name(&self, py: Python<'_>, tname: &str) -> PyResult<()> {
        self.with(py, |c| {
            c.remove_tensor_name(tname);
            Ok(())
        })
    }

    /// Whether `tname` was added by name.
    fn has_tensor_name(&self, py: Python<'_>, tname: &str) -> PyResult<bool> {
        self.with(py, |c| Ok(c.has_tensor_name(tname)))
    }

    /// Whether `name` is in the collection, by name or by regex.
    fn matches(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.with(py, |c| c.contains(name).map_err(config_error))
    }

    /// The JSON object form, as the collections file holds it.
    fn to_json_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.json_dict(py, Collection::to_json_value)
    }

    /// `json.dumps(to_json_dict())`.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| Ok(c.to_json()))
    }

    /// A collection from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, json_str: &str) -> PyResult<Bound<'py, PyAny>> {
        Self::from_json_text(cls, json_str, Collection::from_json, |c| {
            vec![c.name.clone()]
        })
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.equals(py, other)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        PyString::new(py, &self.get_name(py)?).hash()
    }
}

/// Tensor names as the original's setter takes them: a list or a set (also a frozenset
/// or a live view of another collection's names).
fn tensor_names_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let py = obj.py();
    let abc = py.import("collections.abc")?;
    let ok = obj.is_instance_of::<PyList>() || obj.is_instance(&abc.getattr("Set")?)?;
    if !ok {
        return Err(type_error("tensor_names can only be list or set").into_pyerr(py));
    }
    strings_arg(obj, "tensor_names")
}
