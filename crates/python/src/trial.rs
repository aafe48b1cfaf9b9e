//! `Trial` and `Tensor`: smdebug's analysis API over `smdebug_trial::Trial`, with the
//! original's method names, keywords and defaults (docs/src/semantics.md §8–10).

use crate::convert::{mode_arg, mode_to_py, step_state_to_py, to_numpy};
use crate::{run, ExceptionClass, NativeError, NativeResult};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use smdebug_index::END_OF_JOB_FILE;
use smdebug_storage::{BlockingStore, Location};
use smdebug_trial::{TensorFilter, Trial, TrialOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn range_steps_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<(Option<i64>, Option<i64>)>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let (b, e): (Option<i64>, Option<i64>) = obj.extract().map_err(|_| {
        NativeError::Other(
            ExceptionClass::AssertionError,
            "range_steps should be of the form (begin, end) where begin is less than end".into(),
        )
        .into_pyerr(obj.py())
    })?;
    Ok(Some((b, e)))
}

fn regex_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = obj.extract::<String>() {
        return Ok(Some(vec![s]));
    }
    Ok(Some(obj.extract::<Vec<String>>()?))
}

fn collection_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = obj.extract::<String>() {
        return Ok(Some(s));
    }
    // A Collection object, as the original accepts.
    Ok(Some(obj.getattr("name")?.extract()?))
}

/// The trial (`smdebug.trials.trial.Trial`): created by `smdebug_rs.trials.create_trial`.
///
/// Reads the trial's index, also while the job is still writing: queries refresh it first
/// unless `dynamic_refresh` is off. Every read runs with the GIL released.
#[pyclass(frozen, subclass, module = "smdebug_rs._native", name = "Trial")]
pub(crate) struct PyTrial {
    /// The reader; `None` once closed.
    inner: Mutex<Option<Arc<Trial>>>,
    /// The trial's name and path, kept for the error of a call after `close`.
    name: String,
    path: String,
}

impl PyTrial {
    /// The reader, or the error of a call after `close`.
    pub(crate) fn trial(&self, py: Python<'_>) -> PyResult<Arc<Trial>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(Arc::clone).ok_or_else(|| {
            NativeError::Other(
                ExceptionClass::SMDebugRuntimeError,
                format!(
                    "trial {} ({}) is closed: Trial.close() released its reader",
                    self.name, self.path
                ),
            )
            .into_pyerr(py)
        })
    }
}

#[pymethods]
impl PyTrial {
    /// Opens the trial at `path` (a local folder or `s3://bucket/prefix`); waits for the
    /// collections files as smdebug does. `range_steps=(begin, end)` loads only those steps;
    /// `collections_timeout` (seconds) bounds the wait for collections files.
    #[new]
    #[pyo3(signature = (path, name=None, range_steps=None, *, collections_timeout=None, cache_bytes=None, skip_corrupt_index_files=false))]
    fn new(
        py: Python<'_>,
        path: String,
        name: Option<String>,
        range_steps: Option<&Bound<'_, PyAny>>,
        collections_timeout: Option<f64>,
        cache_bytes: Option<usize>,
        skip_corrupt_index_files: bool,
    ) -> PyResult<Self> {
        let mut options = TrialOptions {
            name,
            range_steps: range_steps_arg(range_steps)?,
            skip_corrupt_index_files,
            ..TrialOptions::default()
        };
        if let Some(t) = collections_timeout {
            options.collections_timeout = Some(Duration::try_from_secs_f64(t).map_err(|_| {
                NativeError::value(format!("collections_timeout {t} is not a duration"))
                    .into_pyerr(py)
            })?);
        }
        if let Some(b) = cache_bytes {
            options.cache_bytes = b;
        }
        let trial = run(py, move || Ok(Trial::open(&path, options)?))?;
        Ok(PyTrial {
            name: trial.name().to_owned(),
            path: trial.path().to_owned(),
            inner: Mutex::new(Some(Arc::new(trial))),
        })
    }

    /// Releases the reader (its index, caches, open files and read-ahead thread, once the
    /// calls running on other threads return); any later call on the trial or its tensors
    /// raises `SMDebugRuntimeError`. Closing twice does nothing.
    fn close(&self) {
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(taken);
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// The trial's name (by default the last component of its path).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The trial's path, as given.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Whether queries refresh the index first (smdebug's `dynamic_refresh`).
    #[getter]
    fn get_dynamic_refresh(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.trial(py)?.dynamic_refresh())
    }

    #[setter]
    fn set_dynamic_refresh(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.trial(py)?.set_dynamic_refresh(on);
        Ok(())
    }

