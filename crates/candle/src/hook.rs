//! The adapter proper: a candle model's named parameters wired to an smdebug [`Hook`].

use std::collections::HashSet;

use candle_core::backprop::GradStore;
use candle_core::{Tensor as CTensor, Var};
use candle_nn::VarMap;
use smdebug_hook::{Hook, HookStats, Mode, Saved};

use crate::convert::{scalar_value, to_smdebug, Lent};
use crate::error::{CandleError, Result};
use crate::tap::Tap;

/// One registered parameter: its smdebug names and the candle variable.
#[derive(Debug, Clone)]
struct Param {
    name: String,
    grad_name: String,
    var: Var,
}

/// An smdebug [`Hook`] with a candle model registered: call [`CandleHook::step`] at the
/// start of every step (it saves the parameters when due), [`CandleHook::record_gradients`]
/// after `backward()`, [`CandleHook::record_loss`] for each loss, and
/// [`CandleHook::close`] at the end.
///
/// Names follow the PyTorch hook, so the default collections' regexes pick them up:
/// parameters by their path in the model (`fc1.weight`, optionally prefixed by the model's
/// name as PyTorch does, `Net_fc1.weight`), gradients `gradient/<parameter name>`, module
/// inputs and outputs `<module path>_input_<i>` / `<module path>_output_<i>`, losses
/// `<LossName>_output_0`.
///
/// Every call asks the hook first whether the tensor is due at this step, so a step that
/// saves nothing converts nothing.
pub struct CandleHook {
    hook: Hook,
    params: Vec<Param>,
    taps: Vec<Tap>,
    /// What the taps recorded, reused from step to step (no allocation per step).
    recorded: Vec<(std::sync::Arc<str>, CTensor)>,
}

