//! `SaveConfigMode` and `SaveConfig`.
use super::args::*;
use super::types::*;
use super::wrapper::*;
use crate::classes;
use crate::convert::{mode_arg, mode_to_py};
use crate::{ExceptionClass, NativeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use smdebug_config::{Mode, SaveConfig, SaveConfigMode, ShouldSaveError};
use std::sync::Mutex;

impl Parent<SaveConfigMode> for (Py<PySaveConfig>, Mode) {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        (self.0.clone_ref(py), self.1)
    }

    fn with_part<R>(
        self,
        py: Python<'_>,
        f: impl FnOnce(&mut SaveConfigMode) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let (parent, mode) = self;
        parent.get().with(py, |sc| match sc.get_mut(mode) {
            Some(m) => f(m),
            None => Err(value_error(format!(
                "the save config has no {} config any more",
                mode.name()
            ))),
        })
    }
}

impl Wrapper for PySaveConfigMode {
    type Value = SaveConfigMode;
    type Parent = (Py<PySaveConfig>, Mode);

    fn place(&self) -> &Mutex<Place<SaveConfigMode, Self::Parent>> {
        &self.place
    }
}

impl PySaveConfigMode {
    /// A `smdebug_rs.core.save_config.SaveConfigMode` in `place`.
    pub(super) fn wrap(
        py: Python<'_>,
        place: Place<SaveConfigMode, (Py<PySaveConfig>, Mode)>,
    ) -> PyResult<Bound<'_, PyAny>> {
        Self::install(classes::get(py)?.save_config_mode.bind(py).call0()?, place)
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
        self.json_dict(py, SaveConfigMode::to_json_value)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.equals(py, other)
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
        ShouldSaveError::ZeroInterval(_) => NativeError::Other(
            ExceptionClass::ZeroDivisionError,
            "integer modulo by zero".into(),
        ),
        other => value_error(other.to_string()),
    }
}

// -- SaveConfig -------------------------------------------------------------------------

impl Wrapper for PySaveConfig {
    type Value = SaveConfig;
    type Parent = Py<PyCollection>;

    fn place(&self) -> &Mutex<Place<SaveConfig, Py<PyCollection>>> {
        &self.place
    }
}

impl PySaveConfig {
    /// A `smdebug_rs.core.save_config.SaveConfig` in `place`.
    pub(super) fn wrap(
        py: Python<'_>,
        place: Place<SaveConfig, Py<PyCollection>>,
    ) -> PyResult<Bound<'_, PyAny>> {
        Self::install(classes::get(py)?.save_config.bind(py).call0()?, place)
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
        self.json_dict(py, SaveConfig::to_json_value)
    }

    /// `json.dumps(to_json_dict())`.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |v| Ok(v.to_json()))
    }

    /// A config from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, json_str: &str) -> PyResult<Bound<'py, PyAny>> {
        Self::from_json_text(cls, json_str, SaveConfig::from_json, |_| vec![])
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.equals(py, other)
    }
}

// -- ReductionConfig --------------------------------------------------------------------
