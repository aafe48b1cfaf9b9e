//! smdebug adapter for [burn](https://burn.dev) 0.22: register a burn module with the
//! smdebug writer hook ([`smdebug_hook::Hook`]) and its parameters, gradients and losses
//! are saved under the names the PyTorch hook gives them, so the default collections, the
//! built-in rules and the Python smdebug reader all find them.
//!
//! ```
//! use burn::nn::{Linear, LinearConfig};
//! use burn::prelude::*;
//! use burn::optim::GradientsParams;
//! use smdebug_burn::BurnHook;
//! use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};
//!
//! #[derive(Module, Debug)]
//! struct Net {
//!     fc1: Linear,
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("trial");
//! let device = Device::flex().autodiff();
//! let model = Net { fc1: LinearConfig::new(3, 2).init(&device) };
//! let hook = HookBuilder::new(out.to_str().unwrap())
//!     .save_config(SaveConfig::new(SaveConfigMode::every(1)))
//!     .include_collections(["weights", "biases", "gradients", "losses"])
//!     .build()?;
//! let mut hook = BurnHook::new(hook, &model, None)?;
//! hook.set_mode(Mode::Train);
//! hook.step(&model)?; // saves fc1.weight ([in, out] = [3, 2]) and fc1.bias
//! let x = Tensor::<2>::ones([4, 3], &device);
//! let loss = model.fc1.forward(x).powf_scalar(2.0).mean();
//! hook.record_loss("MSELoss", &loss)?; // MSELoss_output_0
//! let grads = GradientsParams::from_grads(loss.backward(), &model);
//! hook.record_gradients(&model, &grads)?; // gradient/fc1.weight, gradient/fc1.bias
//! hook.close()?;
//! let trial = smdebug_trial::create_trial(out.to_str().unwrap())?;
//! let w = trial.tensor("fc1.weight")?.value(0, Mode::Train, None)?;
//! assert_eq!(w.shape(), &[3, 2]);
//! assert!(trial.tensor_names()?.contains(&"gradient/fc1.weight".to_string()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Names and gradients
//!
//! A [`burn::module::ModuleVisitor`] walks the module: the names passed to
//! `enter_module`/`exit_module` form each float parameter's path (`fc1.weight`, the struct
//! field names joined with dots, vector items by index), optionally prefixed by a model name as PyTorch prefixes its root class
//! name. Gradients are taken from the [`burn::optim::GradientsParams`] built after
//! `backward()`, by each parameter's `ParamId`, and saved as `gradient/<name>`. Note that
//! burn stores a `Linear` weight as `[in, out]` (candle and PyTorch: `[out, in]`); the
//! adapter saves it as burn holds it.
//!
//! # Cost
//!
//! Each call first asks the hook whether the tensor is due, so a step that saves nothing
//! converts nothing (the visitor is not even run). A saved tensor costs one copy out of the
//! backend (`into_data`, a device download on GPUs); the resulting `Vec` becomes the
//! ndarray's storage without another copy. `bf16`, `flex32` and quantised tensors are
//! widened to `f32` first.
#![deny(missing_docs, unsafe_code)]

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Tensor, TensorData};
use ndarray::{ArrayD, IxDyn};
use smdebug_hook::{Hook, HookStats, Mode, Saved};
use smdebug_record::TensorValue;
use thiserror::Error;

/// An error of the burn adapter, naming the tensor it happened on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BurnError {
    /// burn could not hand out a tensor's values.
    #[error("burn could not read tensor {name:?}: {message}")]
    Data {
        /// The smdebug name of the tensor.
        name: String,
        /// burn's message.
        message: String,
    },
    /// A loss or metric that should be one value has several.
    #[error("tensor {name:?} should hold one value but holds {elements}")]
    NotScalar {
        /// The smdebug name.
        name: String,
        /// Its element count.
        elements: usize,
    },
    /// Two parameters map to the same smdebug name.
    #[error("two parameters are both named {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The hook refused a call.
    #[error(transparent)]
    Hook(#[from] smdebug_hook::HookError),
}

/// The adapter's result type.
pub type Result<T, E = BurnError> = std::result::Result<T, E>;

