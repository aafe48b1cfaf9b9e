//! A recipe written through the smdebug-rs hook: each worker is one [`Hook`], run one after
//! the other (or one per process with [`WriteOptions::only_worker`]).

use std::sync::Arc;

use smdebug_hook::{Flavor, Hook, HookBuilder, WallTime};
use smdebug_index::END_OF_JOB_FILE;
use smdebug_storage::{BlockingStore, Bytes, Location, Storage};

use crate::error::{Result, SynthError};
use crate::recipe::Recipe;

/// Who writes `training_job_end.ts` when the recipe ends training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndMarker {
    /// The recipe's last worker, when its hook closes.
    #[default]
    Recipe,
    /// Nobody: worker processes of one trial use this, and [`EndMarker::Only`] once all of
    /// them have finished (a hook refuses a finished trial, so a worker that starts late must
    /// not find the marker).
    Never,
    /// Only the marker is written, no worker data.
    Only,
}

/// What [`write_trial`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Only the worker with this index (default: every worker, one after the other).
    pub only_worker: Option<usize>,
    /// Who writes the end marker.
    pub end_marker: EndMarker,
}

/// Writes the trial `recipe` describes to `out` (a local directory or an object-store URL)
/// and returns the number of tensor records written.
///
/// What the Python fixture writer does with smdebug's `FileWriter` directly and a hook never
/// does (`write_empty_raw`, `duplicate`) goes through [`Hook::write_raw_record`].
pub fn write_trial(recipe: &Recipe, out: &str, options: WriteOptions) -> Result<u64> {
    write(recipe, out, None, options)
}

/// [`write_trial`] through `storage` (its root is the trial's root; see
/// `HookBuilder::storage`); `out` only names the trial in messages.
pub fn write_trial_into(
    recipe: &Recipe,
    out: &str,
    storage: Arc<dyn Storage>,
    options: WriteOptions,
) -> Result<u64> {
    write(recipe, out, Some(&storage), options)
}

fn write(
    recipe: &Recipe,
    out: &str,
    storage: Option<&Arc<dyn Storage>>,
    options: WriteOptions,
) -> Result<u64> {
    let workers = recipe.worker_names.len();
    if options.end_marker == EndMarker::Only {
        if recipe.training_ended {
            let store = match storage {
                Some(s) => BlockingStore::new(Arc::clone(s))?,
                None => BlockingStore::open(&Location::parse(out).map_err(SynthError::from)?)?,
            };
            store.put(END_OF_JOB_FILE, Bytes::new())?;
        }
        return Ok(0);
    }
    let indices = match options.only_worker {
        Some(w) if w >= workers => {
            return Err(SynthError::NoSuchWorker { index: w, workers });
        }
        Some(w) => w..w + 1,
        None => 0..workers,
    };
    let mut records = 0;
    for w in indices {
        records += write_worker(recipe, out, storage, w, options.end_marker).map_err(|e| {
            SynthError::Worker {
                worker: recipe.worker_names[w].clone(),
                source: Box::new(e),
            }
        })?;
    }
    Ok(records)
}

fn hook_for(
    recipe: &Recipe,
    out: &str,
    storage: Option<&Arc<dyn Storage>>,
    w: usize,
    end_marker: EndMarker,
) -> Result<Hook> {
    let mut b = HookBuilder::new(out);
    if let Some(s) = storage {
        b = b.storage(Arc::clone(s));
    }
    let mut b = b
        .without_default_collections()
        .worker(recipe.worker_names[w].clone(), recipe.num_workers_meta)
        .save_config(recipe.default_save_config.clone())
        .reduction_config(recipe.default_reduction_config.clone())
        .include_collections(recipe.collections.iter().map(|c| c.name.clone()))
        // The recipe's init_step is the number of the first step; a callback hook's
        // init_step is the value before its first increment.
        .init_step(recipe.init_step.wrapping_sub(1))
        .reduction_flavor(Flavor::Numpy)
        .reduction_shape(recipe.reduction_shape)
        .write_collections(recipe.collections_written_by.contains(&w))
        // Every worker's hook would write the end marker at close, and a later hook refuses
        // a finished trial: only the last worker of the recipe ends it.
        .end_marker(
            end_marker == EndMarker::Recipe
                && recipe.training_ended
                && w + 1 == recipe.worker_names.len(),
        );
    if let Some((base, per_step)) = recipe.wall_time {
        b = b.wall_time(WallTime::PerStep(Arc::new(move |g| {
            base + per_step * g as f64
        })));
    }
    for c in &recipe.collections {
        // Explicit members go in before the hook is built: a collection that a recipe
        // creates only by naming it in a tensor has no regex and would be refused empty.
        let mut c = c.clone();
        for t in &recipe.tensors {
            if t.workers.as_ref().is_none_or(|ws| ws.contains(&w))
                && t.collections.contains(&c.name)
            {
                c.add_tensor_name(t.name.clone());
            }
        }
        b = b.collection(c);
    }
    Ok(b.build()?)
}

fn write_worker(
    recipe: &Recipe,
    out: &str,
    storage: Option<&Arc<dyn Storage>>,
    w: usize,
    end_marker: EndMarker,
) -> Result<u64> {
    let mut hook = hook_for(recipe, out, storage, w, end_marker)?;
    let mine: Vec<usize> = (0..recipe.tensors.len())
        .filter(|&t| {
            let ws = &recipe.tensors[t].workers;
            ws.as_ref().is_none_or(|ws| ws.contains(&w))
        })
        .collect();
    for &t in &mine {
        hook.declare_tensor(&recipe.tensors[t].name)?;
    }
    let skip = recipe.worker_skip_steps.get(&w);
    for phase in &recipe.schedule {
        hook.set_mode(phase.mode);
        for _ in 0..phase.steps {
            hook.step()?;
            let g = hook.global_step();
            if skip.is_some_and(|s| s.contains(&g)) {
                continue;
            }
            for &t in &mine {
                let spec = &recipe.tensors[t];
                if !spec.written_by(w, phase.mode, g) || !hook.should_save(&spec.name)? {
                    continue;
                }
                let raw_due = hook.raw_due(&spec.name)?;
                let value = recipe.values(t, g, w)?;
                let forced =
                    (value.is_empty() && spec.write_empty_raw && raw_due).then(|| value.clone());
                hook.save(&spec.name, value)?;
                if let Some(v) = forced {
                    hook.write_raw_record(&spec.name, v)?;
                }
                if spec.duplicate {
                    hook.write_raw_record(&spec.name, recipe.duplicate_values(t, g, w)?)?;
                }
            }
        }
    }
    Ok(hook.close()?.records)
}
