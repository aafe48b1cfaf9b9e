//! The demo network of `smdebug demo` and of the overhead benchmark: a small MLP trained
//! on synthetic classification data, in one of several scenarios that each produce a
//! training problem honestly, through the training setup (never by writing bad values
//! into the trial).
//!
//! ```
//! use smdebug_candle::demo::{Demo, Scenario};
//!
//! let mut demo = Demo::new(Scenario::Healthy, 7)?;
//! let first = demo.train_step(None)?.loss;
//! for _ in 0..20 {
//!     demo.train_step(None)?;
//! }
//! assert!(demo.train_step(None)?.loss < first);
//! # Ok::<(), smdebug_candle::CandleError>(())
//! ```

use candle_core::{DType, Device, Module, Tensor as CTensor, Var};
use candle_nn::{Linear, Optimizer, VarMap, SGD};
use smdebug_config::Reduction;
use smdebug_hook::{Collection, HookBuilder, Mode, ReductionConfig, SaveConfig, SaveConfigMode};

use crate::error::{CandleError, Result};
use crate::hook::CandleHook;
use crate::tap::{Recorded, Tap};

/// Input features of the synthetic data.
pub const FEATURES: usize = 20;
/// Classes of the synthetic data.
pub const CLASSES: usize = 4;
/// The loss module's name, as PyTorch would name `nn.CrossEntropyLoss`.
pub const LOSS_NAME: &str = "CrossEntropyLoss";
/// The loss tensor's smdebug name.
pub const LOSS_TENSOR: &str = "CrossEntropyLoss_output_0";
/// Spread of the class centres: classes overlap, so the loss has a floor well above 0.
/// With 4096 training samples for a network of 276 parameters the healthy run does not
/// overfit within the default 200 steps (a log-loss's training optimism is about
/// parameters / samples); smaller sets or wider layers do, measurably, by Overfit's 10 %.
const CENTRE_STD: f64 = 0.35;

/// The TRAIN save interval of [`Demo::hook_builder`].
pub const TRAIN_SAVE_INTERVAL: i64 = 5;
/// Training steps between two evaluation steps.
pub const EVAL_EVERY: u64 = 25;

/// A training setup of the demo, each producing one condition a built-in rule detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// He-initialised ReLU MLP (8-8), 4096 samples, full-batch SGD at a moderate learning
    /// rate: nothing fires with the default seed and 200 steps.
    Healthy,
    /// Seven sigmoid layers (16 wide) initialised with tiny weights: the first layers' gradients
    /// vanish (VanishingGradient).
    VanishingGradient,
    /// Learning rate 10⁴: weights and activations overflow to ±Inf/NaN (ExplodingTensor).
    Exploding,
    /// First-layer biases initialised at −10: every ReLU is off (DeadRelu).
    DeadRelu,
    /// Learning rate 0: the loss never moves (LossNotDecreasing).
    StalledLoss,
    /// 12 training samples, a wide network, many steps: the validation loss runs away
    /// from the training loss (Overfit).
    Overfit,
    /// Unit-variance N(0, 1) weights without fan-in scaling: the second layer's
    /// pre-activation variance is tens of times the first's (PoorWeightInitialization).
    PoorInitialization,
    /// tanh MLP fed raw, un-normalised features (offset 50): most tanh units sit outside
    /// (−9.5, 9.5) on every sample (SaturatedActivation).
    SaturatedActivation,
    /// The healthy setup, but at TRAIN step [`NAN_STEP`] one training sample arrives with a
    /// NaN feature (a corrupt record in the batch): the NaN runs through the activations,
    /// the loss and the gradients into every weight (ExplodingTensor; the flight recorder
    /// keeps the steps before it, `smdebug health` names the step).
    NanAtStep,
}

/// The TRAIN step at which [`Scenario::NanAtStep`] feeds the NaN (not a multiple of
/// [`TRAIN_SAVE_INTERVAL`]: only the flight recorder keeps it in full).
pub const NAN_STEP: u64 = 137;

