//! The trial written through the adapter, read back with smdebug-trial, holds exactly the
//! framework's parameters and gradients at the saved steps.

use std::collections::BTreeMap;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{linear, Optimizer, VarBuilder, VarMap, SGD};
use smdebug_candle::{to_smdebug, CandleHook, Recorded, Tap};
use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};
use smdebug_record::TensorValue;

fn open(path: &std::path::Path) -> smdebug_trial::Trial {
    smdebug_trial::create_trial(path.to_str().unwrap()).unwrap()
}

#[test]
fn parameters_gradients_losses_and_activations_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc1 = linear(5, 3, vb.pp("fc1")).unwrap();
    let fc2 = linear(3, 2, vb.pp("fc2")).unwrap();
    let tap = Tap::new();
    let relu = Recorded::new(candle_nn::Activation::Relu, "relu1", &tap, true);
    let mut outputs = smdebug_hook::Collection::new("outputs");
    outputs.include("_output_0$").unwrap();
    let hook = HookBuilder::new(out.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(3)))
        .collection(outputs)
        .include_collections(["weights", "biases", "gradients", "losses", "outputs"])
        .build()
        .unwrap();
    let mut hook = CandleHook::new(hook, &varmap, Some("Net")).unwrap();
    hook.register_tap(&tap);
    assert_eq!(
        hook.param_names().collect::<Vec<_>>(),
        [
            "Net_fc1.bias",
            "Net_fc1.weight",
            "Net_fc2.bias",
            "Net_fc2.weight"
        ]
    );
    let mut opt = SGD::new(varmap.all_vars(), 0.05).unwrap();
    let x = Tensor::arange(0f32, 20., &dev)
        .unwrap()
        .reshape((4, 5))
        .unwrap()
        .affine(0.1, -1.0)
        .unwrap();
    let vars: BTreeMap<String, candle_core::Var> =
        varmap.data().lock().unwrap().clone().into_iter().collect();
    let mut expected: BTreeMap<(String, i64), TensorValue> = BTreeMap::new();
    hook.set_mode(Mode::Train);
    for step in 0..7i64 {
        // What the hook must save at this step, taken before the update.
        for (k, v) in &vars {
            expected.insert(
                (format!("Net_{k}"), step),
                to_smdebug(k, v.as_tensor()).unwrap(),
            );
        }
        hook.step().unwrap();
        let h = relu.forward(&fc1.forward(&x).unwrap()).unwrap();
        let loss = fc2.forward(&h).unwrap().sqr().unwrap().mean_all().unwrap();
        hook.record_taps().unwrap();
        hook.record_loss("MSELoss", &loss).unwrap();
        expected.insert(
            ("MSELoss_output_0".into(), step),
            to_smdebug("l", &loss).unwrap(),
        );
        let grads = loss.backward().unwrap();
        for (k, v) in &vars {
            let g = grads.get(v.as_tensor()).unwrap();
            expected.insert(
                (format!("gradient/Net_{k}"), step),
                to_smdebug(k, g).unwrap(),
            );
        }
        hook.record_gradients(&grads).unwrap();
        opt.step(&grads).unwrap();
    }
    hook.close().unwrap();

    let trial = open(&out);
    let mut names = trial.tensor_names().unwrap();
    names.sort();
    assert_eq!(
        names,
        [
            "MSELoss_output_0",
            "Net_fc1.bias",
            "Net_fc1.weight",
            "Net_fc2.bias",
            "Net_fc2.weight",
            "gradient/Net_fc1.bias",
            "gradient/Net_fc1.weight",
            "gradient/Net_fc2.bias",
            "gradient/Net_fc2.weight",
            "relu1_output_0",
        ]
    );
    assert_eq!(trial.steps(Mode::Train, false).unwrap(), [0, 3, 6]);
    let mut checked = 0;
    for name in &names {
        let t = trial.tensor(name).unwrap();
        assert_eq!(t.steps(Mode::Global, false).unwrap(), [0, 3, 6], "{name}");
        for step in [0, 3, 6] {
            let got = t.value(step, Mode::Global, None).unwrap();
            if let Some(want) = expected.get(&(name.clone(), step)) {
                assert_eq!(*got, *want, "{name} at step {step}");
                checked += 1;
            } else {
                assert_eq!(got.shape(), &[4, 3], "{name}");
            }
        }
    }
    assert_eq!(checked, 9 * 3);
    let coll = trial.collection("gradients");
    assert!(coll.has_tensor_name("gradient/Net_fc2.weight"));
    assert!(trial
        .collection("weights")
        .has_tensor_name("Net_fc1.weight"));
    assert!(trial
        .collection("losses")
        .has_tensor_name("MSELoss_output_0"));
}