/// Converts burn tensor data into the hook's tensor type (see the crate docs for the cost).
pub fn data_to_smdebug(name: &str, data: TensorData) -> Result<TensorValue> {
    let shape = data.shape().as_slice().to_vec();
    let err = |e: burn::tensor::DataError| BurnError::Data {
        name: name.to_owned(),
        message: format!("{e:?}"),
    };
    let value = match data.dtype() {
        DType::F64 => array(name, &shape, data.try_into_vec::<f64>().map_err(err)?)?,
        DType::F32 => array(name, &shape, data.try_into_vec::<f32>().map_err(err)?)?,
        DType::F16 => array(name, &shape, data.try_into_vec::<half::f16>().map_err(err)?)?,
        DType::I64 => array(name, &shape, data.try_into_vec::<i64>().map_err(err)?)?,
        DType::I32 => array(name, &shape, data.try_into_vec::<i32>().map_err(err)?)?,
        DType::I16 => array(name, &shape, data.try_into_vec::<i16>().map_err(err)?)?,
        DType::I8 => array(name, &shape, data.try_into_vec::<i8>().map_err(err)?)?,
        DType::U64 => array(name, &shape, data.try_into_vec::<u64>().map_err(err)?)?,
        DType::U32 => array(name, &shape, data.try_into_vec::<u32>().map_err(err)?)?,
        DType::U16 => array(name, &shape, data.try_into_vec::<u16>().map_err(err)?)?,
        DType::U8 => array(name, &shape, data.try_into_vec::<u8>().map_err(err)?)?,
        DType::Bool(_) => array(name, &shape, data.try_into_vec::<bool>().map_err(err)?)?,
        _ => {
            let wide = data.convert::<f32>();
            array(name, &shape, wide.try_into_vec::<f32>().map_err(err)?)?
        }
    };
    Ok(value)
}

/// Converts a float tensor (the autodiff wrapper included) into the hook's tensor type.
pub fn to_smdebug<const D: usize>(name: &str, t: &Tensor<D>) -> Result<TensorValue> {
    data_to_smdebug(name, t.to_data())
}

fn array<T>(name: &str, shape: &[usize], data: Vec<T>) -> Result<TensorValue>
where
    TensorValue: From<ArrayD<T>>,
{
    let a = ArrayD::from_shape_vec(IxDyn(shape), data).map_err(|e| BurnError::Data {
        name: name.to_owned(),
        message: e.to_string(),
    })?;
    Ok(TensorValue::from(a))
}

/// Collects `(path, ParamId)` of every float parameter; the path is the stack of
/// `enter_module` names (struct fields, vector indices) at the parameter.
#[derive(Default)]
struct Names {
    stack: Vec<String>,
    found: Vec<(String, ParamId)>,
}

impl ModuleVisitor for Names {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_owned());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.found.push((self.stack.join("."), param.id));
    }
}

/// Converts the due parameters (or their gradients) while walking the module.
struct Saver<'a> {
    hook: &'a mut Hook,
    names: &'a [(ParamId, String, String)],
    grads: Option<&'a GradientsParams>,
    saved: usize,
    error: Option<BurnError>,
}

impl Saver<'_> {
    fn lookup(&self, id: ParamId) -> Option<&(ParamId, String, String)> {
        self.names.iter().find(|(i, _, _)| *i == id)
    }

    fn offer(&mut self, name: &str, make: impl FnOnce() -> Option<TensorData>) {
        if self.error.is_some() {
            return;
        }
        let r = (|| -> Result<()> {
            if !self.hook.should_save(name)? {
                return Ok(());
            }
            let Some(data) = make() else {
                return Ok(());
            };
            let v = data_to_smdebug(name, data)?;
            if self.hook.save(name, v)? == Saved::Queued {
                self.saved += 1;
            }
            Ok(())
        })();
        if let Err(e) = r {
            self.error = Some(e);
        }
    }
}

impl ModuleVisitor for Saver<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let id = param.id;
        let Some((_, name, grad_name)) = self.lookup(id).cloned() else {
            return;
        };
        match self.grads {
            None => self.offer(&name, || Some(param.val().to_data())),
            Some(g) => self.offer(&grad_name, || g.get::<D>(id).map(|t| t.into_data())),
        }
    }
}

/// An smdebug [`Hook`] with a burn module registered: call [`BurnHook::step`] at the start
/// of every step (saves the due parameters), [`BurnHook::record_gradients`] after
/// `backward()`, [`BurnHook::record_loss`] for each loss and [`BurnHook::close`] at the end.
pub struct BurnHook {
    hook: Hook,
    /// (id, name, gradient name), in visiting order.
    names: Vec<(ParamId, String, String)>,
}