impl Scenario {
    /// Every scenario, healthy first.
    pub const ALL: [Scenario; 9] = [
        Scenario::Healthy,
        Scenario::VanishingGradient,
        Scenario::Exploding,
        Scenario::DeadRelu,
        Scenario::StalledLoss,
        Scenario::Overfit,
        Scenario::PoorInitialization,
        Scenario::SaturatedActivation,
        Scenario::NanAtStep,
    ];

    /// The name used on the command line (`vanishing-gradient`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Healthy => "healthy",
            Scenario::VanishingGradient => "vanishing-gradient",
            Scenario::Exploding => "exploding",
            Scenario::DeadRelu => "dead-relu",
            Scenario::StalledLoss => "stalled-loss",
            Scenario::Overfit => "overfit",
            Scenario::PoorInitialization => "poor-initialization",
            Scenario::SaturatedActivation => "saturated-activation",
            Scenario::NanAtStep => "nan-at-step",
        }
    }

    /// The scenario called `name` (see [`Scenario::name`]).
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The built-in rule that should detect it (`None` for the healthy run).
    pub fn expected_rule(self) -> Option<&'static str> {
        match self {
            Scenario::Healthy => None,
            Scenario::VanishingGradient => Some("VanishingGradient"),
            Scenario::Exploding => Some("ExplodingTensor"),
            Scenario::DeadRelu => Some("DeadRelu"),
            Scenario::StalledLoss => Some("LossNotDecreasing"),
            Scenario::Overfit => Some("Overfit"),
            Scenario::PoorInitialization => Some("PoorWeightInitialization"),
            Scenario::SaturatedActivation => Some("SaturatedActivation"),
            Scenario::NanAtStep => Some("ExplodingTensor"),
        }
    }

    /// One line saying how the condition is produced.
    pub fn description(self) -> &'static str {
        match self {
            Scenario::Healthy => "ReLU MLP 8-8, He init, 4096 samples, full-batch SGD lr 0.1",
            Scenario::VanishingGradient => "7 sigmoid layers 16 wide, weights N(0, 0.01²)",
            Scenario::Exploding => "ReLU MLP 64-64, learning rate 1e4",
            Scenario::DeadRelu => "ReLU MLP, first-layer biases −10",
            Scenario::StalledLoss => "ReLU MLP, learning rate 0",
            Scenario::Overfit => "ReLU MLP 256-256, 12 training samples",
            Scenario::PoorInitialization => {
                "ReLU MLP 64-64, weights N(0, 1) without fan-in scaling"
            }
            Scenario::NanAtStep => {
                "healthy ReLU MLP; one sample's feature is NaN at TRAIN step 137"
            }
            Scenario::SaturatedActivation => "tanh MLP on raw features offset by 50",
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Relu,
    Sigmoid,
    Tanh,
}

impl Act {
    fn name(self) -> &'static str {
        match self {
            Act::Relu => "relu",
            Act::Sigmoid => "sigmoid",
            Act::Tanh => "tanh",
        }
    }
}

impl Module for Act {
    fn forward(&self, xs: &CTensor) -> candle_core::Result<CTensor> {
        match self {
            Act::Relu => xs.relu(),
            Act::Sigmoid => candle_nn::ops::sigmoid(xs),
            Act::Tanh => xs.tanh(),
        }
    }
}

/// SplitMix64 with Box–Muller: deterministic data and initial weights from the seed alone,
/// independent of candle's device RNG.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    fn normals(&mut self, n: usize, std: f64) -> Vec<f32> {
        (0..n).map(|_| (self.normal() * std) as f32).collect()
    }
}

struct Layer {
    linear: Linear,
    act: Option<Recorded<Act>>,
}

/// Sizes, initialisation and optimiser settings of a scenario.
struct Setup {
    hidden: Vec<usize>,
    act: Act,
    /// Weight std of layer `k` given its fan-in.
    weight_std: fn(usize) -> f64,
    first_bias: f32,
    lr: f64,
    train_samples: usize,
    input_offset: f32,
}

