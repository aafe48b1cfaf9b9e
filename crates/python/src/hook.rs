//! `Hook`: smdebug's writer hook (`smdebug_hook::Hook`) for Python training loops.
//!
//! The training thread pays for the save decision and, for most values, one copy of the
//! array into a buffer the writer thread owns: reductions, protobuf encoding, CRCs and file
//! I/O happen on the hook's writer and I/O threads. The copy is needed when the writer runs
//! after the call returns (reductions, `save_tensor` values written at the end of the
//! step), while the caller may reuse or change its array at once. A large C-contiguous
//! array whose raw value is all that is due is lent instead (`save_lent`): the writer
//! encodes the record from its buffer, with the GIL released, before `save` returns.

use crate::config::{PyCollection, PyReductionConfig, PySaveConfig, Wrapper};
use crate::convert::{mode_arg, tensor_value};
use crate::{ExceptionClass, NativeError};
use numpy::{Element, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smdebug_config::{
    Collection, CollectionManager, Framework, IncludeWorkers, ReductionConfig, SaveConfig,
};
use smdebug_hook::{Bytes, DType, Hook, HookBuilder, HookError, Saved};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::sync::{MutexGuard, TryLockError};

/// The Python exception for a hook failure: wrong arguments and configurations are
/// `SMDebugValueError`, failures while writing `SMDebugRuntimeError`.
fn hook_err(py: Python<'_>, e: HookError) -> PyErr {
    NativeError::from(e).into_pyerr(py)
}

fn value_err(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    NativeError::Other(ExceptionClass::SMDebugValueError, msg.into()).into_pyerr(py)
}

/// A framework by any of its names (`smdebug_config::Framework` owns them and their
/// aliases); an unknown name is an `SMDebugValueError` listing the accepted ones.
fn framework_arg(py: Python<'_>, name: &str) -> PyResult<Framework> {
    name.parse::<Framework>()
        .map_err(|e| value_err(py, e.to_string()))
}

fn include_workers_arg(py: Python<'_>, s: &str) -> PyResult<IncludeWorkers> {
    match s {
        "one" => Ok(IncludeWorkers::One),
        "all" => Ok(IncludeWorkers::All),
        other => Err(value_err(
            py,
            format!("include_workers={other:?}: expected \"one\" or \"all\""),
        )),
    }
}

/// Arrays from this size on are lent to the writer rather than copied (see [`save_lent`]):
/// below it a copy costs the training thread less than waiting for the writer thread to
/// wake up and encode.
const LEND_MIN_BYTES: usize = 256 << 10;

/// An array's buffer as [`save_lent`] lends it: dtype, start, length in bytes.
struct Lendable {
    dtype: DType,
    data: *const u8,
    len: usize,
}

/// The buffer of a C-contiguous, aligned numpy array of a numeric dtype in this machine's
/// (little-endian) byte order, of at least [`LEND_MIN_BYTES`]: its bytes are the record's
/// `tensor_content` as they are.
fn lendable(arr: &Bound<'_, PyUntypedArray>) -> Option<Lendable> {
    if !cfg!(target_endian = "little") || !arr.is_c_contiguous() || !arr.is_aligned() {
        return None;
    }
    fn typed<T: Element>(arr: &Bound<'_, PyUntypedArray>, dtype: DType) -> Option<Lendable> {
        let a = arr.cast::<PyArrayDyn<T>>().ok()?;
        let len = a.len() * std::mem::size_of::<T>();
        Some(Lendable {
            dtype,
            data: a.data() as *const u8,
            len,
        })
    }
    // Byte-swapped dtypes are not equivalent to these, so they are not lent. Bool and
    // complex values are copied: their record encoding is not checked against numpy's
    // memory here.
    let lent = typed::<f32>(arr, DType::Float32)
        .or_else(|| typed::<f64>(arr, DType::Float64))
        .or_else(|| typed::<half::f16>(arr, DType::Float16))
        .or_else(|| typed::<i64>(arr, DType::Int64))
        .or_else(|| typed::<i32>(arr, DType::Int32))
        .or_else(|| typed::<i16>(arr, DType::Int16))
        .or_else(|| typed::<i8>(arr, DType::Int8))
        .or_else(|| typed::<u8>(arr, DType::UInt8))
        .or_else(|| typed::<u16>(arr, DType::UInt16))
        .or_else(|| typed::<u32>(arr, DType::UInt32))
        .or_else(|| typed::<u64>(arr, DType::UInt64))?;
    (lent.len >= LEND_MIN_BYTES).then_some(lent)
}

/// A numpy array's buffer lent to the writer thread as the `Bytes` of a tensor. Dropping it
/// (when the writer is done with the bytes) drops `_released`, which ends the lender's wait.
struct LentBuffer {
    data: *const u8,
    len: usize,
    _released: SyncSender<()>,
}

// SAFETY: the buffer is only read, and `save_lent` keeps it alive and unchanged (the array
// object is referenced by the caller's frame, and the calling thread does not return to
// Python) until this object is dropped, on whichever thread.
unsafe impl Send for LentBuffer {}

impl AsRef<[u8]> for LentBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see `unsafe impl Send`: `len` bytes from `data` are one live buffer for as
        // long as this object exists.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

/// Waits, on drop, until every `Bytes` made of a [`LentBuffer`] is gone: also when the save
/// fails or panics, so the buffer is never read after `save_lent` returns.
struct WaitForRelease(Receiver<()>);

impl Drop for WaitForRelease {
    fn drop(&mut self) {
        // Only ever disconnected (nothing is sent): once the `LentBuffer` is dropped.
        let _ = self.0.recv();
    }
}

/// `Hook::save_bytes` of an array's buffer, without a copy: with the GIL released, the
/// writer thread encodes the record straight from the buffer and the call returns once it
/// has. `None` when the hook wants a copy (reductions, TensorBoard summaries, flight
/// recorder), after which the buffer is no longer referenced.
fn save_lent(
    py: Python<'_>,
    h: &mut Hook,
    name: &str,
    arr: &Bound<'_, PyUntypedArray>,
    lent: Lendable,
) -> PyResult<Option<Saved>> {
    let shape = arr.shape().to_vec();
    let (tx, rx) = sync_channel::<()>(0);
    let buffer = LentBuffer {
        data: lent.data,
        len: lent.len,
        _released: tx,
    };
    let dtype = lent.dtype;
    py.detach(move || {
        let _wait = WaitForRelease(rx);
        h.save_bytes(name, dtype, &shape, Bytes::from_owner(buffer))
    })
    .map_err(|e| hook_err(py, e))
}

/// The native hook. `smdebug_rs.Hook` (python/smdebug_rs/core/hook.py) subclasses it with the
/// original's constructor and the collection objects.
// `weakref`: collection handles refer to their hook weakly (see `config::InHook`).
#[pyclass(subclass, weakref, module = "smdebug_rs._native", name = "Hook")]
pub(crate) struct PyHook {
    /// `None` once closed.
    inner: Mutex<Option<Hook>>,
    /// The collections as they were when the hook closed: handles of them still read and
    /// change a collection after `close`, as the original's objects outlive its hook.
    closed_collections: Mutex<Option<CollectionManager>>,
    /// `dry_run`: nothing is written, saves are accepted and ignored.
    dry_run: bool,
    /// The out_dir as given.
    out_dir: String,
    /// This worker's name.
    worker: String,
    /// `Hook.tensorboard_dir`.
    tensorboard_dir: Option<String>,
}

impl PyHook {
    /// The hook's lock, taken without holding the GIL while waiting: a save of a large
    /// array waits for the writer with the lock held and the GIL released, and a thread
    /// blocking on the lock with the GIL held would keep that save from returning.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Option<Hook>> {
        loop {
            match self.inner.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| drop(self.inner.lock())),
            }
        }
    }

    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Hook) -> Result<T, HookError>,
    ) -> PyResult<T> {
        let mut guard = self.lock(py);
        let Some(h) = guard.as_mut() else {
            return Err(NativeError::Other(
                ExceptionClass::SMDebugRuntimeError,
                format!("the hook writing {} is closed", self.out_dir),
            )
            .into_pyerr(py));
        };
        f(h).map_err(|e| hook_err(py, e))
    }

    fn from_builder(py: Python<'_>, b: HookBuilder, dry_run: bool) -> PyResult<Self> {
        let out_dir = b.configured_out_dir().to_owned();
        let worker = b.configured_worker().to_owned();
        let tensorboard_dir = b.configured_tensorboard_dir();
        let hook = if dry_run {
            None
        } else {
            Some(py.detach(|| b.build()).map_err(|e| hook_err(py, e))?)
        };
        Ok(PyHook {
            inner: Mutex::new(hook),
            closed_collections: Mutex::new(None),
            dry_run,
            out_dir,
            worker,
            tensorboard_dir,
        })
    }

    /// Runs `f` on collection `name` of the hook (created if missing), or of its
    /// collections as they were at `close`. `f` runs with the hook's lock held, so it must
    /// not call Python; its error becomes the Python exception once the lock is released.
    pub(crate) fn with_collection<R>(
        &self,
        py: Python<'_>,
        name: &str,
        f: impl FnOnce(&mut Collection) -> Result<R, NativeError>,
    ) -> PyResult<R> {
        let r = {
            let mut guard = self.lock(py);
            match guard.as_mut() {
                Some(h) => f(h.get_collection(name)),
                None => {
                    let mut closed = self
                        .closed_collections
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    f(closed
                        .get_or_insert_with(CollectionManager::new)
                        .get_or_create(name))
                }
            }
        };
        r.map_err(|e| e.into_pyerr(py))
    }
}

