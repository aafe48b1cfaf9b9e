//! [`SaveDecisions`]: which collections a tensor belongs to, which of them are due at a
//! step, and what they ask to write of it (smdebug's collections × save configs × reduction
//! configs). Pure decisions on the training thread: no I/O, no queue.

use crate::error::{HookError, Result};
use crate::tensorboard::clean_tag;
use smdebug_config::keys::{
    GRADIENTS, NON_HISTOGRAM_COLLECTIONS, NON_REDUCTION_COLLECTIONS, OPTIMIZER_VARIABLES,
    SCALAR_COLLECTIONS,
};
use smdebug_config::{
    Collection, CollectionManager, HealthSummary, Mode, ReductionConfig, SaveConfig,
};
use smdebug_reduce::ReductionRequest;
use std::collections::HashMap;

/// A saved collection as prepared at the first step: its configs resolved against the
/// hook's.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The collection's name.
    pub name: String,
    /// Its own save config, with the modes it leaves out taken from the hook's.
    pub save_config: SaveConfig,
    /// Its own reduction config, else the hook's (raw-only for losses and metrics).
    pub reduction: ReductionConfig,
    /// Whether its tensors get TensorBoard histograms (never for `NON_HISTOGRAM_COLLECTIONS`).
    pub save_histogram: bool,
    /// A scalar collection (losses, metrics, ...): no reductions, TensorBoard scalars.
    pub scalar: bool,
    /// Gradients and optimizer variables are never saved in EVAL and PREDICT.
    pub train_only: bool,
}

/// What the due collections of a tensor ask to write of it at this step
/// ([`SaveDecisions::plan`]).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Write its shape into the index (some collection has `save_shape`).
    pub shape: bool,
    /// Write its raw value (some collection has `save_raw_tensor`).
    pub raw: bool,
    /// The reductions to compute, each once, in the order the collections name them.
    pub reductions: Vec<ReductionRequest>,
    /// The TensorBoard histogram tag of the first collection that draws histograms, when
    /// histograms were asked for.
    pub histogram: Option<String>,
    /// Some due collection is a scalar collection.
    pub scalar: bool,
    /// The most any due collection asks of the health summary.
    pub health: HealthSummary,
}

/// The save decisions of one hook: the collections, the hook's default configs, and the
/// caches that make a decision cheap after the first one per tensor and per step.
#[derive(Debug)]
pub(crate) struct SaveDecisions {
    /// Every collection; after the first step with its resolved configs, and with the
    /// tensor names matched so far (written to the collections file).
    cm: CollectionManager,
    /// Names of the framework's default collections, which may be empty without being
    /// refused at the first step.
    framework_defaults: Vec<String>,
    /// Names of the collections to save (the framework's always-included ones, the
    /// builder's, `include_collection`'s).
    include: Vec<String>,
    /// The hook's save config: for collections without one, and the modes theirs leave out.
    hook_save_config: SaveConfig,
    /// The hook's reduction config, for collections without one.
    hook_reduction: ReductionConfig,
    /// The saved collections, resolved at the first step (`None` before).
    prepared: Option<Vec<Prepared>>,
    /// Indices into `prepared` of the collections containing each tensor name seen.
    tensor_colls: HashMap<String, Vec<usize>>,
    /// Indices into `prepared` of the collections due at the current step (`None`: not
    /// computed yet for this step and mode).
    step_colls: Option<Vec<usize>>,
}

impl SaveDecisions {
    /// The decisions over `cm`, saving the collections named in `include`. Refuses a
    /// reduction config smdebug would refuse (see [`ReductionConfig::validate`]).
    pub fn new(
        cm: CollectionManager,
        framework_defaults: Vec<String>,
        include: Vec<String>,
        hook_save_config: SaveConfig,
        hook_reduction: ReductionConfig,
    ) -> Result<Self> {
        let d = SaveDecisions {
            cm,
            framework_defaults,
            include,
            hook_save_config,
            hook_reduction,
            prepared: None,
            tensor_colls: HashMap::new(),
            step_colls: None,
        };
        d.validate_reductions()?;
        Ok(d)
    }