impl Setup {
    fn of(s: Scenario) -> Setup {
        let he = |fan_in: usize| (2.0 / fan_in as f64).sqrt();
        let base = Setup {
            hidden: vec![8, 8],
            act: Act::Relu,
            weight_std: he,
            first_bias: 0.0,
            lr: 0.1,
            train_samples: 4096,
            input_offset: 0.0,
        };
        match s {
            Scenario::Healthy | Scenario::NanAtStep => base,
            Scenario::VanishingGradient => Setup {
                hidden: vec![16; 7],
                act: Act::Sigmoid,
                train_samples: 1024,
                weight_std: |_| 0.01,
                ..base
            },
            Scenario::Exploding => Setup {
                hidden: vec![64, 64],
                train_samples: 1024,
                lr: 1e4,
                ..base
            },
            Scenario::DeadRelu => Setup {
                first_bias: -10.0,
                ..base
            },
            Scenario::StalledLoss => Setup { lr: 0.0, ..base },
            Scenario::Overfit => Setup {
                hidden: vec![256, 256],
                train_samples: 12,
                lr: 0.2,
                ..base
            },
            Scenario::PoorInitialization => Setup {
                hidden: vec![64, 64],
                train_samples: 1024,
                weight_std: |_| 1.0,
                lr: 0.001,
                ..base
            },
            Scenario::SaturatedActivation => Setup {
                act: Act::Tanh,
                weight_std: |fan_in| (1.0 / fan_in as f64).sqrt(),
                input_offset: 50.0,
                ..base
            },
        }
    }
}

/// What one step computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// The mean cross-entropy loss.
    pub loss: f32,
    /// The fraction of samples classified right.
    pub accuracy: f32,
}

/// The demo network, its data and its optimiser.
pub struct Demo {
    scenario: Scenario,
    varmap: VarMap,
    layers: Vec<Layer>,
    tap: Tap,
    opt: SGD,
    train_x: CTensor,
    train_y: CTensor,
    val_x: CTensor,
    val_y: CTensor,
    /// Training steps done.
    train_steps: u64,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo")
            .field("scenario", &self.scenario)
            .field("layers", &self.layers.len())
            .finish()
    }
}

fn ce(what: &str) -> impl Fn(candle_core::Error) -> CandleError + '_ {
    move |source| CandleError::Candle {
        name: what.to_owned(),
        source,
    }
}

/// Draws `n` samples: class centres N(0, 0.35²) per feature, unit-variance noise around them,
/// class frequencies 40/30/20/10 % (unbalanced, so the output bias has a real gradient),
/// plus `offset` on every feature.
fn dataset(
    rng: &mut Rng,
    centres: &[f32],
    n: usize,
    offset: f32,
    dev: &Device,
) -> Result<(CTensor, CTensor)> {
    let mut xs = Vec::with_capacity(n * FEATURES);
    let mut ys = Vec::with_capacity(n);
    for _ in 0..n {
        let u = rng.uniform();
        let class = if u < 0.4 {
            0
        } else if u < 0.7 {
            1
        } else if u < 0.9 {
            2
        } else {
            3
        };
        for f in 0..FEATURES {
            xs.push(centres[class * FEATURES + f] + rng.normal() as f32 + offset);
        }
        ys.push(class as u32);
    }
    let x = CTensor::from_vec(xs, (n, FEATURES), dev).map_err(ce("data"))?;
    let y = CTensor::from_vec(ys, n, dev).map_err(ce("labels"))?;
    Ok((x, y))
}

