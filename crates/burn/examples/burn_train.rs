//! An ordinary burn training loop with smdebug: a two-layer MLP on synthetic regression
//! data (flex backend with autodiff), the hook saving weights, biases, gradients and losses
//! every 10 steps.
//!
//! `cargo run -p smdebug-burn --example burn_train -- /tmp/burn-trial`

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use smdebug_burn::BurnHook;
use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};

#[derive(Module, Debug)]
struct Mlp {
    fc1: Linear,
    relu: Relu,
    fc2: Linear,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/smdebug-burn-example".into());
    let device = Device::flex().autodiff();
    let mut model = Mlp {
        fc1: LinearConfig::new(8, 16).init(&device),
        relu: Relu::new(),
        fc2: LinearConfig::new(16, 1).init(&device),
    };
    let hook = HookBuilder::new(out.clone())
        .save_config(SaveConfig::new(SaveConfigMode::every(10)))
        .include_collections(["weights", "biases", "gradients", "losses"])
        .build()?;
    let mut hook = BurnHook::new(hook, &model, Some("Mlp"))?;
    let mut opt = SgdConfig::new().init();

    let x = Tensor::<2>::random(
        [256, 8],
        burn::tensor::Distribution::Normal(0.0, 1.0),
        &device,
    );
    let y = x.clone().sum_dim(1);

    hook.set_mode(Mode::Train);
    for step in 0..100 {
        hook.step(&model)?;
        let pred = model
            .fc2
            .forward(model.relu.forward(model.fc1.forward(x.clone())));
        let loss = (pred - y.clone()).powf_scalar(2.0).mean();
        hook.record_loss("MSELoss", &loss)?;
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        hook.record_gradients(&model, &grads)?;
        model = opt.step(0.01, model, grads);
        if hook.should_stop() {
            println!("a rule asked to stop at step {step}");
            break;
        }
    }
    let stats = hook.close()?;
    println!("wrote {} records to {out}", stats.records);
    Ok(())
}
