//! The configuration objects of `smdebug_rs` — `SaveConfigMode`, `SaveConfig`,
//! `ReductionConfig`, `Collection` — as wrappers of `smdebug_config`'s types: one config
//! model, in Rust. The Python classes of the same names (`smdebug_rs.core.save_config`,
//! `…reduction_config`, `…collection`) subclass these for the original's module paths,
//! its `from_dict`/`parse` helpers, its reprs, and live views of list-valued attributes.
//!
//! A wrapper's value lives in one [`Place`]: its own, or a part of another wrapper's
//! value — a collection's save config, one mode of a save config, a hook's collection —
//! read and written through that wrapper on every access, so that
//! `hook.get_collection("c").save_config.mode_save_configs[TRAIN].save_interval = 5`
//! changes the hook's collection as it changes the original's shared objects. A wrapper
//! assigned to an attribute or given to a constructor is copied in: later changes of that
//! wrapper do not reach the object it was given to (the original shares it). A collection
//! given to a hook (`Hook.add_collection`, `Hook(collections=...)`) is the exception: it
//! becomes a handle of the hook's collection.

use crate::hook::PyHook;
use crate::trial::{mode_arg, mode_to_py};
use crate::NativeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PySet, PyString, PyType};
use smdebug_config::{
    Collection, ConfigError, Mode, PyValue, Reduction, ReductionConfig, SaveConfig, SaveConfigMode,
    ShouldSaveError,
};
use std::sync::{Mutex, MutexGuard};

static SAVE_CONFIG_MODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SAVE_CONFIG: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static REDUCTION_CONFIG: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static COLLECTION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static WEAKREF: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python class `module.name`, looked up once: the wrappers made here are instances of
/// the Python subclasses, so that they have the original's module path and helpers.
fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let c = cell.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import(module)?.getattr(name)?.unbind())
    })?;
    Ok(c.bind(py).clone())
}

fn value_error(msg: impl Into<String>) -> NativeError {
    NativeError::Other("SMDebugValueError", msg.into())
}

fn type_error(msg: impl Into<String>) -> NativeError {
    NativeError::Other("SMDebugTypeError", msg.into())
}

fn config_error(e: ConfigError) -> NativeError {
    value_error(e.to_string())
}

/// Locks a wrapper's place; a poisoned lock still holds a whole value (every change is
/// one assignment), so it is used as it is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a wrapper's value lives.
enum Place<T, P> {
    /// The wrapper's own value.
    Own(T),
    /// A part of another wrapper's value (`P` says which), reached through it.
    Part(P),
}

/// An argument that was given and is not None.
fn given<'a, 'py>(x: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    x.filter(|x| !x.is_none())
}

/// Python's `int(x)`, as the original converts its step arguments.
fn py_int(x: &Bound<'_, PyAny>) -> PyResult<i64> {
    x.py()
        .get_type::<pyo3::types::PyInt>()
        .call1((x,))?
        .extract()
}

/// Python's `json.dumps(obj)` read back as a [`PyValue`]: dicts in the JSON form of a
/// config, as `from_dict` takes them.
fn json_value(obj: &Bound<'_, PyAny>) -> PyResult<PyValue> {
    let py = obj.py();
    let text: String = py
        .import("json")?
        .call_method1("dumps", (obj,))?
        .extract()?;
    smdebug_config::pyjson::parse(&text).map_err(|e| value_error(e.to_string()).into_pyerr(py))
}

/// A [`PyValue`] as the Python object `json.loads` would give.
fn to_py<'py>(py: Python<'py>, v: &PyValue) -> PyResult<Bound<'py, PyAny>> {
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
fn save_steps_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
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
fn strings_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
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

/// `SaveConfigMode(save_interval=None, start_step=None, end_step=None, save_steps=None)`:
/// the save rule of one mode (`smdebug_config::SaveConfigMode`). A step is saved when it is
/// in `save_steps`, or when `start_step <= step < end_step` and `step % save_interval == 0`.
#[pyclass(
    frozen,
    subclass,
    module = "smdebug_rs._native",
    name = "SaveConfigMode"
)]
pub(crate) struct PySaveConfigMode {
    place: Mutex<Place<SaveConfigMode, (Py<PySaveConfig>, Mode)>>,
}