/// The settings both constructors share.
#[allow(clippy::too_many_arguments)]
fn configure(
    py: Python<'_>,
    mut b: HookBuilder,
    framework: Option<&str>,
    worker: Option<(String, i64)>,
    save_config: Option<SaveConfig>,
    reduction_config: Option<ReductionConfig>,
    wall_time_base: Option<f64>,
) -> PyResult<HookBuilder> {
    if let Some(f) = framework {
        b = b.framework(framework_arg(py, f)?);
    }
    if let Some((name, n)) = worker {
        // `worker` would turn include_workers to "all": keep the configured choice.
        let include = b.configured_include_workers();
        b = b.worker(name, n).include_workers(include);
    }
    if let Some(s) = save_config {
        b = b.save_config(s);
    }
    if let Some(r) = reduction_config {
        b = b.reduction_config(r);
    }
    if let Some(base) = wall_time_base {
        b = b.wall_time(smdebug_hook::WallTime::PerStep(std::sync::Arc::new(
            move |s| base + s as f64,
        )));
    }
    Ok(b)
}

#[pymethods]
impl PyHook {
    /// `Hook(out_dir, ...)`: see `smdebug_rs.Hook`. The configs are `SaveConfig` and
    /// `ReductionConfig` objects (copied; a dict in their JSON form is read as one);
    /// collections are given afterwards with `_add_collection`. With
    /// `from_json_file`, everything but the framework and the worker comes from the
    /// SageMaker hook configuration at `json_file_path` (a missing file is
    /// `FileNotFoundError`).
    #[new]
    #[pyo3(signature = (out_dir, *, framework="numpy", export_tensorboard=false,
        tensorboard_dir=None, dry_run=false, reduction_config=None, save_config=None,
        include_regex=None, include_collections=None, save_all=false, include_workers="one",
        worker=None, num_workers=1, wall_time_base=None,
        from_json_file=false, json_file_path=None, stop_check_interval=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        out_dir: String,
        framework: &str,
        export_tensorboard: bool,
        tensorboard_dir: Option<String>,
        dry_run: bool,
        reduction_config: Option<&Bound<'_, PyAny>>,
        save_config: Option<&Bound<'_, PyAny>>,
        include_regex: Option<Vec<String>>,
        include_collections: Option<Vec<String>>,
        save_all: bool,
        include_workers: &str,
        worker: Option<String>,
        num_workers: i64,
        wall_time_base: Option<f64>,
        from_json_file: bool,
        json_file_path: Option<std::path::PathBuf>,
        stop_check_interval: Option<f64>,
    ) -> PyResult<Self> {
        let stop_interval = stop_check_interval
            .map(|s| {
                std::time::Duration::try_from_secs_f64(s)
                    .map_err(|e| value_err(py, format!("stop_check_interval={s}: {e}")))
            })
            .transpose()?;
        let worker = Some((worker.unwrap_or_else(|| "worker_0".into()), num_workers));
        if from_json_file {
            // A SageMaker hook configuration (`debughookconfig.json`): `json_file_path`, else
            // `$SMDEBUG_CONFIG_FILE_PATH`, else /opt/ml/input/config/debughookconfig.json.
            let path = smdebug_config::hook_config_path(json_file_path.as_deref());
            let b = HookBuilder::from_config_file(&path).map_err(|e| hook_err(py, e))?;
            let mut b = configure(py, b, Some(framework), worker, None, None, None)?;
            if let Some(i) = stop_interval {
                b = b.stop_check_interval(i);
            }
            return Self::from_builder(py, b, false);
        }
        let mut b = HookBuilder::new(out_dir)
            .export_tensorboard(export_tensorboard)
            .save_all(save_all)
            .include_workers(include_workers_arg(py, include_workers)?);
        if let Some(d) = tensorboard_dir {
            b = b.tensorboard_dir(d);
        }
        if let Some(r) = include_regex {
            b = b.include_regex(r);
        }
        if let Some(c) = include_collections {
            b = b.include_collections(c);
        }
        let save_config = save_config
            .filter(|s| !s.is_none())
            .map(PySaveConfig::from_py)
            .transpose()?;
        let reduction_config = reduction_config
            .filter(|r| !r.is_none())
            .map(PyReductionConfig::from_py)
            .transpose()?;
        let b = configure(
            py,
            b,
            Some(framework),
            worker,
            save_config,
            reduction_config,
            wall_time_base,
        )?;
        let b = match stop_interval {
            Some(i) => b.stop_check_interval(i),
            None => b,
        };
        Self::from_builder(py, b, dry_run)
    }

    /// The out_dir as given.
    #[getter]
    fn out_dir(&self) -> &str {
        &self.out_dir
    }

    /// Where TensorBoard files go: `tensorboard_dir` as given (or the SageMaker job's
    /// TensorBoard path), `<out_dir>/tensorboard` with `export_tensorboard` alone, else
    /// `None` (the original's `hook.tensorboard_dir`).
    #[getter]
    fn tensorboard_dir(&self) -> Option<&str> {
        self.tensorboard_dir.as_deref()
    }

    /// This worker's name (`worker_<rank>`).
    #[getter]
    fn worker(&self) -> &str {
        &self.worker
    }

    /// Whether this is a dry run (nothing written).
    #[getter]
    fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// The global step (-1 before the first `step()`).
    #[getter]
    fn step_num(&self, py: Python<'_>) -> PyResult<i64> {
        if self.dry_run {
            return Ok(-1);
        }
        self.with(py, |h| Ok(h.global_step()))
    }

    /// The current mode step.
    #[getter]
    fn mode_step(&self, py: Python<'_>) -> PyResult<i64> {
        if self.dry_run {
            return Ok(-1);
        }
        self.with(py, |h| Ok(h.mode_step()))
    }

    /// `set_mode(mode)`: a `ModeKeys` member (ours or smdebug's), a mode name or its int.
    fn set_mode(&self, py: Python<'_>, mode: &Bound<'_, PyAny>) -> PyResult<()> {
        let mode = mode_arg(Some(mode))?;
        if self.dry_run {
            return Ok(());
        }
        self.with(py, |h| {
            h.set_mode(mode);
            Ok(())
        })
    }

    /// Starts the next step: ends the previous one (its `save_tensor` values and cached
    /// scalars are written, its files published) and advances the step counters.
    fn _step(&self, py: Python<'_>) -> PyResult<()> {
        if self.dry_run {
            return Ok(());
        }
        self.with(py, |h| h.step())
    }

    /// Gives `collection` to the hook (replacing its collection of that name; before the
    /// first step): its value is copied into the hook once, and the object becomes a handle
    /// of the hook's collection. A dry-run hook keeps nothing; the object stays as it is.
    fn _add_collection(
        slf: &Bound<'_, Self>,
        collection: &Bound<'_, PyCollection>,
    ) -> PyResult<()> {
        let py = slf.py();
        if slf.borrow().dry_run {
            return Ok(());
        }
        let c = collection.get().value(py)?;
        let name = c.name.clone();
        slf.borrow().with(py, |h| {
            *h.get_collection(&name) = c;
            Ok(())
        })?;
        collection.get().bind_to(slf, name)
    }

    /// Collection `name` (created if missing): a handle of the hook's collection, or, for a
    /// dry run, a collection of its own.
    fn _collection<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if slf.borrow().dry_run {
            return crate::config::collection_to_py(py, Collection::new(name));
        }
        // Created now, so that the collection exists even if the handle is never used.
        slf.borrow().with(py, |h| {
            h.get_collection(name);
            Ok(())
        })?;
        crate::config::hook_collection_to_py(slf, name)
    }

    /// Adds a collection to the saved ones (before the first step).
    fn _include_collection(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        if self.dry_run {
            return Ok(());
        }
        self.with(py, |h| {
            h.include_collection(name);
            Ok(())
        })
    }

    /// Whether a tensor of this name is saved at this step.
    fn should_save_tensor(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        if self.dry_run {
            return Ok(false);
        }
        self.with(py, |h| h.should_save(name))
    }

    /// Whether `should_save_tensor` can say yes for any name at this step (a saved
    /// collection is due, in the mode the step began in, on a worker that writes; or the
    /// flight recorder keeps tensors): fixed from `_step()` to the next, so a framework hook
    /// asks once per step and skips every per-tensor call on a no. False before the first
    /// step, for a dry run and once closed.
    fn anything_due(&self, py: Python<'_>) -> bool {
        if self.dry_run {
            return false;
        }
        self.lock(py).as_ref().is_some_and(Hook::anything_due)
    }

    /// Offers a tensor as a framework hook does with what it sees: written (its shape,
    /// reductions and raw value, as its collections' configs say) if a collection containing
    /// the name is due at this step. Returns whether it was taken. The array is read only
    /// when due: a large C-contiguous numeric array whose raw value and shape are all that
    /// is due is encoded from its buffer before the call returns (no copy); anything else is
    /// copied once (see `smdebug_rs.Hook`).
    fn save(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        if self.dry_run {
            return Ok(false);
        }
        let mut guard = self.lock(py);
        let Some(h) = guard.as_mut() else {
            return Err(NativeError::Other(
                ExceptionClass::SMDebugRuntimeError,
                "the hook is closed".into(),
            )
            .into_pyerr(py));
        };
        if !h.should_save(name).map_err(|e| hook_err(py, e))? {
            return Ok(false);
        }
        if let Ok(arr) = value.cast::<PyUntypedArray>() {
            if let Some(lent) = lendable(arr) {
                let saved = save_lent(py, h, name, arr, lent)?;
                if let Some(s) = saved {
                    return Ok(s == Saved::Queued);
                }
            }
        }
        let v = tensor_value(value)?;
        Ok(h.save(name, v).map_err(|e| hook_err(py, e))? == Saved::Queued)
    }

    /// `save_tensor(tensor_name, tensor_value, collections_to_write="default")`: the value is
    /// added to the collection (the last one of a list, as in the original; created if
    /// missing) and written as a raw tensor at the end of the step, if that step saves
    /// anything.
    #[pyo3(signature = (tensor_name, tensor_value, collections_to_write=None))]
    fn save_tensor(
        &self,
        py: Python<'_>,
        tensor_name: &str,
        tensor_value: &Bound<'_, PyAny>,
        collections_to_write: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if self.dry_run {
            return Ok(());
        }
        let names: Vec<String> = match collections_to_write {
            None => vec!["default".into()],
            Some(c) => match c.extract::<String>() {
                Ok(s) => vec![s],
                Err(_) => c.extract()?,
            },
        };
        let v = self::tensor_value(tensor_value)?;
        self.with(py, |h| {
            // The original keeps one entry per tensor name, overwritten for each listed
            // collection: the last collection gets the tensor.
            if let Some(last) = names.last() {
                h.save_tensor(tensor_name, v, last);
            }
            Ok(())
        })
    }

    /// `save_forced(name, value, collection)`: smdebug's forced save (its Keras hook's
    /// losses and metrics at the end of an epoch): `name` joins `collection` and its raw
    /// value is written into the current step now, whether or not the step is due (see
    /// `smdebug_hook::Hook::save_forced`). Returns whether it was written.
    fn save_forced(
        &self,
        py: Python<'_>,
        name: &str,
        value: &Bound<'_, PyAny>,
        collection: &str,
    ) -> PyResult<bool> {
        if self.dry_run {
            return Ok(false);
        }
        let v = tensor_value(value)?;
        self.with(py, |h| {
            Ok(h.save_forced(name, v, collection)? == Saved::Queued)
        })
    }

    /// `save_scalar(name, value, sm_metric=False, timestamp=None)`: written as
    /// `scalar/<name>` at the end of the next step that saves something (or at close).
    #[pyo3(signature = (name, value, sm_metric=false, timestamp=None))]
    fn save_scalar(
        &self,
        py: Python<'_>,
        name: &str,
        value: &Bound<'_, PyAny>,
        sm_metric: bool,
        timestamp: Option<f64>,
    ) -> PyResult<()> {
        // SageMaker Metrics are not written by this hook (see the crate README).
        let _ = sm_metric;
        if self.dry_run {
            return Ok(());
        }
        if let Ok(x) = value.extract::<f64>() {
            return self.with(py, |h| {
                h.save_scalar(name, x, timestamp);
                Ok(())
            });
        }
        let v = tensor_value(value)?;
        self.with(py, |h| h.save_scalar_tensor(name, v, timestamp))
    }

    /// Whether training should stop: a rule (or a person) created the stop-signal object in
    /// the trial. Polled at most once per step and second, so cheap to call every iteration.
    fn should_stop(&self, py: Python<'_>) -> PyResult<bool> {
        if self.dry_run {
            return Ok(false);
        }
        self.with(py, |h| Ok(h.should_stop()))
    }

    /// Tensors dropped because the writer's queue was full (always 0 with the default
    /// blocking queue).
    #[getter]
    fn dropped_tensors(&self, py: Python<'_>) -> PyResult<u64> {
        if self.dry_run {
            return Ok(0);
        }
        self.with(py, |h| Ok(h.dropped_tensors()))
    }

    /// Waits until everything handed over so far is written.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        if self.dry_run {
            return Ok(());
        }
        let mut guard = self.lock(py);
        match guard.as_mut() {
            Some(h) => py.detach(|| h.flush()).map_err(|e| hook_err(py, e)),
            None => Ok(()),
        }
    }

    /// Ends training: writes what is cached, publishes the last step, writes the
    /// collections file again and the end-of-training marker. Returns the writer's counts
    /// (`records`, `event_bytes`, `dropped`). A second call does nothing.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let hook = self.lock(py).take();
        let d = PyDict::new(py);
        if let Some(h) = hook {
            *self
                .closed_collections
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(h.collections().clone());
            let stats = py.detach(|| h.close()).map_err(|e| hook_err(py, e))?;
            d.set_item("records", stats.records)?;
            d.set_item("event_bytes", stats.event_bytes)?;
            d.set_item("dropped", stats.dropped)?;
        }
        Ok(d)
    }

    /// The names of the hook's collections (of the ones it had when it closed, once
    /// closed), in the order they were made.
    fn _collection_names(&self, py: Python<'_>) -> Vec<String> {
        let names = |cm: &CollectionManager| cm.collections().map(|c| c.name.clone()).collect();
        match self.lock(py).as_ref() {
            Some(h) => names(h.collections()),
            None => self
                .closed_collections
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(names)
                .unwrap_or_default(),
        }
    }

    /// Whether the hook is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }
}

/// Registers `Hook`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The stubs' `FrameworkName` spells these out for type checkers; a test compares them.
    m.add("FRAMEWORKS", Framework::accepted_names())?;
    m.add_class::<PyHook>()
}
