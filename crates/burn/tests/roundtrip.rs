//! The trial written through the burn adapter, read back with smdebug-trial, holds exactly
//! the module's parameters and gradients at the saved steps.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{GradientsParams, SgdConfig};
use burn::prelude::*;
use smdebug_burn::{to_smdebug, BurnHook};
use smdebug_hook::{HookBuilder, Mode, SaveConfig, SaveConfigMode};

#[derive(Module, Debug)]
struct Net {
    fc1: Linear,
    act: Relu,
    fc2: Linear,
}

impl Net {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.fc2.forward(self.act.forward(self.fc1.forward(x)))
    }
}

#[test]
fn parameters_and_gradients_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial");
    let device = Device::flex().autodiff();
    let mut model = Net {
        fc1: LinearConfig::new(4, 3).init(&device),
        act: Relu::new(),
        fc2: LinearConfig::new(3, 2).init(&device),
    };
    let hook = HookBuilder::new(out.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(2)))
        .include_collections(["weights", "biases", "gradients", "losses"])
        .build()
        .unwrap();
    let mut hook = BurnHook::new(hook, &model, Some("Net")).unwrap();
    let names: Vec<String> = hook.param_names().map(str::to_owned).collect();
    println!("{names:?}");
    assert!(names.contains(&"Net_fc1.weight".to_string()), "{names:?}");
    let mut opt = SgdConfig::new().init();
    let x = Tensor::<2>::ones([5, 4], &device);
    let mut expect = Vec::new();
    hook.set_mode(Mode::Train);
    for step in 0..4i64 {
        hook.step(&model).unwrap();
        if step % 2 == 0 {
            let w = to_smdebug("w", &model.fc1.weight.val()).unwrap();
            expect.push(("Net_fc1.weight".to_string(), step, w));
        }
        let loss = model.forward(x.clone()).powf_scalar(2.0).mean();
        hook.record_loss("MSELoss", &loss).unwrap();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        if step % 2 == 0 {
            let g = grads.get::<2>(model.fc1.weight.id).unwrap();
            let g = to_smdebug("g", &g).unwrap();
            expect.push(("gradient/Net_fc1.weight".to_string(), step, g));
        }
        hook.record_gradients(&model, &grads).unwrap();
        model = opt.step(0.1, model, grads);
    }
    hook.close().unwrap();
    let trial = smdebug_trial::create_trial(out.to_str().unwrap()).unwrap();
    let mut got = trial.tensor_names().unwrap();
    got.sort();
    let mut want: Vec<String> = names
        .iter()
        .flat_map(|n| [n.clone(), format!("gradient/{n}")])
        .collect();
    want.push("MSELoss_output_0".into());
    want.sort();
    assert_eq!(got, want);
    assert_eq!(trial.steps(Mode::Train, false).unwrap(), [0, 2]);
    for (name, step, value) in expect {
        let v = trial
            .tensor(&name)
            .unwrap()
            .value(step, Mode::Train, None)
            .unwrap();
        assert_eq!(*v, value, "{name} at {step}");
        // burn's Linear weight is [in, out].
        assert_eq!(v.shape(), &[4, 3]);
    }
}