impl PySaveConfigMode {
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut SaveConfigMode) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let (parent, mode) = {
            let mut g = lock(&self.place);
            match &mut *g {
                Place::Own(v) => {
                    let r = f(v);
                    // The error becomes a Python exception without the lock held.
                    drop(g);
                    return r.map_err(|e| e.into_pyerr(py));
                }
                Place::Part((p, m)) => (p.clone_ref(py), *m),
            }
        };
        parent.get().with(py, |sc| match sc.get_mut(mode) {
            Some(m) => f(m),
            None => Err(value_error(format!(
                "the save config has no {} config any more",
                mode.name()
            ))),
        })
    }

    /// A copy of the value.
    pub(crate) fn value(&self, py: Python<'_>) -> PyResult<SaveConfigMode> {
        self.with(py, |v| Ok(v.clone()))
    }

    /// A `smdebug_rs.core.save_config.SaveConfigMode` in `place`.
    fn wrap(
        py: Python<'_>,
        place: Place<SaveConfigMode, (Py<PySaveConfig>, Mode)>,
    ) -> PyResult<Bound<'_, PyAny>> {
        let obj = class(
            py,
            &SAVE_CONFIG_MODE,
            "smdebug_rs.core.save_config",
            "SaveConfigMode",
        )?
        .call0()?;
        *lock(&obj.cast::<PySaveConfigMode>()?.get().place) = place;
        Ok(obj)
    }
}

#[pymethods]
impl PySaveConfigMode {
    /// smdebug's default `save_interval`.
    #[classattr]
    #[allow(non_snake_case)]
    fn DEFAULT_SAVE_INTERVAL() -> i64 {
        smdebug_config::DEFAULT_SAVE_INTERVAL
    }

    /// Unset arguments take smdebug's defaults (every 500 steps from 0, no end, no listed
    /// steps); numbers go through `int()`; `save_steps` must be a list of ints
    /// (`SMDebugValueError`).
    #[new]
    #[pyo3(signature = (save_interval=None, start_step=None, end_step=None, save_steps=None))]
    fn new(
        save_interval: Option<&Bound<'_, PyAny>>,
        start_step: Option<&Bound<'_, PyAny>>,
        end_step: Option<&Bound<'_, PyAny>>,
        save_steps: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(PySaveConfigMode {
            place: Mutex::new(Place::Own(mode_config(
                save_interval,
                start_step,
                end_step,
                save_steps,
            )?)),
        })
    }

    /// Save every `save_interval` steps.
    #[getter]
    fn get_save_interval(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |v| Ok(v.save_interval))
    }

    #[setter]
    fn set_save_interval(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = py_int(x)?;
        self.with(py, |v| {
            v.save_interval = x;
            Ok(())
        })
    }

    /// First step the interval rule may save.
    #[getter]
    fn get_start_step(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |v| Ok(v.start_step))
    }

    #[setter]
    fn set_start_step(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = py_int(x)?;
        self.with(py, |v| {
            v.start_step = x;
            Ok(())
        })
    }

    /// First step the interval rule no longer saves (None: no end).
    #[getter]
    fn get_end_step(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |v| Ok(v.end_step))
    }

    #[setter]
    fn set_end_step(&self, py: Python<'_>, x: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let x = x.filter(|x| !x.is_none()).map(py_int).transpose()?;
        self.with(py, |v| {
            v.end_step = x;
            Ok(())
        })
    }

    /// Steps saved in any case (a copy; `smdebug_rs.core.save_config.SaveConfigMode` gives a
    /// live list).
    #[getter]
    fn get_save_steps(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        self.with(py, |v| Ok(v.save_steps.clone()))
    }

    #[setter]
    fn set_save_steps(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = save_steps_arg(x)?;
        self.with(py, |v| {
            v.save_steps = x;
            Ok(())
        })
    }

    /// Whether step `step_num` of this mode is saved (`ZeroDivisionError` for interval 0,
    /// as in Python).
    fn should_save_step(&self, py: Python<'_>, step_num: i64) -> PyResult<bool> {
        self.with(py, |v| v.should_save(step_num).map_err(should_save_error))
    }

    /// The JSON object form (`save_interval`, `save_steps`, `start_step`, `end_step`).
    fn to_json_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |v| Ok(v.to_json_value()))?)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PySaveConfigMode>() else {
            return Ok(false);
        };
        let theirs = o.get().value(py)?;
        self.with(py, |v| Ok(*v == theirs))
    }
}

