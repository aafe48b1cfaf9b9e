//! `ReductionConfig`.
use super::args::*;
use super::types::*;
use super::wrapper::*;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use smdebug_config::{Reduction, ReductionConfig};
use std::sync::Mutex;

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

impl Wrapper for PyReductionConfig {
    type Value = ReductionConfig;
    type Parent = Py<PyCollection>;

    fn place(&self) -> &Mutex<Place<ReductionConfig, Py<PyCollection>>> {
        &self.place
    }
}

impl PyReductionConfig {
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
        self.json_dict(py, ReductionConfig::to_json_value)
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
        Self::install(cls.call0()?, Place::Own(v))
    }

    /// A config from `to_json()` text.
    #[classmethod]
    fn from_json<'py>(cls: &Bound<'py, PyType>, json_str: &str) -> PyResult<Bound<'py, PyAny>> {
        Self::from_json_text(cls, json_str, ReductionConfig::from_json, |_| vec![])
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.equals(py, other)
    }
}

// -- Collection -------------------------------------------------------------------------