impl std::fmt::Debug for CandleHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandleHook")
            .field("out_dir", &self.hook.out_dir())
            .field(
                "params",
                &self.params.iter().map(|p| &p.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl CandleHook {
    /// Registers every variable of `varmap` under its `VarBuilder` path (`fc1.weight`), in
    /// name order. `model_name`, if given, prefixes each name as the PyTorch hook prefixes
    /// the root module's class name (`Some("Net")` → `Net_fc1.weight`).
    pub fn new(hook: Hook, varmap: &VarMap, model_name: Option<&str>) -> Result<Self> {
        let vars: Vec<(String, Var)> = {
            // A poisoned lock only means another thread panicked while inserting; the map
            // itself is still a valid map of variables.
            let data = varmap.data().lock().unwrap_or_else(|e| e.into_inner());
            data.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        Self::with_params(hook, vars, model_name)
    }

    /// Registers explicitly named variables (for models not built from one `VarMap`).
    pub fn with_params(
        mut hook: Hook,
        params: impl IntoIterator<Item = (String, Var)>,
        model_name: Option<&str>,
    ) -> Result<Self> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (path, var) in params {
            let name = match model_name {
                Some(m) => format!("{m}_{path}"),
                None => path,
            };
            if !seen.insert(name.clone()) {
                return Err(CandleError::DuplicateName { name });
            }
            out.push(Param {
                grad_name: format!("gradient/{name}"),
                name,
                var,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        // Declared up front so the collections file lists every parameter even if training
        // stops before its first saved step.
        for p in &out {
            hook.declare_tensor(&p.name)?;
            hook.declare_tensor(&p.grad_name)?;
        }
        Ok(Self {
            hook,
            params: out,
            taps: Vec::new(),
            recorded: Vec::new(),
        })
    }

    /// The registered parameter names, sorted.
    pub fn param_names(&self) -> impl Iterator<Item = &str> {
        self.params.iter().map(|p| p.name.as_str())
    }

    /// The underlying hook (for scalars, collections, `should_stop`, ...).
    pub fn hook(&self) -> &Hook {
        &self.hook
    }

    /// The underlying hook, mutably.
    pub fn hook_mut(&mut self) -> &mut Hook {
        &mut self.hook
    }

    /// Switches between training, evaluation and prediction (gradients are never saved
    /// outside TRAIN and GLOBAL).
    pub fn set_mode(&mut self, mode: Mode) {
        self.hook.set_mode(mode);
    }

    /// Starts a step (the PyTorch hook's forward pre-hook) and saves the parameters that are
    /// due, as they are before this step's update. Returns how many tensors were saved.
    pub fn step(&mut self) -> Result<usize> {
        self.hook.step()?;
        for t in 0..self.taps.len() {
            let names = self.taps[t].names_shared();
            let mut armed = names.is_empty();
            for n in names.iter() {
                if armed {
                    break;
                }
                armed = self.hook.should_save(n)?;
            }
            self.taps[t].set_armed(armed);
        }
        let mut saved = 0;
        for i in 0..self.params.len() {
            let p = &self.params[i];
            if self.hook.should_save(&p.name)? {
                let value = to_smdebug(&p.name, p.var.as_tensor())?;
                let name = p.name.clone();
                if self.hook.save(&name, value)? == Saved::Queued {
                    saved += 1;
                }
            }
        }
        Ok(saved)
    }

    /// Whether any tensor called `name` would be saved now: lets a training loop skip
    /// computing something it only wants to record.
    pub fn is_due(&mut self, name: &str) -> Result<bool> {
        Ok(self.hook.should_save(name)?)
    }

    /// Saves the gradient of every registered parameter found in `grads` (the store
    /// returned by `loss.backward()`) as `gradient/<name>`, when due. Parameters without a
    /// gradient (unused in this step's graph) are skipped. Returns how many were saved.
    pub fn record_gradients(&mut self, grads: &GradStore) -> Result<usize> {
        let mut saved = 0;
        for i in 0..self.params.len() {
            let p = &self.params[i];
            if !self.hook.should_save(&p.grad_name)? {
                continue;
            }
            let Some(g) = grads.get(p.var.as_tensor()) else {
                continue;
            };
            let (name, g) = (p.grad_name.clone(), g.clone());
            if self.save_fresh(&name, g)? == Saved::Queued {
                saved += 1;
            }
        }
        Ok(saved)
    }

    /// Registers a [`Tap`] of [`crate::Recorded`] modules: from now on [`CandleHook::step`]
    /// arms it only at steps where one of its tensors is due.
    pub fn register_tap(&mut self, tap: &Tap) {
        self.taps.push(tap.clone());
    }

    /// Saves what the registered taps recorded since the last call (when due), and empties
    /// them. Call it after the forward pass. Returns how many tensors were saved.
    pub fn record_taps(&mut self) -> Result<usize> {
        let mut saved = 0;
        let mut recorded = std::mem::take(&mut self.recorded);
        for tap in &self.taps {
            tap.take_into(&mut recorded);
        }
        let mut result = Ok(());
        for (name, value) in recorded.drain(..) {
            if result.is_err() {
                continue;
            }
            result = match self.hook.should_save(&name) {
                Ok(false) => Ok(()),
                Ok(true) => match self.save_fresh(&name, value) {
                    Ok(s) => {
                        saved += usize::from(s == Saved::Queued);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e.into()),
            };
        }
        self.recorded = recorded;
        result.map(|()| saved)
    }

    /// Saves a tensor nothing will write to again (a module's output, a gradient from
    /// `backward`), already found due: on the CPU it is lent to the hook as a clone of the
    /// reference-counted handle, so the training thread does not copy the elements; the
    /// writer thread copies them once, when it writes them or the flight recorder keeps them,
    /// and drops the handle. A variable, which the optimizer
    /// updates in place, and a tensor on another device are copied now.
    fn save_fresh(&mut self, name: &str, t: CTensor) -> Result<Saved> {
        if t.is_variable() || !t.device().is_cpu() {
            let value = to_smdebug(name, &t)?;
            return Ok(self.hook.save(name, value)?);
        }
        Ok(self.hook.save_lent(name, Lent::new(name, t))?)
    }

    /// Saves any tensor under an explicit name, when due.
    pub fn record_tensor(&mut self, name: &str, t: &CTensor) -> Result<Saved> {
        if !self.hook.should_save(name)? {
            return Ok(Saved::NotDue);
        }
        let value = to_smdebug(name, t)?;
        Ok(self.hook.save(name, value)?)
    }

    /// Saves a module's `index`-th output as `<module>_output_<index>` (what the PyTorch
    /// hook's forward hook records), when due. candle has no forward hooks: call this
    /// after the module's forward, or wrap the module in [`crate::Recorded`].
    pub fn record_output(&mut self, module: &str, index: usize, t: &CTensor) -> Result<Saved> {
        self.record_tensor(&format!("{module}_output_{index}"), t)
    }

    /// Saves a module's `index`-th input as `<module>_input_<index>`, when due.
    pub fn record_input(&mut self, module: &str, index: usize, t: &CTensor) -> Result<Saved> {
        self.record_tensor(&format!("{module}_input_{index}"), t)
    }

    /// Saves a loss as `<loss_name>_output_0` (e.g. `CrossEntropyLoss_output_0`, in the
    /// `losses` collection by its default regex), when due. The loss must hold one value;
    /// it is saved with its own shape (0-d for candle's reductions, as PyTorch's).
    pub fn record_loss(&mut self, loss_name: &str, loss: &CTensor) -> Result<Saved> {
        let n = loss.elem_count();
        if n != 1 {
            return Err(CandleError::NotScalar {
                name: format!("{loss_name}_output_0"),
                elements: n,
            });
        }
        self.record_output(loss_name, 0, loss)
    }

    /// Saves a metric (accuracy, learning rate, ...) as the scalar `scalar/<name>`; it is
    /// written with the next step that saves anything, as smdebug does.
    pub fn save_scalar(&mut self, name: &str, value: f64) {
        self.hook.save_scalar(name, value, None);
    }

    /// Saves a one-element candle tensor as the scalar `scalar/<name>`.
    pub fn save_scalar_tensor(&mut self, name: &str, t: &CTensor) -> Result<()> {
        let v = scalar_value(name, t)?;
        self.hook.save_scalar(name, v, None);
        Ok(())
    }

    /// Whether a rule (or a person) asked the training to stop.
    pub fn should_stop(&mut self) -> bool {
        self.hook.should_stop()
    }

    /// Ends training: writes what is pending, the collections file and the end marker.
    pub fn close(self) -> Result<HookStats> {
        Ok(self.hook.close()?)
    }
}