fn mode_config(
    save_interval: Option<&Bound<'_, PyAny>>,
    start_step: Option<&Bound<'_, PyAny>>,
    end_step: Option<&Bound<'_, PyAny>>,
    save_steps: Option<&Bound<'_, PyAny>>,
) -> PyResult<SaveConfigMode> {
    let mut c = SaveConfigMode::default();
    if let Some(x) = given(save_interval) {
        c.save_interval = py_int(x)?;
    }
    if let Some(x) = given(start_step) {
        c.start_step = py_int(x)?;
    }
    if let Some(x) = given(end_step) {
        c.end_step = Some(py_int(x)?);
    }
    if let Some(x) = given(save_steps) {
        c.save_steps = save_steps_arg(x)?;
    }
    Ok(c)
}

fn should_save_error(e: ShouldSaveError) -> NativeError {
    match e {
        ShouldSaveError::ZeroInterval(_) => {
            NativeError::Other("ZeroDivisionError", "integer modulo by zero".into())
        }
        other => value_error(other.to_string()),
    }
}

// -- SaveConfig -------------------------------------------------------------------------

/// `SaveConfig(mode_save_configs=None, save_interval=None, start_step=None, end_step=None,
/// save_steps=None)`: the save rules of the four modes (`smdebug_config::SaveConfig`):
/// the same rule for every mode, or `mode_save_configs={mode: SaveConfigMode}` (modes left
/// out take the hook's).
#[pyclass(frozen, subclass, module = "smdebug_rs._native", name = "SaveConfig")]
pub(crate) struct PySaveConfig {
    place: Mutex<Place<SaveConfig, Py<PyCollection>>>,
}

impl PySaveConfig {
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut SaveConfig) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let parent = {
            let mut g = lock(&self.place);
            match &mut *g {
                Place::Own(v) => {
                    let r = f(v);
                    // The error becomes a Python exception without the lock held.
                    drop(g);
                    return r.map_err(|e| e.into_pyerr(py));
                }
                Place::Part(p) => p.clone_ref(py),
            }
        };
        parent.get().with(py, |c| match c.save_config.as_mut() {
            Some(sc) => f(sc),
            None => Err(value_error(format!(
                "collection {:?} has no save config any more",
                c.name
            ))),
        })
    }

    /// A copy of the value.
    pub(crate) fn value(&self, py: Python<'_>) -> PyResult<SaveConfig> {
        self.with(py, |v| Ok(v.clone()))
    }

    /// A `smdebug_rs.core.save_config.SaveConfig` in `place`.
    fn wrap(
        py: Python<'_>,
        place: Place<SaveConfig, Py<PyCollection>>,
    ) -> PyResult<Bound<'_, PyAny>> {
        let obj = class(
            py,
            &SAVE_CONFIG,
            "smdebug_rs.core.save_config",
            "SaveConfig",
        )?
        .call0()?;
        *lock(&obj.cast::<PySaveConfig>()?.get().place) = place;
        Ok(obj)
    }

    /// A save config from a Python value: a SaveConfig, or a dict of the constructor's
    /// `mode_save_configs` or of the JSON form (the original's collection setter takes both).
    pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<SaveConfig> {
        let py = obj.py();
        if let Ok(s) = obj.cast::<PySaveConfig>() {
            return s.get().value(py);
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            let json_form = d.values().iter().any(|v| v.is_instance_of::<PyDict>());
            if json_form {
                return SaveConfig::from_json_value(&json_value(obj)?, "save_config")
                    .map_err(|e| config_error(e).into_pyerr(py));
            }
            return mode_configs(d);
        }
        Err(type_error(format!(
            "save_config={obj} must be of type SaveConfig or type Dict[ModeKeys, SaveConfigMode]"
        ))
        .into_pyerr(py))
    }
}

