//! Rule evaluations per second: VanishingGradient over a trial shaped like the `large`
//! preset (300 steps × 50 gradients of 100×100 f32). The default is smaller so the
//! benchmark runs quickly; set `SMDEBUG_RULES_BENCH_STEPS` (default 20) and
//! `SMDEBUG_RULES_BENCH_TENSORS` (default 50) for the full shape.
//!
//! Benchmark ID: `rules/vanishing_gradient_step` (one evaluation of one step, all
//! gradients, values served from the trial's cache after the first pass; throughput in
//! elements).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_rules::{build_rule, invoke_rule};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
use std::sync::Arc;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let steps = env("SMDEBUG_RULES_BENCH_STEPS", 20) as i64;
    let tensors = env("SMDEBUG_RULES_BENCH_TENSORS", 50);
    let path = "memory://rules-bench/run";
    let store = BlockingStore::open(&Location::parse(path).unwrap()).unwrap();
    let mut cm = CollectionManager::new();
    let mut g = Collection::new("gradients");
    g.include("^gradient/").unwrap();
    cm.add(g);
    cm.set_num_workers(1);
    store
        .put(
            &smdebug_index::collections_file_key("worker_0").unwrap(),
            cm.to_json().into(),
        )
        .unwrap();
    let names: Vec<String> = (0..tensors)
        .map(|i| format!("gradient/layer{i}.weight"))
        .collect();
    for step in 0..steps {
        let values: Vec<(&str, smdebug_record::TensorValue)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let a = ndarray::Array2::<f32>::from_shape_fn((100, 100), |(r, c)| {
                    ((r * 100 + c + i + step as usize) % 17) as f32 * 1e-3 - 8e-3
                });
                (n.as_str(), smdebug_record::TensorValue::from(a.into_dyn()))
            })
            .collect();
        write_step(
            &store,
            &StepWrite::new(step, "worker_0", Mode::Global, &values),
        )
        .unwrap();
    }
    write_end_marker(&store).unwrap();
    let trial = Arc::new(smdebug_trial::create_trial(path).unwrap());
    let mut rule = build_rule("VanishingGradient", &Default::default(), trial).unwrap();

    let mut group = c.benchmark_group("rules");
    group.throughput(Throughput::Elements((tensors * 100 * 100) as u64));
    let mut step = 0i64;
    group.bench_function("vanishing_gradient_step", |b| {
        b.iter(|| {
            let eval = invoke_rule(rule.as_mut(), step, Some(step + 1), false).unwrap();
            assert_eq!(eval.steps_evaluated, 1);
            step = (step + 1) % steps;
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