    /// Number of workers the job declared in its collections file.
    #[getter]
    fn num_workers(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.trial(py)?.num_workers())
    }

    /// Whether every step of a finished job has been loaded.
    #[getter]
    fn loaded_all_steps(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.trial(py)?.loaded_all_steps())
    }

    /// The last step every worker has written.
    #[getter]
    fn last_complete_step(&self, py: Python<'_>) -> PyResult<i64> {
        Ok(self.trial(py)?.last_complete_step())
    }

    /// The key of the last index file read.
    #[getter]
    fn last_index_token(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.trial(py)?.last_index_token())
    }

    /// Reads the index files written since the last refresh.
    fn refresh_data(&self, py: Python<'_>) -> PyResult<()> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.refresh_data()?))
    }

    /// Refreshes the index if `dynamic_refresh` is on and the job may still write (`name` is
    /// accepted for compatibility and ignored).
    #[pyo3(signature = (name=None))]
    fn maybe_refresh(&self, py: Python<'_>, name: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let _ = name;
        let t = self.trial(py)?;
        run(py, move || Ok(t.maybe_refresh()?))
    }

    /// Whether the job wrote its end-of-training marker.
    fn has_training_ended(&self, py: Python<'_>) -> PyResult<bool> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.has_training_ended()?))
    }

    /// Sorted names of the saved tensors, optionally only those saved at `step` (of
    /// `mode`), matching `regex` (a pattern or a list: `re.search`) or in `collection` (a
    /// name or a Collection). `regex` and `collection` together raise `ValueError`.
    #[pyo3(signature = (show_prefixed_tensors=false, *, step=None, mode=None, regex=None, collection=None))]
    fn tensor_names(
        &self,
        py: Python<'_>,
        show_prefixed_tensors: bool,
        step: Option<i64>,
        mode: Option<&Bound<'_, PyAny>>,
        regex: Option<&Bound<'_, PyAny>>,
        collection: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<String>> {
        let _ = show_prefixed_tensors;
        let filter = TensorFilter {
            step,
            mode: mode_arg(mode)?,
            regex: regex_arg(regex)?,
            collection: collection_arg(collection)?,
        };
        let t = self.trial(py)?;
        run(py, move || Ok(t.tensor_names_filtered(&filter)?))
    }

    /// The tensor `tname` (raises `TensorUnavailable` if it was never saved).
    fn tensor(slf: &Bound<'_, Self>, py: Python<'_>, tname: String) -> PyResult<PyTensor> {
        let t = slf.get().trial(py)?;
        let name = tname.clone();
        run(py, move || t.tensor(&name).map(|_| ()).map_err(Into::into))?;
        Ok(PyTensor {
            trial: slf.clone().unbind(),
            name: tname,
        })
    }

    /// Whether a tensor of this name was saved.
    fn has_tensor(&self, py: Python<'_>, tname: String) -> PyResult<bool> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.has_tensor(&tname)?))
    }

    /// Sorted steps of `mode` (global steps for GLOBAL); only complete ones unless
    /// `show_incomplete_steps`.
    #[pyo3(signature = (mode=None, show_incomplete_steps=false))]
    fn steps(
        &self,
        py: Python<'_>,
        mode: Option<&Bound<'_, PyAny>>,
        show_incomplete_steps: bool,
    ) -> PyResult<Vec<i64>> {
        let mode = mode_arg(mode)?;
        let t = self.trial(py)?;
        run(py, move || Ok(t.steps(mode, show_incomplete_steps)?))
    }

    /// The modes the trial has steps of.
    fn modes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let modes = self.trial(py)?.modes();
        modes.into_iter().map(|m| mode_to_py(py, m)).collect()
    }

    /// `(mode, mode_step)` of a global step, or `(None, None)`... as smdebug: the pair is
    /// `None` when the step is unknown.
    fn mode_modestep<'py>(&self, py: Python<'py>, global_step: i64) -> PyResult<Bound<'py, PyAny>> {
        let t = self.trial(py)?;
        let r = run(py, move || Ok(t.mode_modestep(global_step)?))?;
        match r {
            Some((m, s)) => Ok(PyTuple::new(
                py,
                [mode_to_py(py, m)?, s.into_pyobject(py)?.into_any()],
            )?
            .into_any()),
            None => Ok(PyTuple::new(py, [py.None(), py.None()])?.into_any()),
        }
    }

    /// The mode of a global step (`None` if unknown).
    fn mode<'py>(&self, py: Python<'py>, global_step: i64) -> PyResult<Option<Bound<'py, PyAny>>> {
        let t = self.trial(py)?;
        let r = run(py, move || Ok(t.mode(global_step)?))?;
        r.map(|m| mode_to_py(py, m)).transpose()
    }

    /// The mode step of a global step (`None` if unknown).
    fn mode_step(&self, py: Python<'_>, global_step: i64) -> PyResult<Option<i64>> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.mode_step(global_step)?))
    }

    /// The global step of `mode_step` of `mode` (`None` if unknown).
    fn global_step(
        &self,
        py: Python<'_>,
        mode: &Bound<'_, PyAny>,
        mode_step: i64,
    ) -> PyResult<Option<i64>> {
        let mode = mode_arg(Some(mode))?;
        let t = self.trial(py)?;
        run(py, move || Ok(t.global_step(mode, mode_step)?))
    }

    /// Sorted names of the workers that wrote steps.
    fn workers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.workers()?))
    }

    /// The collections, by name (`smdebug_rs.core.collection.Collection` objects).
    fn collections<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, c) in self.trial(py)?.collections() {
            d.set_item(name, crate::config::collection_to_py(py, c)?)?;
        }
        Ok(d)
    }

    /// The collection `coll_name` (an empty one if the trial has none of that name).
    fn collection<'py>(&self, py: Python<'py>, coll_name: &str) -> PyResult<Bound<'py, PyAny>> {
        crate::config::collection_to_py(py, self.trial(py)?.collection(coll_name))
    }

    /// Whether `step` of `mode` has been written: a `StepState`.
    #[pyo3(signature = (step, mode=None))]
    fn has_passed_step<'py>(
        &self,
        py: Python<'py>,
        step: i64,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mode = mode_arg(mode)?;
        let t = self.trial(py)?;
        let s = run(py, move || Ok(t.has_passed_step(step, mode)?))?;
        step_state_to_py(py, s)
    }

    /// Blocks until every step in `required_steps` is available (raises `StepUnavailable`
    /// for a skipped step, `NoMoreData` past the end of a finished job). Other Python
    /// threads run meanwhile.
    #[pyo3(signature = (required_steps, mode=None))]
    fn wait_for_steps(
        &self,
        py: Python<'_>,
        required_steps: Vec<i64>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let mode = mode_arg(mode)?;
        let t = self.trial(py)?;
        run(py, move || Ok(t.wait_for_steps(&required_steps, mode)?))
    }

    /// Drops the cached values (values already returned stay valid).
    fn clear_cache(&self, py: Python<'_>) -> PyResult<()> {
        self.trial(py)?.clear_cache();
        Ok(())
    }

    /// Reads every value and saved reduction into the cache, concurrently; returns how many
    /// records were read.
    fn prefetch_all(&self, py: Python<'_>) -> PyResult<usize> {
        let t = self.trial(py)?;
        run(py, move || Ok(t.prefetch_all()?))
    }

    fn __repr__(&self) -> String {
        let closed = if self.closed() { " (closed)" } else { "" };
        format!(
            "<smdebug_rs Trial {:?} at {:?}{closed}>",
            self.name, self.path
        )
    }
}