/// `mode_save_configs` as the constructor takes it.
fn mode_configs(d: &Bound<'_, PyDict>) -> PyResult<SaveConfig> {
    let py = d.py();
    let mut modes = Vec::with_capacity(4);
    for (k, v) in d.iter() {
        let bad = || {
            value_error(format!(
                "Each key,value in mode_save_configs={d} must be of type ModeKey,SaveConfigMode"
            ))
            .into_pyerr(py)
        };
        let mode = mode_arg(Some(&k)).map_err(|_| bad())?;
        let config = if v.is_none() {
            None
        } else {
            Some(
                v.cast::<PySaveConfigMode>()
                    .map_err(|_| bad())?
                    .get()
                    .value(py)?,
            )
        };
        modes.push((mode, config));
    }
    Ok(SaveConfig::from_modes(modes))
}

#[pymethods]
impl PySaveConfig {
    /// Without `mode_save_configs`, every mode gets
    /// `SaveConfigMode(save_interval, start_step, end_step, save_steps)`.
    #[new]
    #[pyo3(signature = (mode_save_configs=None, save_interval=None, start_step=None, end_step=None, save_steps=None))]
    fn new(
        mode_save_configs: Option<&Bound<'_, PyAny>>,
        save_interval: Option<&Bound<'_, PyAny>>,
        start_step: Option<&Bound<'_, PyAny>>,
        end_step: Option<&Bound<'_, PyAny>>,
        save_steps: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let value = match mode_save_configs.filter(|m| !m.is_none()) {
            None => SaveConfig::new(mode_config(
                save_interval,
                start_step,
                end_step,
                save_steps,
            )?),
            Some(m) => {
                let d = m.cast::<PyDict>().map_err(|_| {
                    value_error(format!("mode_save_configs={m} must be a dict")).into_pyerr(m.py())
                })?;
                mode_configs(d)?
            }
        };
        Ok(PySaveConfig {
            place: Mutex::new(Place::Own(value)),
        })
    }

