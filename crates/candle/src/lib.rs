//! smdebug adapter for [candle](https://github.com/huggingface/candle): register a candle
//! model with the smdebug writer hook ([`smdebug_hook::Hook`]) in a few lines, and its
//! parameters, gradients, activations and losses are saved under the names the PyTorch hook
//! gives them, so the default collections, the built-in rules and the Python smdebug
//! reader all find them.
//!
//! ```
//! use candle_core::{DType, Device, Module, Tensor};
//! use candle_nn::{linear, Optimizer, VarBuilder, VarMap, SGD};
//! use smdebug_candle::CandleHook;
//! use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};
//!
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("trial");
//! let varmap = VarMap::new();
//! let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
//! let fc1 = linear(3, 2, vb.pp("fc1"))?;
//! let hook = HookBuilder::new(out.to_str().unwrap())
//!     .save_config(SaveConfig::new(SaveConfigMode::every(2)))
//!     .include_collections(["weights", "biases", "gradients"])
//!     .build()?;
//! let mut hook = CandleHook::new(hook, &varmap, None)?;
//! let mut opt = SGD::new(varmap.all_vars(), 0.1)?;
//! let x = Tensor::ones((4, 3), DType::F32, &Device::Cpu)?;
//! hook.set_mode(Mode::Train);
//! for _ in 0..4 {
//!     hook.step()?; // saves fc1.weight and fc1.bias at steps 0 and 2
//!     let loss = fc1.forward(&x)?.sqr()?.mean_all()?;
//!     hook.record_loss("MSELoss", &loss)?; // MSELoss_output_0, in `losses`
//!     let grads = loss.backward()?;
//!     hook.record_gradients(&grads)?; // gradient/fc1.weight, gradient/fc1.bias
//!     opt.step(&grads)?;
//! }
//! hook.close()?;
//! let trial = smdebug_trial::create_trial(out.to_str().unwrap())?;
//! assert!(trial.tensor_names()?.contains(&"gradient/fc1.weight".to_string()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Names
//!
//! Parameters are named by their `VarMap` / `VarBuilder` path (`fc1.weight`), optionally
//! prefixed by a model name as PyTorch prefixes its root class name (`Net_fc1.weight`).
//! Gradients are `gradient/<parameter name>`, looked up in the `GradStore` that
//! `backward()` returns by the parameter's tensor. candle has no forward hooks: module
//! inputs and outputs (`<path>_input_0`, `<path>_output_0`) are recorded explicitly
//! ([`CandleHook::record_output`]) or by wrapping modules in [`Recorded`], which leave
//! them in a [`Tap`]. Losses are `<LossName>_output_0` (matched by the `losses`
//! collection's regex); metrics are scalars (`scalar/<name>`).
//!
//! # Features
//!
//! * `demo` (opt-in): `demo`, the small network, synthetic data and training scenarios of
//!   `smdebug demo` and of this crate's overhead bench. The CLI enables it; an application
//!   that only records its own model does not need it.
//!
//! # Cost
//!
//! Every call first asks the hook whether the tensor is due at this step, so a step that
//! saves nothing converts nothing (and a disarmed tap records nothing). A saved tensor costs
//! one copy of its elements out of candle's buffer ([`to_smdebug`]); the copy is
//! unavoidable because the writer thread owns what it writes while training updates the
//! parameters in place.
#![deny(missing_docs, unsafe_code)]

mod convert;
#[cfg(feature = "demo")]
pub mod demo;
mod error;
mod hook;
mod tap;

pub use convert::{scalar_value, to_smdebug};
pub use error::{CandleError, Result};
pub use hook::CandleHook;
pub use tap::{Recorded, Tap};