#[test]
fn unsaved_steps_convert_nothing_and_eval_saves_no_gradients() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let fc = linear(2, 2, vb.pp("fc")).unwrap();
    let hook = HookBuilder::new(out.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(4)))
        .include_collections(["weights", "gradients"])
        .build()
        .unwrap();
    let mut hook = CandleHook::new(hook, &varmap, None).unwrap();
    let x = Tensor::ones((1, 2), DType::F32, &dev).unwrap();
    let mut saved = Vec::new();
    hook.set_mode(Mode::Train);
    for _ in 0..5 {
        let p = hook.step().unwrap();
        let loss = fc.forward(&x).unwrap().sum_all().unwrap();
        let g = hook.record_gradients(&loss.backward().unwrap()).unwrap();
        saved.push((p, g));
    }
    // weights: fc.weight only; gradients: of the weight and of the bias.
    assert_eq!(saved, [(1, 2), (0, 0), (0, 0), (0, 0), (1, 2)]);
    hook.set_mode(Mode::Eval);
    let p = hook.step().unwrap();
    let loss = fc.forward(&x).unwrap().sum_all().unwrap();
    let g = hook.record_gradients(&loss.backward().unwrap()).unwrap();
    assert_eq!((p, g), (1, 0));
    hook.close().unwrap();
    let trial = open(&out);
    assert_eq!(trial.steps(Mode::Eval, false).unwrap(), [0]);
    let grad = trial.tensor("gradient/fc.weight").unwrap();
    assert_eq!(grad.steps(Mode::Global, false).unwrap(), [0, 4]);
}

#[test]
fn loss_must_be_one_value() {
    let dir = tempfile::tempdir().unwrap();
    let hook = HookBuilder::new(dir.path().join("t").to_str().unwrap())
        .build()
        .unwrap();
    let mut hook = CandleHook::with_params(hook, Vec::new(), None).unwrap();
    hook.step().unwrap();
    let v = Tensor::new(&[1f32, 2.], &Device::Cpu).unwrap();
    let err = hook.record_loss("L", &v).unwrap_err();
    assert!(err.to_string().contains("L_output_0"), "{err}");
    hook.close().unwrap();
}

#[test]
fn tap_is_armed_only_at_steps_that_save_its_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let dev = Device::Cpu;
    let mut relu_output = smdebug_hook::Collection::new("relu_output");
    relu_output.include(".*relu_output").unwrap();
    let hook = HookBuilder::new(out.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(3)))
        .collection(relu_output)
        .include_collections(["relu_output"])
        .build()
        .unwrap();
    let mut hook = CandleHook::with_params(hook, Vec::new(), None).unwrap();
    let tap = Tap::new();
    hook.register_tap(&tap);
    let relu = Recorded::new(candle_nn::Activation::Relu, "act.relu", &tap, false);
    let x = Tensor::new(&[[-1f32, 2.0]], &dev).unwrap();
    let mut armed = Vec::new();
    let mut saved = Vec::new();
    hook.set_mode(Mode::Train);
    for _ in 0..7 {
        hook.step().unwrap();
        armed.push(tap.is_armed());
        relu.forward(&x).unwrap();
        saved.push(hook.record_taps().unwrap());
    }
    assert_eq!(armed, [true, false, false, true, false, false, true]);
    assert_eq!(saved, [1, 0, 0, 1, 0, 0, 1]);
    assert_eq!(tap.names(), ["act.relu_output_0"]);
    hook.close().unwrap();
    let trial = open(&out);
    let t = trial.tensor("act.relu_output_0").unwrap();
    assert_eq!(t.steps(Mode::Train, false).unwrap(), [0, 3, 6]);
    let v = t.value(3, Mode::Train, None).unwrap();
    assert_eq!(
        v.as_array::<f32>().unwrap().as_slice().unwrap(),
        &[0.0, 2.0]
    );
}