    /// `{ModeKeys: SaveConfigMode or None}`, each config a view of this one's.
    #[getter]
    fn get_mode_save_configs<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let configured: Vec<(Mode, bool)> = slf.get().with(py, |v| {
            Ok(Mode::ALL.iter().map(|&m| (m, v.get(m).is_some())).collect())
        })?;
        let d = PyDict::new(py);
        for (m, has) in configured {
            let c = if has {
                PySaveConfigMode::wrap(py, Place::Part((slf.clone().unbind(), m)))?
            } else {
                py.None().into_bound(py)
            };
            d.set_item(mode_to_py(py, m)?, c)?;
        }
        Ok(d)
    }

    #[setter]
    fn set_mode_save_configs(&self, py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<()> {
        let value = mode_configs(d)?;
        self.with(py, |v| {
            *v = value;
            Ok(())
        })
    }

    /// The config of `mode` (a view of this one's), or None if it has none.
    fn get_save_config<'py>(
        slf: &Bound<'py, Self>,
        mode: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let m = mode_arg(Some(mode))?;
        if slf.get().with(py, |v| Ok(v.get(m).is_none()))? {
            return Ok(py.None().into_bound(py));
        }
        PySaveConfigMode::wrap(py, Place::Part((slf.clone().unbind(), m)))
    }

    /// Sets the config of `mode` (a copy of `save_config_mode`).
    fn set_save_config(
        &self,
        py: Python<'_>,
        mode: &Bound<'_, PyAny>,
        save_config_mode: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let m = mode_arg(Some(mode))?;
        let c = save_config_mode.cast::<PySaveConfigMode>().map_err(|_| {
            value_error(format!(
                "save_config_mode={save_config_mode} must be type SaveConfigMode"
            ))
            .into_pyerr(py)
        })?;
        let c = c.get().value(py)?;
        self.with(py, |v| {
            v.set(m, Some(c));
            Ok(())
        })
    }

    /// Whether step `step_num` of `mode` is saved (`SMDebugValueError` for a mode without a
    /// config, as the original's `get_save_config`).
    fn should_save_step(
        &self,
        py: Python<'_>,
        mode: &Bound<'_, PyAny>,
        step_num: i64,
    ) -> PyResult<bool> {
        let m = mode_arg(Some(mode))?;
        self.with(py, |v| {
            v.should_save(m, step_num).map_err(should_save_error)
        })
    }

    /// Fills the modes without a config from `default_save_config` (or smdebug's default).
    fn merge_default_save_config(
        &self,
        py: Python<'_>,
        default_save_config: &Bound<'_, PySaveConfig>,
    ) -> PyResult<()> {
        let d = default_save_config.get().value(py)?;
        self.with(py, |v| {
            v.merge_default(&d);
            Ok(())
        })
    }

    /// The JSON object form: mode names to mode configs (or None).
    fn to_json_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |v| Ok(v.to_json_value()))?)
    }

    /// `json.dumps(to_json_dict())`.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |v| Ok(v.to_json()))
    }

    /// A config from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let v = SaveConfig::from_json(text).map_err(|e| config_error(e).into_pyerr(py))?;
        let obj = cls.call0()?;
        *lock(&obj.cast::<PySaveConfig>()?.get().place) = Place::Own(v);
        Ok(obj)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PySaveConfig>() else {
            return Ok(false);
        };
        let theirs = o.get().value(py)?;
        self.with(py, |v| Ok(*v == theirs))
    }
}

// -- ReductionConfig --------------------------------------------------------------------

/// `ReductionConfig(reductions=None, abs_reductions=None, norms=None, abs_norms=None,
/// save_raw_tensor=False, save_shape=False)`: which reductions of a tensor are saved
/// (`smdebug_config::ReductionConfig`). Names outside min, max, mean, std, variance, sum,
/// prod (reductions) and l1, l2 (norms) are `SMDebugValueError`, as in the original.
#[pyclass(
    frozen,
    subclass,
    module = "smdebug_rs._native",
    name = "ReductionConfig"
)]
pub(crate) struct PyReductionConfig {
    place: Mutex<Place<ReductionConfig, Py<PyCollection>>>,
}

/// The four name lists of a reduction config.
#[derive(Clone, Copy)]
enum List {
    Reductions,
    AbsReductions,
    Norms,
    AbsNorms,
}

impl List {
    fn of(self, c: &mut ReductionConfig) -> &mut Vec<Reduction> {
        match self {
            List::Reductions => &mut c.reductions,
            List::AbsReductions => &mut c.abs_reductions,
            List::Norms => &mut c.norms,
            List::AbsNorms => &mut c.abs_norms,
        }
    }

    fn field(self) -> &'static str {
        match self {
            List::Reductions => "reductions",
            List::AbsReductions => "abs_reductions",
            List::Norms => "norms",
            List::AbsNorms => "abs_norms",
        }
    }

    fn allowed(self) -> &'static [Reduction] {
        match self {
            List::Reductions | List::AbsReductions => &ReductionConfig::ALLOWED_REDUCTIONS,
            List::Norms | List::AbsNorms => &ReductionConfig::ALLOWED_NORMS,
        }
    }

    /// Names as this list takes them, else the original's `SMDebugValueError` naming the
    /// list and what it allows.
    fn parse(self, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Reduction>> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(Vec::new());
        };
        let allowed = self.allowed();
        let names = strings_arg(obj, self.field())?;
        names
            .iter()
            .map(|n| {
                n.parse::<Reduction>()
                    .ok()
                    .filter(|r| allowed.contains(r))
                    .ok_or_else(|| {
                        let all: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
                        value_error(format!(
                            "{} can only be one of {} (got {n:?})",
                            self.field(),
                            all.join(",")
                        ))
                        .into_pyerr(obj.py())
                    })
            })
            .collect()
    }
}