/// A tensor of a trial (`smdebug.core.tensor.Tensor`).
#[pyclass(frozen, module = "smdebug_rs._native", name = "Tensor")]
pub(crate) struct PyTensor {
    /// The trial it belongs to (its reader is gone once the trial is closed).
    trial: Py<PyTrial>,
    name: String,
}

impl PyTensor {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&smdebug_trial::Tensor<'_>) -> NativeResult<T> + Send,
    ) -> PyResult<T> {
        let t = self.trial.get().trial(py)?;
        let name = &self.name;
        run(py, move || f(&t.tensor(name)?))
    }
}

#[pymethods]
impl PyTensor {
    /// The tensor's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The framework's name of the tensor, if the writer recorded one.
    #[getter]
    fn original_name(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |t| Ok(t.original_name()))
    }

    /// Sorted steps of `mode` at which the tensor was saved (complete steps only unless
    /// `show_incomplete_steps`).
    #[pyo3(signature = (mode=None, show_incomplete_steps=false))]
    fn steps(
        &self,
        py: Python<'_>,
        mode: Option<&Bound<'_, PyAny>>,
        show_incomplete_steps: bool,
    ) -> PyResult<Vec<i64>> {
        let mode = mode_arg(mode)?;
        self.with(py, move |t| Ok(t.steps(mode, show_incomplete_steps)?))
    }

    /// The value at `step_num` of `mode` (of `worker`, by default the first worker) as a
    /// read-only numpy array of the saved dtype.
    #[pyo3(signature = (step_num, mode=None, worker=None))]
    fn value<'py>(
        &self,
        py: Python<'py>,
        step_num: i64,
        mode: Option<&Bound<'_, PyAny>>,
        worker: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mode = mode_arg(mode)?;
        let v = self.with(py, move |t| {
            Ok(t.value(step_num, mode, worker.as_deref())?)
        })?;
        to_numpy(py, v)
    }

    /// `{step: value}` for every complete step of `mode`.
    #[pyo3(signature = (mode=None, worker=None))]
    fn values<'py>(
        &self,
        py: Python<'py>,
        mode: Option<&Bound<'_, PyAny>>,
        worker: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mode = mode_arg(mode)?;
        let vals = self.with(py, move |t| Ok(t.values(mode, worker.as_deref())?))?;
        let d = PyDict::new(py);
        for (s, v) in vals {
            d.set_item(s, to_numpy(py, v)?)?;
        }
        Ok(d)
    }

    /// The shape at `step_num` (saved shape, or the value's).
    #[pyo3(signature = (step_num, mode=None, worker=None))]
    fn shape<'py>(
        &self,
        py: Python<'py>,
        step_num: i64,
        mode: Option<&Bound<'_, PyAny>>,
        worker: Option<String>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mode = mode_arg(mode)?;
        let s = self.with(py, move |t| {
            Ok(t.shape(step_num, mode, worker.as_deref())?)
        })?;
        PyTuple::new(py, s)
    }

    /// The reduction `reduction_name` (min max mean std variance sum prod l1 l2) of the value
    /// at `step_num`, of its absolute value with `abs=True`: the saved one, or computed from
    /// the value.
    #[pyo3(signature = (step_num, reduction_name, mode=None, worker=None, abs=false))]
    fn reduction_value<'py>(
        &self,
        py: Python<'py>,
        step_num: i64,
        reduction_name: String,
        mode: Option<&Bound<'_, PyAny>>,
        worker: Option<String>,
        abs: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mode = mode_arg(mode)?;
        let v = self.with(py, move |t| {
            Ok(t.reduction_value(step_num, &reduction_name, mode, worker.as_deref(), abs)?)
        })?;
        to_numpy(py, v)
    }

    /// The saved reductions at `step_num`: `{(name, abs): value}`.
    #[pyo3(signature = (step_num, mode=None, worker=None))]
    fn reduction_values<'py>(
        &self,
        py: Python<'py>,
        step_num: i64,
        mode: Option<&Bound<'_, PyAny>>,
        worker: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mode = mode_arg(mode)?;
        let vals = self.with(py, move |t| {
            Ok(t.reduction_values(step_num, mode, worker.as_deref())?)
        })?;
        let d = PyDict::new(py);
        for ((name, abs), v) in vals {
            d.set_item((name, abs), to_numpy(py, v)?)?;
        }
        Ok(d)
    }

    /// Sorted workers that saved the tensor at `step_num`.
    #[pyo3(signature = (step_num, mode=None))]
    fn workers(
        &self,
        py: Python<'_>,
        step_num: i64,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<String>> {
        let mode = mode_arg(mode)?;
        self.with(py, move |t| Ok(t.workers(step_num, mode)?))
    }

    /// The last `n` steps (all if `n` is None) of `mode` up to and including `step`.
    #[pyo3(signature = (step, n=None, mode=None))]
    fn prev_steps(
        &self,
        py: Python<'_>,
        step: i64,
        n: Option<usize>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<i64>> {
        let mode = mode_arg(mode)?;
        self.with(py, move |t| Ok(t.prev_steps(step, n, mode)?))
    }

    /// Reads every value of the tensor into the trial's cache, concurrently.
    fn prefetch(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |t| {
            t.prefetch();
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        format!("<smdebug_rs Tensor {:?}>", self.name)
    }
}

/// Whether the trial at `path` has its end-of-training marker
/// (`smdebug.core.access_layer.utils.has_training_ended`).
#[pyfunction]
fn has_training_ended(py: Python<'_>, path: String) -> PyResult<bool> {
    run(py, move || {
        let location = Location::parse(path.trim()).map_err(smdebug_trial::TrialError::from)?;
        let store = BlockingStore::open(&location).map_err(smdebug_trial::TrialError::from)?;
        Ok(store
            .exists(END_OF_JOB_FILE)
            .map_err(smdebug_trial::TrialError::from)?)
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTrial>()?;
    m.add_class::<PyTensor>()?;
    m.add_class::<crate::convert::ValueOwner>()?;
    m.add_function(wrap_pyfunction!(has_training_ended, m)?)?;
    Ok(())
}
