//! The wrapper classes themselves: a value lives in one `Place`, its own or a part of a
//! collection's (a collection's save and reduction configs) or of a hook's (a hook's
//! collection), so the types refer to each other. Their methods are in the files named
//! after them.
use super::wrapper::Place;
use pyo3::prelude::*;
use smdebug_config::{Collection, Mode, ReductionConfig, SaveConfig, SaveConfigMode};
use std::sync::Mutex;

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
    pub(super) place: Mutex<Place<SaveConfigMode, (Py<PySaveConfig>, Mode)>>,
}

/// `SaveConfig(mode_save_configs=None, save_interval=None, start_step=None, end_step=None,
/// save_steps=None)`: the save rules of the four modes (`smdebug_config::SaveConfig`):
/// the same rule for every mode, or `mode_save_configs={mode: SaveConfigMode}` (modes left
/// out take the hook's).
#[pyclass(frozen, subclass, module = "smdebug_rs._native", name = "SaveConfig")]
pub(crate) struct PySaveConfig {
    pub(super) place: Mutex<Place<SaveConfig, Py<PyCollection>>>,
}

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
    pub(super) place: Mutex<Place<ReductionConfig, Py<PyCollection>>>,
}

/// A collection held by a hook: the hook (weakly, so that the hook's own cache of
/// collection objects keeps no cycle) and the collection's name.
pub(crate) struct InHook {
    pub(super) hook: Py<PyAny>,
    pub(super) name: String,
}

/// `Collection(name, include_regex=None, tensor_names=None, reduction_config=None,
/// save_config=None, save_histogram=True)`: a named group of tensors, by regex
/// (`re.search`) and by name, with its own configs (`smdebug_config::Collection`). The
/// objects `Hook.get_collection` returns are handles of the hook's collection: what is
/// changed through them is what the hook prepares at its first step.
#[pyclass(frozen, subclass, module = "smdebug_rs._native", name = "Collection")]
pub(crate) struct PyCollection {
    pub(super) place: Mutex<Place<Collection, InHook>>,
}
