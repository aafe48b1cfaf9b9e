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

mod args;
mod collection;
mod reduction_config;
mod save_config;
mod types;
mod wrapper;

pub(crate) use collection::{collection_to_py, hook_collection_to_py};
pub(crate) use types::{PyCollection, PyReductionConfig, PySaveConfig, PySaveConfigMode};
pub(crate) use wrapper::Wrapper;

use pyo3::prelude::*;

/// Registers the config classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySaveConfigMode>()?;
    m.add_class::<PySaveConfig>()?;
    m.add_class::<PyReductionConfig>()?;
    m.add_class::<PyCollection>()
}