fn flag_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return obj.extract();
    }
    Err(value_error(format!("{name}={obj} must be a boolean")).into_pyerr(obj.py()))
}

impl PyReductionConfig {
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ReductionConfig) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let parent = {
            let mut g = lock(&self.place);
            match &mut *g {
                Place::Own(v) => {
                    let r = f(v);
                    // The error becomes a Python exception without the lock held.
                    drop(g);
                    return r.map_err(|e| e.into_pyerr(py));
                }
                Place::Part(p) => p.clone_ref(py),
            }
        };
        parent
            .get()
            .with(py, |c| match c.reduction_config.as_mut() {
                Some(r) => f(r),
                None => Err(value_error(format!(
                    "collection {:?} has no reduction config any more",
                    c.name
                ))),
            })
    }

    /// A copy of the value.
    pub(crate) fn value(&self, py: Python<'_>) -> PyResult<ReductionConfig> {
        self.with(py, |v| Ok(v.clone()))
    }

    /// A reduction config from a Python value: a ReductionConfig or its JSON form (a dict).
    pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<ReductionConfig> {
        let py = obj.py();
        if let Ok(r) = obj.cast::<PyReductionConfig>() {
            return r.get().value(py);
        }
        if obj.is_instance_of::<PyDict>() {
            return ReductionConfig::from_json_value(&json_value(obj)?, "reduction_config")
                .map_err(|e| config_error(e).into_pyerr(py));
        }
        Err(type_error(format!(
            "reduction_config={obj} must be of type ReductionConfig"
        ))
        .into_pyerr(py))
    }

    fn get_list(&self, py: Python<'_>, list: List) -> PyResult<Vec<&'static str>> {
        self.with(py, |v| Ok(list.of(v).iter().map(|r| r.name()).collect()))
    }

    fn set_list(&self, py: Python<'_>, list: List, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = list.parse(Some(x))?;
        self.with(py, |v| {
            *list.of(v) = x;
            Ok(())
        })
    }
}