    /// Every reduction config, the hook's and each collection's, holds only what smdebug
    /// accepts; the error names the collection.
    fn validate_reductions(&self) -> Result<()> {
        self.hook_reduction.validate("reduction_config")?;
        for c in self.cm.collections() {
            if let Some(r) = &c.reduction_config {
                r.validate("reduction_config")
                    .map_err(|e| e.in_collection(&c.name))?;
            }
        }
        Ok(())
    }

    /// The collections.
    pub fn collections(&self) -> &CollectionManager {
        &self.cm
    }

    /// The collection called `name`, created if missing.
    pub fn collection_mut(&mut self, name: &str) -> &mut Collection {
        self.cm.get_or_create(name)
    }

    /// Adds a collection to the saved ones (seen only before the first step).
    pub fn include(&mut self, name: &str) {
        if !self.include.iter().any(|n| n == name) {
            self.include.push(name.to_owned());
        }
    }

    /// Forgets which collections are due: the step or the mode changed.
    pub fn new_step(&mut self) {
        self.step_colls = None;
    }

    /// The saved collections (empty before the first step).
    pub fn prepared(&self) -> &[Prepared] {
        self.prepared.as_deref().unwrap_or(&[])
    }

    fn prepared_index(&self, name: &str) -> Option<usize> {
        self.prepared().iter().position(|p| p.name == name)
    }

    /// `_prepare_collections`: checks user collections, picks the saved ones, and resolves
    /// each collection's save config (own modes, the hook's for the rest) and reduction
    /// config (forced raw-only for loss/metric collections). Once; later calls do nothing.
    pub fn prepare(&mut self) -> Result<()> {
        if self.prepared.is_some() {
            return Ok(());
        }
        // Collections may have been changed through `Hook::get_collection` since the hook
        // was built.
        self.validate_reductions()?;
        let save_all = self.include.iter().any(|n| n == smdebug_config::keys::ALL);
        let mut prepared = Vec::new();
        for c in self.cm.collections_mut() {
            let is_default = self.framework_defaults.contains(&c.name);
            if !is_default && c.include_regex().is_empty() && c.tensor_names.is_empty() {
                return Err(HookError::InvalidCollectionConfiguration {
                    name: c.name.clone(),
                });
            }
            if NON_HISTOGRAM_COLLECTIONS.contains(&c.name.as_str()) {
                c.save_histogram = false;
            }
            match &mut c.save_config {
                None => c.save_config = Some(self.hook_save_config.clone()),
                Some(own) => own.merge_default(&self.hook_save_config),
            }
            if NON_REDUCTION_COLLECTIONS.contains(&c.name.as_str()) {
                c.reduction_config = Some(ReductionConfig::raw_only());
            } else if c.reduction_config.is_none() {
                c.reduction_config = Some(self.hook_reduction.clone());
            }
            let saved = save_all || self.include.contains(&c.name);
            if saved {
                prepared.push(Prepared {
                    name: c.name.clone(),
                    save_config: c.save_config.clone().unwrap_or_default(),
                    reduction: c.reduction_config.clone().unwrap_or_default(),
                    save_histogram: c.save_histogram,
                    scalar: SCALAR_COLLECTIONS.contains(&c.name.as_str()),
                    train_only: c.name == GRADIENTS || c.name == OPTIMIZER_VARIABLES,
                });
            }
        }
        self.prepared = Some(prepared);
        Ok(())
    }

    /// The saved collections due at step `mode_step` of `mode` (cached until
    /// [`SaveDecisions::new_step`]).
    pub fn due(&mut self, mode: Mode, mode_step: i64) -> Result<&[usize]> {
        if self.step_colls.is_none() {
            let eval = matches!(mode, Mode::Eval | Mode::Predict);
            let mut due = Vec::new();
            for (i, p) in self.prepared().iter().enumerate() {
                if eval && p.train_only {
                    continue;
                }
                let yes = p
                    .save_config
                    .should_save(mode, mode_step)
                    .map_err(|source| HookError::SaveConfig {
                        collection: p.name.clone(),
                        mode,
                        step: mode_step,
                        source,
                    })?;
                if yes {
                    due.push(i);
                }
            }
            self.step_colls = Some(due);
        }
        Ok(self.step_colls.as_deref().unwrap_or(&[]))
    }

