//! An ordinary candle training loop with smdebug: a two-layer MLP on synthetic regression
//! data, the hook saving weights, biases, gradients, losses and ReLU outputs every 10 steps,
//! and an evaluation pass every 50 steps.
//!
//! `cargo run -p smdebug-candle --example candle_train -- /tmp/candle-trial`

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{linear, Activation, Optimizer, VarBuilder, VarMap, SGD};
use smdebug_candle::{CandleHook, Recorded, Tap};
use smdebug_hook::{Collection, HookBuilder, Mode, SaveConfig, SaveConfigMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/smdebug-candle-example".into());
    let dev = Device::Cpu;

    // The model, built as usual from a VarMap: its paths become the smdebug names.
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc1 = linear(8, 16, vb.pp("fc1"))?;
    let fc2 = linear(16, 1, vb.pp("fc2"))?;
    let tap = Tap::new();
    let relu = Recorded::new(Activation::Relu, "relu", &tap, false);

    // The hook: default collections plus one for the ReLU output.
    let mut relu_output = Collection::new("relu_output");
    relu_output.include(".*relu_output")?;
    let hook = HookBuilder::new(out.clone())
        .save_config(SaveConfig::new(SaveConfigMode::every(10)))
        .collection(relu_output)
        .include_collections(["weights", "biases", "gradients", "losses", "relu_output"])
        .build()?;
    let mut hook = CandleHook::new(hook, &varmap, Some("Net"))?;
    hook.register_tap(&tap);

    // Synthetic data: y = sum of the features plus noise.
    let x = Tensor::randn(0f32, 1., (256, 8), &dev)?;
    let y = (x.sum_keepdim(1)? + Tensor::randn(0f32, 0.1, (256, 1), &dev)?)?;
    let mut opt = SGD::new(varmap.all_vars(), 0.01)?;

    for step in 0..200 {
        hook.set_mode(Mode::Train);
        hook.step()?;
        let pred = fc2.forward(&relu.forward(&fc1.forward(&x)?)?)?;
        let loss = candle_nn::loss::mse(&pred, &y)?;
        hook.record_taps()?;
        hook.record_loss("MSELoss", &loss)?;
        let grads = loss.backward()?;
        hook.record_gradients(&grads)?;
        opt.step(&grads)?;
        if step % 50 == 49 {
            hook.set_mode(Mode::Eval);
            hook.step()?;
            let pred = fc2.forward(&relu.forward(&fc1.forward(&x)?)?)?;
            let loss = candle_nn::loss::mse(&pred, &y)?;
            hook.record_taps()?;
            hook.record_loss("MSELoss", &loss)?;
            println!("step {step}: eval loss {:.4}", loss.to_scalar::<f32>()?);
        }
        if hook.should_stop() {
            println!("a rule asked to stop at step {step}");
            break;
        }
    }
    let stats = hook.close()?;
    println!(
        "wrote {} records ({} bytes) to {out}",
        stats.records, stats.event_bytes
    );
    Ok(())
}