#[pymethods]
impl PyReductionConfig {
    /// The names `reductions` and `abs_reductions` take.
    #[classattr]
    #[allow(non_snake_case)]
    fn ALLOWED_REDUCTIONS() -> Vec<&'static str> {
        ReductionConfig::ALLOWED_REDUCTIONS
            .iter()
            .map(|r| r.name())
            .collect()
    }

    /// The names `norms` and `abs_norms` take.
    #[classattr]
    #[allow(non_snake_case)]
    fn ALLOWED_NORMS() -> Vec<&'static str> {
        ReductionConfig::ALLOWED_NORMS
            .iter()
            .map(|r| r.name())
            .collect()
    }

    #[new]
    #[pyo3(signature = (reductions=None, abs_reductions=None, norms=None, abs_norms=None, save_raw_tensor=None, save_shape=None))]
    fn new(
        reductions: Option<&Bound<'_, PyAny>>,
        abs_reductions: Option<&Bound<'_, PyAny>>,
        norms: Option<&Bound<'_, PyAny>>,
        abs_norms: Option<&Bound<'_, PyAny>>,
        save_raw_tensor: Option<&Bound<'_, PyAny>>,
        save_shape: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let value = ReductionConfig {
            reductions: List::Reductions.parse(reductions)?,
            abs_reductions: List::AbsReductions.parse(abs_reductions)?,
            norms: List::Norms.parse(norms)?,
            abs_norms: List::AbsNorms.parse(abs_norms)?,
            save_raw_tensor: save_raw_tensor
                .map(|x| flag_arg(x, "save_raw_tensor"))
                .transpose()?
                .unwrap_or(false),
            save_shape: save_shape
                .map(|x| flag_arg(x, "save_shape"))
                .transpose()?
                .unwrap_or(false),
            ..ReductionConfig::default()
        };
        Ok(PyReductionConfig {
            place: Mutex::new(Place::Own(value)),
        })
    }

    /// Reductions of the tensor, by name.
    #[getter]
    fn get_reductions(&self, py: Python<'_>) -> PyResult<Vec<&'static str>> {
        self.get_list(py, List::Reductions)
    }

    #[setter]
    fn set_reductions(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_list(py, List::Reductions, x)
    }

    /// Reductions of the absolute value, by name.
    #[getter]
    fn get_abs_reductions(&self, py: Python<'_>) -> PyResult<Vec<&'static str>> {
        self.get_list(py, List::AbsReductions)
    }

    #[setter]
    fn set_abs_reductions(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_list(py, List::AbsReductions, x)
    }

    /// Norms of the tensor (l1, l2).
    #[getter]
    fn get_norms(&self, py: Python<'_>) -> PyResult<Vec<&'static str>> {
        self.get_list(py, List::Norms)
    }

    #[setter]
    fn set_norms(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_list(py, List::Norms, x)
    }

    /// Norms of the absolute value (l1, l2).
    #[getter]
    fn get_abs_norms(&self, py: Python<'_>) -> PyResult<Vec<&'static str>> {
        self.get_list(py, List::AbsNorms)
    }

    #[setter]
    fn set_abs_norms(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_list(py, List::AbsNorms, x)
    }

    /// Whether the tensor itself is saved too.
    #[getter]
    fn get_save_raw_tensor(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |v| Ok(v.save_raw_tensor))
    }

    #[setter]
    fn set_save_raw_tensor(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = flag_arg(x, "save_raw_tensor")?;
        self.with(py, |v| {
            v.save_raw_tensor = x;
            Ok(())
        })
    }

    /// Whether the tensor's shape is saved.
    #[getter]
    fn get_save_shape(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |v| Ok(v.save_shape))
    }

    #[setter]
    fn set_save_shape(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = flag_arg(x, "save_shape")?;
        self.with(py, |v| {
            v.save_shape = x;
            Ok(())
        })
    }

    /// The JSON object form, as smdebug writes it (one comma-separated string).
    fn to_json_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |v| Ok(v.to_json_value()))?)
    }

    /// `json.dumps(to_json_dict())`.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |v| Ok(v.to_json()))
    }

    /// A config from its JSON object form (None stays None).
    #[classmethod]
    fn from_dict<'py>(
        cls: &Bound<'py, PyType>,
        params: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        if params.is_none() {
            return Ok(py.None().into_bound(py));
        }
        if !params.is_instance_of::<PyDict>() {
            return Err(value_error(format!("params={params} must be dict")).into_pyerr(py));
        }
        let v = ReductionConfig::from_json_value(&json_value(params)?, "reduction_config")
            .map_err(|e| config_error(e).into_pyerr(py))?;
        let obj = cls.call0()?;
        *lock(&obj.cast::<PyReductionConfig>()?.get().place) = Place::Own(v);
        Ok(obj)
    }

    /// A config from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let v = ReductionConfig::from_json(text).map_err(|e| config_error(e).into_pyerr(py))?;
        let obj = cls.call0()?;
        *lock(&obj.cast::<PyReductionConfig>()?.get().place) = Place::Own(v);
        Ok(obj)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PyReductionConfig>() else {
            return Ok(false);
        };
        let theirs = o.get().value(py)?;
        self.with(py, |v| Ok(*v == theirs))
    }
}

// -- Collection -------------------------------------------------------------------------

/// A collection held by a hook: the hook (weakly, so that the hook's own cache of
/// collection objects keeps no cycle) and the collection's name.
struct InHook {
    hook: Py<PyAny>,
    name: String,
}

/// `Collection(name, include_regex=None, tensor_names=None, reduction_config=None,
/// save_config=None, save_histogram=True)`: a named group of tensors, by regex
/// (`re.search`) and by name, with its own configs (`smdebug_config::Collection`). The
/// objects `Hook.get_collection` returns are handles of the hook's collection: what is
/// changed through them is what the hook prepares at its first step.
#[pyclass(frozen, subclass, module = "smdebug_rs._native", name = "Collection")]
pub(crate) struct PyCollection {
    place: Mutex<Place<Collection, InHook>>,
}

