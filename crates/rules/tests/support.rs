//! Writing small trials with exactly the tensors a scenario names.

use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_record::TensorValue;
use smdebug_rules::{invoke_rule, Rule};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A trial in a fresh in-memory store.
pub struct TrialWriter {
    pub path: String,
    pub store: BlockingStore,
    cm: CollectionManager,
}

impl TrialWriter {
    pub fn new() -> Self {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = format!("memory://rules-test-{}-{n}/run", std::process::id());
        let store = BlockingStore::open(&Location::parse(&path).unwrap()).unwrap();
        let mut cm = CollectionManager::new();
        cm.set_num_workers(1);
        TrialWriter { path, store, cm }
    }

    /// A collection listing these tensor names.
    pub fn collection(&mut self, name: &str, tensors: &[&str]) -> &mut Self {
        let mut c = Collection::new(name);
        for t in tensors {
            c.add_tensor_name(*t);
        }
        self.cm.add(c);
        self
    }

    pub fn write_collections(&self) {
        self.store
            .put(
                &smdebug_index::collections_file_key("worker_0").unwrap(),
                self.cm.to_json().into(),
            )
            .unwrap();
    }

    pub fn step_mode(
        &self,
        step: i64,
        mode: Mode,
        mode_step: i64,
        tensors: &[(&str, TensorValue)],
    ) {
        write_step(
            &self.store,
            &StepWrite {
                step,
                worker: "worker_0",
                mode,
                mode_step,
                tensors,
                shapes: &[],
            },
        )
        .unwrap();
    }

    pub fn step(&self, step: i64, tensors: &[(&str, TensorValue)]) {
        self.step_mode(step, Mode::Global, step, tensors);
    }

    /// Collections file and end marker.
    pub fn finish(&self) -> Arc<Trial> {
        self.write_collections();
        write_end_marker(&self.store).unwrap();
        self.trial()
    }

    pub fn trial(&self) -> Arc<Trial> {
        Arc::new(smdebug_trial::create_trial(&self.path).unwrap())
    }
}

pub fn v(values: &[f64]) -> TensorValue {
    TensorValue::from(ndarray::arr1(values).into_dyn())
}

pub fn shaped(shape: &[usize], values: Vec<f64>) -> TensorValue {
    TensorValue::from(ndarray::ArrayD::from_shape_vec(shape.to_vec(), values).unwrap())
}

pub fn filled(shape: &[usize], x: f64) -> TensorValue {
    TensorValue::from(ndarray::ArrayD::from_elem(shape.to_vec(), x))
}

pub fn ints(values: &[i64]) -> TensorValue {
    TensorValue::from(ndarray::arr1(values).into_dyn())
}

pub fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Builds a rule by name and returns the steps it fires at over `[start, end)`.
pub fn fires(
    name: &str,
    p: &[(&str, &str)],
    trial: Arc<Trial>,
    start: i64,
    end: Option<i64>,
) -> Vec<i64> {
    let mut rule = smdebug_rules::build_rule(name, &params(p), trial).unwrap();
    fire_steps(rule.as_mut(), start, end)
}

pub fn fire_steps(rule: &mut dyn Rule, start: i64, end: Option<i64>) -> Vec<i64> {
    invoke_rule(rule, start, end, false)
        .unwrap()
        .firings
        .iter()
        .map(|f| f.step)
        .collect()
}

/// The first firing step with `raise_eval_cond`.
pub fn first_fire(rule: &mut dyn Rule, start: i64, end: Option<i64>) -> Option<i64> {
    match invoke_rule(rule, start, end, true) {
        Ok(_) => None,
        Err(e) => Some(e.firing().expect("a firing, not another error").step),
    }
}
