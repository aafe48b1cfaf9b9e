//! Health summaries read by the real smdebug: our hook writes a trial with health records
//! (counts, range, histogram) of tensors of every dtype holding NaN, ±Inf and zeros at the
//! edges and in the vector tails; `tests/peer/health_read.py` opens it with smdebug 1.0.34's
//! `create_trial`, reads every health tensor and compares it with numpy's counts over the
//! raw tensor of the same step.

use half::f16;
use ndarray::{ArrayD, IxDyn};
use smdebug_config::{Collection, HealthSummary, ReductionConfig, SaveConfig, SaveConfigMode};
use smdebug_conformance::{run_peer_json, tempdir};
use smdebug_hook::{Flavor, HookBuilder};
use smdebug_record::TensorValue;

/// Values with specials at both ends, around the 16-element block tail and the 8192-element
/// buffer boundary.
fn values(n: usize, seed: u64, specials: bool) -> Vec<f64> {
    let mut s = seed;
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 200.0
        })
        .collect();
    let sp = [f64::NAN, f64::INFINITY, 0.0, f64::NEG_INFINITY, -0.0, 1e-30];
    for (k, i) in [0, n - 1, n - n % 16, 8191, 8192, n / 2]
        .into_iter()
        .enumerate()
    {
        if i < n {
            v[i] = if specials { sp[k % sp.len()] } else { 0.0 };
        }
    }
    v
}

fn tensors(step: u64) -> Vec<(String, TensorValue)> {
    let n = [8197usize, 37, 16][step as usize % 3];
    let f = values(n, 7 + step, true);
    let i = values(n, 11 + step, false);
    let dynv = |v: Vec<f64>| ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).unwrap();
    vec![
        ("f64".into(), TensorValue::from(dynv(f.clone()))),
        (
            "f32".into(),
            TensorValue::from(dynv(f.clone()).mapv(|x| x as f32)),
        ),
        (
            "f16".into(),
            TensorValue::from(dynv(f.clone()).mapv(f16::from_f64)),
        ),
        (
            "i32".into(),
            TensorValue::from(dynv(i.clone()).mapv(|x| x as i32)),
        ),
        (
            "u8".into(),
            TensorValue::from(dynv(i.clone()).mapv(|x| x.abs() as u8)),
        ),
        (
            "i64".into(),
            TensorValue::from(dynv(i.clone()).mapv(|x| x as i64)),
        ),
        ("b".into(), TensorValue::from(dynv(i).mapv(|x| x > 0.0))),
        (
            "all_nan".into(),
            TensorValue::from(ArrayD::from_elem(IxDyn(&[3]), f32::NAN)),
        ),
    ]
}

#[test]
fn the_real_smdebug_reads_health_tensors_equal_to_numpys_counts() {
    let dir = tempdir();
    let trial = dir.path().join("trial");
    let mut all = Collection::new("all");
    all.include(".*").unwrap();
    all.reduction_config = Some(ReductionConfig {
        save_raw_tensor: true,
        norms: vec![smdebug_config::Reduction::L2],
        health: HealthSummary::Histogram,
        ..Default::default()
    });
    let mut hook = HookBuilder::new(trial.to_str().unwrap())
        .without_default_collections()
        .collection(all)
        .include_collections(["all"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .reduction_flavor(Flavor::Numpy)
        .build()
        .unwrap();
    let mut expected = 0;
    for step in 0..3 {
        hook.step().unwrap();
        for (name, value) in tensors(step) {
            hook.save(&name, value).unwrap();
            expected += 1;
        }
    }
    hook.close().unwrap();
    let out = run_peer_json("health_read.py", &[trial.to_str().unwrap()]);
    assert_eq!(out["mismatches"], serde_json::json!([]), "{out}");
    assert_eq!(out["checked"], expected, "{out}");
    let names = out["health_tensors"].as_array().unwrap();
    assert!(
        names.iter().any(|n| n == "smdebug/health/histogram/f16"),
        "{out}"
    );
    assert_eq!(names.len(), 3 * 8, "{out}");
}