impl PyCollection {
    /// Runs `f` on the collection, wherever it lives.
    pub(crate) fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Collection) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let (hook, name) = {
            let mut g = lock(&self.place);
            match &mut *g {
                Place::Own(v) => {
                    let r = f(v);
                    // The error becomes a Python exception without the lock held.
                    drop(g);
                    return r.map_err(|e| e.into_pyerr(py));
                }
                Place::Part(h) => (h.hook.clone_ref(py), h.name.clone()),
            }
        };
        let hook = hook.bind(py).call0()?;
        let hook = hook.cast::<PyHook>().map_err(|_| {
            NativeError::Other(
                "SMDebugRuntimeError",
                format!("collection {name:?} belongs to a hook that no longer exists"),
            )
            .into_pyerr(py)
        })?;
        hook.borrow().with_collection(py, &name, f)
    }

    /// A copy of the value.
    pub(crate) fn value(&self, py: Python<'_>) -> PyResult<Collection> {
        self.with(py, |v| Ok(v.clone()))
    }

    /// Makes this object a handle of collection `name` of `hook` (whose value it no longer
    /// keeps).
    pub(crate) fn bind_to(&self, hook: &Bound<'_, PyHook>, name: String) -> PyResult<()> {
        let py = hook.py();
        let weak = class(py, &WEAKREF, "weakref", "ref")?.call1((hook,))?;
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
    let obj = class(py, &COLLECTION, "smdebug_rs.core.collection", "Collection")?
        .call1((c.name.as_str(),))?;
    *lock(&obj.cast::<PyCollection>()?.get().place) = Place::Own(c);
    Ok(obj)
}

/// A `smdebug_rs.core.collection.Collection` that is a handle of collection `name` of
/// `hook`.
pub(crate) fn hook_collection_to_py<'py>(
    hook: &Bound<'py, PyHook>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let py = hook.py();
    let obj = class(py, &COLLECTION, "smdebug_rs.core.collection", "Collection")?.call1((name,))?;
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
        let obj = class(
            py,
            &REDUCTION_CONFIG,
            "smdebug_rs.core.reduction_config",
            "ReductionConfig",
        )?
        .call0()?;
        *lock(&obj.cast::<PyReductionConfig>()?.get().place) = Place::Part(slf.clone().unbind());
        Ok(obj)
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
    fn add_tensor_name(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.with(py, |c| {
            c.add_tensor_name(name);
            Ok(())
        })
    }

    /// Removes a tensor name (nothing if absent).
    fn remove_tensor_name(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.with(py, |c| {
            c.remove_tensor_name(name);
            Ok(())
        })
    }

    /// Whether `name` was added by name.
    fn has_tensor_name(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.with(py, |c| Ok(c.has_tensor_name(name)))
    }

    /// Whether `name` is in the collection, by name or by regex.
    fn matches(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.with(py, |c| c.contains(name).map_err(config_error))
    }

    /// The JSON object form, as the collections file holds it.
    fn to_json_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |c| Ok(c.to_json_value()))?)
    }

    /// `json.dumps(to_json_dict())`.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| Ok(c.to_json()))
    }

    /// A collection from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, text: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let c = Collection::from_json(text).map_err(|e| config_error(e).into_pyerr(py))?;
        let obj = cls.call1((c.name.as_str(),))?;
        *lock(&obj.cast::<PyCollection>()?.get().place) = Place::Own(c);
        Ok(obj)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PyCollection>() else {
            return Ok(false);
        };
        let theirs = o.get().value(py)?;
        self.with(py, |c| Ok(*c == theirs))
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

/// Registers the config classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySaveConfigMode>()?;
    m.add_class::<PySaveConfig>()?;
    m.add_class::<PyReductionConfig>()?;
    m.add_class::<PyCollection>()
}