impl Demo {
    /// Builds the network and data of `scenario` from `seed` (same seed, same run).
    pub fn new(scenario: Scenario, seed: u64) -> Result<Self> {
        let setup = Setup::of(scenario);
        let dev = Device::Cpu;
        let mut rng = Rng(seed);
        let centres = rng.normals(CLASSES * FEATURES, CENTRE_STD);
        let (train_x, train_y) = dataset(
            &mut rng,
            &centres,
            setup.train_samples,
            setup.input_offset,
            &dev,
        )?;
        let (val_x, val_y) = dataset(&mut rng, &centres, 512, setup.input_offset, &dev)?;

        let varmap = VarMap::new();
        let tap = Tap::new();
        let mut layers = Vec::new();
        let mut vars = Vec::new();
        let mut fan_in = FEATURES;
        let widths: Vec<usize> = setup.hidden.iter().copied().chain([CLASSES]).collect();
        for (k, &out) in widths.iter().enumerate() {
            let path = format!("layer{}", k + 1);
            let std = (setup.weight_std)(fan_in);
            let w = CTensor::from_vec(rng.normals(out * fan_in, std), (out, fan_in), &dev)
                .map_err(ce("init"))?;
            let bias = if k == 0 { setup.first_bias } else { 0.0 };
            let b = CTensor::from_vec(vec![bias; out], out, &dev).map_err(ce("init"))?;
            let w = Var::from_tensor(&w).map_err(ce("init"))?;
            let b = Var::from_tensor(&b).map_err(ce("init"))?;
            {
                let mut data = varmap.data().lock().unwrap_or_else(|e| e.into_inner());
                data.insert(format!("{path}.fc.weight"), w.clone());
                data.insert(format!("{path}.fc.bias"), b.clone());
            }
            let linear = Linear::new(w.as_tensor().clone(), Some(b.as_tensor().clone()));
            vars.push(w);
            vars.push(b);
            let hidden = k + 1 < widths.len();
            let act = hidden.then(|| {
                let name = format!("{path}.{}", setup.act.name());
                Recorded::new(setup.act, &name, &tap, true)
            });
            layers.push(Layer { linear, act });
            fan_in = out;
        }
        let opt = SGD::new(vars, setup.lr).map_err(ce("optimizer"))?;
        Ok(Self {
            scenario,
            varmap,
            layers,
            tap,
            opt,
            train_x,
            train_y,
            val_x,
            val_y,
            train_steps: 0,
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> Scenario {
        self.scenario
    }

    /// The model's variables, named `layer<k>.fc.weight` / `layer<k>.fc.bias`.
    pub fn varmap(&self) -> &VarMap {
        &self.varmap
    }

    /// The tap the activation wrappers record `layer<k>.<act>_input_0` / `_output_0` into.
    pub fn tap(&self) -> &Tap {
        &self.tap
    }

    /// The reductions of the overhead benchmark's "reductions every step" case: min, max,
    /// mean, std and the L2 norm of every tensor saved, without raw values.
    pub fn reductions_only() -> ReductionConfig {
        ReductionConfig {
            reductions: vec![
                Reduction::Min,
                Reduction::Max,
                Reduction::Mean,
                Reduction::Std,
            ],
            norms: vec![Reduction::L2],
            save_raw_tensor: false,
            ..Default::default()
        }
    }

    /// The demo's hook configuration: weights, biases, gradients and losses every
    /// [`TRAIN_SAVE_INTERVAL`] TRAIN steps and every EVAL step, and the activation
    /// collections the activation rules read (`relu_input`, `relu_output`, `tanh_input`,
    /// `sigmoid_input`, as the SageMaker rule configs name them).
    pub fn hook_builder(out: &str) -> Result<HookBuilder> {
        let mut b = HookBuilder::new(out).save_config(SaveConfig::from_modes([
            (
                Mode::Train,
                Some(SaveConfigMode::every(TRAIN_SAVE_INTERVAL)),
            ),
            (Mode::Eval, Some(SaveConfigMode::every(1))),
            (Mode::Predict, Some(SaveConfigMode::every(1))),
            (
                Mode::Global,
                Some(SaveConfigMode::every(TRAIN_SAVE_INTERVAL)),
            ),
        ]));
        let activations = ["relu_input", "relu_output", "tanh_input", "sigmoid_input"];
        for c in activations {
            let mut coll = Collection::new(c);
            coll.include(&format!(".*{c}"))
                .map_err(|e| CandleError::Config {
                    collection: c.to_owned(),
                    message: e.to_string(),
                })?;
            b = b.collection(coll);
        }
        // One call: each call replaces the list.
        let included = ["weights", "biases", "gradients", "losses"]
            .into_iter()
            .chain(activations);
        b = b.include_collections(included);
        Ok(b)
    }

    /// Registers the demo network with `hook` (parameters and activation tap).
    pub fn register(&self, hook: smdebug_hook::Hook) -> Result<CandleHook> {
        let mut h = CandleHook::new(hook, &self.varmap, None)?;
        h.register_tap(&self.tap);
        Ok(h)
    }

    fn forward(&self, x: &CTensor) -> Result<CTensor> {
        let mut h = x.clone();
        for l in &self.layers {
            h = l.linear.forward(&h).map_err(ce("forward"))?;
            if let Some(a) = &l.act {
                h = a.forward(&h).map_err(ce("forward"))?;
            }
        }
        Ok(h)
    }

    fn outcome(logits: &CTensor, y: &CTensor, loss: &CTensor) -> Result<StepOutcome> {
        let loss_v = loss.to_scalar::<f32>().map_err(ce(LOSS_TENSOR))?;
        let right = logits
            .argmax(1)
            .and_then(|p| p.eq(y))
            .and_then(|e| e.to_dtype(DType::F32))
            .and_then(|e| e.mean_all())
            .and_then(|m| m.to_scalar::<f32>())
            .map_err(ce("accuracy"))?;
        Ok(StepOutcome {
            loss: loss_v,
            accuracy: right,
        })
    }

    /// One full-batch training step (TRAIN mode when a hook is given): forward, loss,
    /// backward, SGD update; the hook saves what is due.
    pub fn train_step(&mut self, mut hook: Option<&mut CandleHook>) -> Result<StepOutcome> {
        if let Some(h) = hook.as_deref_mut() {
            if h.hook().mode() != Mode::Train {
                h.set_mode(Mode::Train);
            }
            h.step()?;
        }
        let x = if self.scenario == Scenario::NanAtStep && self.train_steps == NAN_STEP {
            // The corrupt record: sample 0's first feature.
            let (n, f) = self.train_x.dims2().map_err(ce("data"))?;
            let mut v = self
                .train_x
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(ce("data"))?;
            v[0] = f32::NAN;
            CTensor::from_vec(v, (n, f), self.train_x.device()).map_err(ce("data"))?
        } else {
            self.train_x.clone()
        };
        self.train_steps += 1;
        let logits = self.forward(&x)?;
        let loss =
            candle_nn::loss::cross_entropy(&logits, &self.train_y).map_err(ce(LOSS_TENSOR))?;
        let grads = loss.backward().map_err(ce("backward"))?;
        let out = Self::outcome(&logits, &self.train_y, &loss)?;
        if let Some(h) = hook {
            h.record_taps()?;
            h.record_loss(LOSS_NAME, &loss)?;
            h.record_gradients(&grads)?;
            h.save_scalar("train_accuracy", f64::from(out.accuracy));
        } else {
            // Without a hook nothing would empty the tap.
            self.tap.set_armed(false);
            self.tap.clear();
        }
        self.opt.step(&grads).map_err(ce("optimizer"))?;
        Ok(out)
    }

    /// One evaluation step on the validation set (EVAL mode when a hook is given).
    pub fn eval_step(&mut self, mut hook: Option<&mut CandleHook>) -> Result<StepOutcome> {
        if let Some(h) = hook.as_deref_mut() {
            if h.hook().mode() != Mode::Eval {
                h.set_mode(Mode::Eval);
            }
            h.step()?;
        }
        let logits = self.forward(&self.val_x)?;
        let loss = candle_nn::loss::cross_entropy(&logits, &self.val_y).map_err(ce(LOSS_TENSOR))?;
        let out = Self::outcome(&logits, &self.val_y, &loss)?;
        if let Some(h) = hook {
            h.record_taps()?;
            h.record_loss(LOSS_NAME, &loss)?;
            h.save_scalar("val_accuracy", f64::from(out.accuracy));
        } else {
            self.tap.set_armed(false);
            self.tap.clear();
        }
        Ok(out)
    }
}