impl std::fmt::Debug for BurnHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BurnHook")
            .field("out_dir", &self.hook.out_dir())
            .field(
                "params",
                &self.names.iter().map(|n| &n.1).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl BurnHook {
    /// Registers every float parameter of `module` under its path; `model_name`, if given,
    /// prefixes each name as PyTorch prefixes the root class name (`Net_fc1.weight`).
    pub fn new<M: Module>(mut hook: Hook, module: &M, model_name: Option<&str>) -> Result<Self> {
        let mut v = Names::default();
        module.visit(&mut v);
        let mut names: Vec<(ParamId, String, String)> = Vec::new();
        for (path, id) in v.found {
            let name = match model_name {
                Some(m) => format!("{m}_{path}"),
                None => path,
            };
            if names.iter().any(|n| n.1 == name) {
                return Err(BurnError::DuplicateName { name });
            }
            let grad = format!("gradient/{name}");
            hook.declare_tensor(&name)?;
            hook.declare_tensor(&grad)?;
            names.push((id, name, grad));
        }
        Ok(Self { hook, names })
    }

    /// The registered parameter names, in module order.
    pub fn param_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| n.1.as_str())
    }

    /// The underlying hook.
    pub fn hook(&self) -> &Hook {
        &self.hook
    }

    /// The underlying hook, mutably.
    pub fn hook_mut(&mut self) -> &mut Hook {
        &mut self.hook
    }

    /// Switches between TRAIN, EVAL and PREDICT (gradients are never saved in EVAL/PREDICT).
    pub fn set_mode(&mut self, mode: Mode) {
        self.hook.set_mode(mode);
    }

    fn any_due(&mut self, grads: bool) -> Result<bool> {
        for i in 0..self.names.len() {
            let n = if grads {
                self.names[i].2.clone()
            } else {
                self.names[i].1.clone()
            };
            if self.hook.should_save(&n)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn walk<M: Module>(&mut self, module: &M, grads: Option<&GradientsParams>) -> Result<usize> {
        if !self.any_due(grads.is_some())? {
            return Ok(0);
        }
        let mut s = Saver {
            hook: &mut self.hook,
            names: &self.names,
            grads,
            saved: 0,
            error: None,
        };
        module.visit(&mut s);
        match s.error {
            Some(e) => Err(e),
            None => Ok(s.saved),
        }
    }

    /// Starts a step and saves the due parameters of `module` (the registered module, in
    /// its current state, before this step's update). Returns how many were saved.
    pub fn step<M: Module>(&mut self, module: &M) -> Result<usize> {
        self.hook.step()?;
        self.walk(module, None)
    }

    /// Saves the due gradients found in `grads` as `gradient/<name>`.
    pub fn record_gradients<M: Module>(
        &mut self,
        module: &M,
        grads: &GradientsParams,
    ) -> Result<usize> {
        self.walk(module, Some(grads))
    }

    /// Saves any float tensor under an explicit name, when due (module outputs:
    /// `<path>_output_0`; burn has no forward hooks).
    pub fn record_tensor<const D: usize>(&mut self, name: &str, t: &Tensor<D>) -> Result<Saved> {
        if !self.hook.should_save(name)? {
            return Ok(Saved::NotDue);
        }
        let v = to_smdebug(name, t)?;
        Ok(self.hook.save(name, v)?)
    }

    /// Saves a loss as `<loss_name>_output_0` (in the `losses` collection), when due.
    pub fn record_loss<const D: usize>(
        &mut self,
        loss_name: &str,
        loss: &Tensor<D>,
    ) -> Result<Saved> {
        let name = format!("{loss_name}_output_0");
        let n = loss.shape().num_elements();
        if n != 1 {
            return Err(BurnError::NotScalar { name, elements: n });
        }
        self.record_tensor(&name, loss)
    }

    /// Saves a metric as the scalar `scalar/<name>`.
    pub fn save_scalar(&mut self, name: &str, value: f64) {
        self.hook.save_scalar(name, value, None);
    }

    /// Whether a rule asked the training to stop.
    pub fn should_stop(&mut self) -> bool {
        self.hook.should_stop()
    }

    /// Ends training (pending tensors, collections file, end marker).
    pub fn close(self) -> Result<HookStats> {
        Ok(self.hook.close()?)
    }
}
