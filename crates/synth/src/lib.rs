//! Synthetic smdebug trials, for tests, benchmarks and the `smdebug synth` command.
//!
//! * [`Recipe`]: the one model of the fixture recipe format (`tests/peer/presets/*.json`,
//!   the format of the Python fixture writer `tests/peer/fixture.py`): workers, a schedule
//!   of mode phases, save and reduction configs, collections, and tensors whose values come
//!   from a seeded generator ([`Recipe::values`], the same arithmetic as
//!   `tests/peer/peer_common.py::gen_values`, numpy's casts included).
//! * [`write_trial`]: the trial a recipe describes, written through the smdebug-rs hook.
//!   The conformance suite checks that it is byte for byte the trial the Python writer
//!   makes from the same recipe.
//! * [`steps`]: trials written file by file (event file, index file, collections file, end
//!   marker) for reader tests that need exact control of what lands where.
//!
//! ```
//! use smdebug_synth::{write_trial, Recipe, WriteOptions};
//!
//! let recipe = Recipe::from_json(
//!     r#"{"seed": 3, "schedule": [{"mode": "TRAIN", "steps": 2}],
//!         "collections": [{"name": "all", "include_regex": [".*"]}],
//!         "tensors": [{"name": "w", "shape": [2, 3], "dtype": "float16"}]}"#,
//!     "example",
//! )?;
//! let w = recipe.values(recipe.tensor_index("w").unwrap(), 1, 0)?;
//! assert_eq!(w.shape(), [2, 3]);
//!
//! let dir = tempfile::tempdir().unwrap();
//! let out = dir.path().join("trial");
//! let records = write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default())?;
//! assert_eq!(records, 2);
//! assert!(out.join("events/000000000001/000000000001_worker_0.tfevents").exists());
//! assert!(out.join("training_job_end.ts").exists());
//! # Ok::<(), smdebug_synth::SynthError>(())
//! ```
#![deny(missing_docs)]

mod error;
mod recipe;
mod recipe_forms;
mod recipe_read;
mod recipe_write;
mod spec;
pub mod steps;
mod values;
mod write;

pub use error::{Result, SynthError};
pub use recipe::Recipe;
pub use spec::{Pattern, Phase, RecipeNumber, TensorSpec};
pub use values::{f64_to_f16, splitmix64, value_seed, MAX_ELEMENTS};
pub use write::{write_trial, write_trial_into, EndMarker, WriteOptions};