    /// The saved collections a tensor belongs to (`_get_collections_with_tensor`), cached
    /// for the hook's life; a regex match adds the name to the collection's tensor names.
    pub fn containing(&mut self, name: &str) -> Result<&[usize]> {
        if !self.tensor_colls.contains_key(name) {
            let mut found = Vec::new();
            let names: Vec<String> = self.prepared().iter().map(|p| p.name.clone()).collect();
            for (i, cname) in names.iter().enumerate() {
                let Some(c) = self.cm.get_mut(cname) else {
                    continue;
                };
                if c.has_tensor_name(name) {
                    found.push(i);
                } else if c.matches_regex(name)? {
                    c.add_tensor_name(name);
                    found.push(i);
                }
            }
            self.tensor_colls.insert(name.to_owned(), found);
        }
        Ok(self.tensor_colls.get(name).map_or(&[], Vec::as_slice))
    }

    /// The saved collections containing `name` that are due at step `mode_step` of `mode`.
    pub fn saving(&mut self, name: &str, mode: Mode, mode_step: i64) -> Result<Vec<usize>> {
        if self.due(mode, mode_step)?.is_empty() {
            return Ok(Vec::new());
        }
        self.containing(name)?;
        // Both cached now: no copy of the step's list per tensor.
        let step = self.step_colls.as_deref().unwrap_or(&[]);
        let t = self.tensor_colls.get(name).map_or(&[][..], Vec::as_slice);
        Ok(t.iter().copied().filter(|i| step.contains(i)).collect())
    }

    /// Whether one of the collections `saving` saves raw values.
    pub fn raw(&self, saving: &[usize]) -> bool {
        let prepared = self.prepared();
        saving
            .iter()
            .any(|&i| prepared[i].reduction.save_raw_tensor)
    }

    /// What the collections `saving` (from [`SaveDecisions::saving`]) ask to write of tensor
    /// `name`; the histogram tag only when `histograms` (TensorBoard output is on).
    pub fn plan(&self, name: &str, saving: &[usize], histograms: bool) -> Plan {
        let prepared = self.prepared();
        let mut plan = Plan::default();
        for &i in saving {
            let p = &prepared[i];
            let rc = &p.reduction;
            plan.shape |= rc.save_shape;
            plan.raw |= rc.save_raw_tensor;
            plan.health = plan.health.max(rc.health);
            if p.scalar {
                plan.scalar = true;
            } else {
                for req in rc.requests() {
                    if !plan.reductions.contains(&req) {
                        plan.reductions.push(req);
                    }
                }
            }
            if histograms
                && plan.histogram.is_none()
                && p.save_histogram
                && !NON_HISTOGRAM_COLLECTIONS.contains(&p.name.as_str())
            {
                plan.histogram = Some(clean_tag(&format!("{}/{}", p.name, name)));
            }
        }
        plan
    }

    /// Adds custom tensor `name` to collection `collection` (created if missing) and says
    /// whether its raw value is written: as the prepared collection says, else as the
    /// collection's own reduction config, else the hook's.
    pub fn add_custom(&mut self, name: &str, collection: &str) -> bool {
        let prepared_raw = self
            .prepared_index(collection)
            .map(|i| self.prepared()[i].reduction.save_raw_tensor);
        let c = self.cm.get_or_create(collection);
        c.add_tensor_name(name.to_owned());
        prepared_raw.unwrap_or_else(|| {
            c.reduction_config
                .as_ref()
                .unwrap_or(&self.hook_reduction)
                .save_raw_tensor
        })
    }

    /// Declares a tensor name before training (see [`crate::Hook::declare_tensor`]): the
    /// names of the saved collections containing it.
    pub fn declare(&mut self, name: &str) -> Result<Vec<String>> {
        self.prepare()?;
        let idx = self.containing(name)?.to_vec();
        Ok(idx
            .into_iter()
            .map(|i| self.prepared()[i].name.clone())
            .collect())
    }
}
