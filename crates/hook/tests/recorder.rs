//! The flight recorder: save_interval 100, a NaN at step 437 → the trial holds steps
//! 427..437 in full besides the steps the save config saves, and the manifest says why.
//! Also the explicit trigger, the signal object, and a step the save config already wrote.

use ndarray::Array1;
use smdebug_config::pyjson::{self, PyValue};
use smdebug_hook::{FlightRecorder, HookBuilder, SaveConfig, SaveConfigMode, TensorValue};
use smdebug_index::{index_file_key, IndexFile};
use std::path::Path;
use std::time::Duration;

fn weights(step: i64, nan: bool) -> TensorValue {
    let mut v = Array1::from_iter((0..64).map(|i| (step * 64 + i) as f32 * 1e-3));
    if nan {
        v[17] = f32::NAN;
    }
    TensorValue::from(v.into_dyn())
}

fn steps_on_disk(t: &Path) -> Vec<i64> {
    let mut out = Vec::new();
    for step in 0..1000 {
        if t.join(index_file_key(step, "worker_0").unwrap()).exists() {
            out.push(step);
        }
    }
    out
}

fn manifest(t: &Path) -> PyValue {
    let text = std::fs::read_to_string(t.join("flight_recorder/worker_0_manifest.json")).unwrap();
    pyjson::parse(&text).unwrap()
}

fn steps_of(entry: &PyValue) -> Vec<i64> {
    match entry.get("steps") {
        Some(PyValue::Array(a)) => a
            .iter()
            .map(|v| match v {
                PyValue::Int(i) => *i,
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn recordings(m: &PyValue) -> Vec<PyValue> {
    match m.get("recordings") {
        Some(PyValue::Array(a)) => a.clone(),
        other => panic!("{other:?}"),
    }
}

fn hook(t: &Path, rec: FlightRecorder) -> smdebug_hook::Hook {
    HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(100)))
        .include_regex(["^fc"])
        .flight_recorder(rec)
        .build()
        .unwrap()
}

#[test]
fn a_nan_at_step_437_keeps_steps_427_to_437() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = hook(&t, FlightRecorder::default());
    for step in 0..440 {
        h.step().unwrap();
        assert!(h.should_save("fc.weight").unwrap());
        h.save("fc.weight", weights(step, step >= 437)).unwrap();
        h.save("fc.bias", weights(-step, false)).unwrap();
    }
    h.close().unwrap();
    let mut want: Vec<i64> = vec![0, 100, 200, 300, 400];
    want.extend(427..=437);
    assert_eq!(steps_on_disk(&t), want);
    // In full: both tensors at every recorded step, raw values equal to what was offered.
    for step in 427..=437 {
        let key = index_file_key(step, "worker_0").unwrap();
        let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
        let names: Vec<&str> = index.tensors.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["fc.weight", "fc.bias"], "step {step}");
        assert!(index.tensors.iter().all(|e| e.payload_crc32c.is_some()));
    }
    // The recorded value is the one offered (read back through the index, CRC checked).
    let key = index_file_key(430, "worker_0").unwrap();
    let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
    let file = std::fs::read(t.join(index.meta.event_file_name.as_deref().unwrap())).unwrap();
    let e = &index.tensors[0];
    let rec = smdebug_record::decode_record_at(&file, e.start_idx, e.length).unwrap();
    rec.verify_payload_crc32c(e.payload_crc32c.unwrap())
        .unwrap();
    let ev = smdebug_record::decode_tensor_event(rec.payload).unwrap();
    assert_eq!((ev.tag.as_str(), ev.step), ("fc.weight", 430));
    assert_eq!(ev.tensor, weights(430, false));
    let m = recordings(&manifest(&t));
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(
        m[0].get("trigger"),
        Some(&PyValue::Str("non-finite".into()))
    );
    assert_eq!(m[0].get("step"), Some(&PyValue::Int(437)));
    assert_eq!(steps_of(&m[0]), (427..=437).collect::<Vec<_>>());
    let PyValue::Str(reason) = m[0].get("reason").unwrap() else {
        panic!()
    };
    assert!(reason.contains("fc.weight holds 1 NaN"), "{reason}");
}

#[test]
fn an_explicit_trigger_writes_the_steps_before_and_the_rest_of_the_step() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = hook(
        &t,
        FlightRecorder {
            steps: 3,
            ..Default::default()
        },
    );
    for step in 0..60 {
        h.step().unwrap();
        h.save("fc.weight", weights(step, false)).unwrap();
        if step == 52 {
            h.trigger_flight_recorder("asked").unwrap();
        }
        h.save("fc.bias", weights(step, false)).unwrap();
    }
    h.close().unwrap();
    assert_eq!(steps_on_disk(&t), [0, 49, 50, 51, 52]);
    let key = index_file_key(52, "worker_0").unwrap();
    let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
    assert_eq!(index.tensors.len(), 2);
    let m = recordings(&manifest(&t));
    assert_eq!(m[0].get("trigger"), Some(&PyValue::Str("explicit".into())));
    assert_eq!(steps_of(&m[0]), [49, 50, 51, 52]);
}

/// A hook whose recorder keeps 2 steps and polls for the signal at every step.
fn polling_every_step(t: &Path) -> smdebug_hook::Hook {
    hook(
        t,
        FlightRecorder {
            steps: 2,
            signal_interval: Duration::ZERO,
            ..Default::default()
        },
    )
}

#[test]
fn the_signal_object_fires_the_recorder_and_is_consumed() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = polling_every_step(&t);
    for step in 0..30 {
        h.step().unwrap();
        if step == 20 {
            // Another process would write it; the writer thread sees it at a later step.
            h.flush().unwrap();
            std::fs::write(t.join(smdebug_index::FLIGHT_RECORDER_TRIGGER_FILE), b"{}").unwrap();
        }
        h.save("fc.weight", weights(step, false)).unwrap();
    }
    h.close().unwrap();
    let m = recordings(&manifest(&t));
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].get("trigger"), Some(&PyValue::Str("signal".into())));
    let steps = steps_of(&m[0]);
    let fired = *steps.last().unwrap();
    assert!((20..=22).contains(&fired), "{steps:?}");
    assert_eq!(steps, (fired - 2..=fired).collect::<Vec<_>>());
    assert!(!t.join(smdebug_index::FLIGHT_RECORDER_TRIGGER_FILE).exists());
}

#[test]
fn a_signal_at_a_step_the_save_config_saves_writes_that_step_once_and_names_its_mode() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = polling_every_step(&t);
    for step in 0..103 {
        h.step().unwrap();
        h.save("fc.weight", weights(step, false)).unwrap();
        if step == 99 {
            // Seen at step 100's first tensor, before anything of step 100 is kept.
            h.flush().unwrap();
            std::fs::write(t.join(smdebug_index::FLIGHT_RECORDER_TRIGGER_FILE), b"{}").unwrap();
        }
    }
    h.close().unwrap();
    assert_eq!(steps_on_disk(&t), [0, 98, 99, 100]);
    let key = index_file_key(100, "worker_0").unwrap();
    let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
    assert_eq!(index.tensors.len(), 1, "{:?}", index.tensors);
    let m = recordings(&manifest(&t));
    assert_eq!(steps_of(&m[0]), [98, 99, 100]);
    assert_eq!(m[0].get("step"), Some(&PyValue::Int(100)));
    assert_eq!(m[0].get("mode"), Some(&PyValue::Str("GLOBAL".into())));
    assert_eq!(m[0].get("mode_step"), Some(&PyValue::Int(100)));
    assert_eq!(
        m[0].get("steps_already_saved"),
        Some(&PyValue::Array(vec![]))
    );
}

#[test]
fn a_step_the_save_config_wrote_is_left_as_it_is() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = hook(&t, FlightRecorder::default());
    for step in 0..103 {
        h.step().unwrap();
        h.save("fc.weight", weights(step, step == 102)).unwrap();
    }
    h.close().unwrap();
    let m = recordings(&manifest(&t));
    assert_eq!(steps_of(&m[0]), [92, 93, 94, 95, 96, 97, 98, 99, 101, 102]);
    match m[0].get("steps_already_saved") {
        Some(PyValue::Array(a)) => assert_eq!(a, &[PyValue::Int(100)]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_recorder_nothing_changes() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = HookBuilder::new(t.to_str().unwrap())
        .save_config(SaveConfig::new(SaveConfigMode::every(100)))
        .include_regex(["^fc"])
        .build()
        .unwrap();
    for step in 0..150 {
        h.step().unwrap();
        assert_eq!(h.should_save("fc.weight").unwrap(), step % 100 == 0);
        h.save("fc.weight", weights(step, step == 120)).unwrap();
    }
    h.close().unwrap();
    assert_eq!(steps_on_disk(&t), [0, 100]);
    assert!(!t.join("flight_recorder").exists());
}

/// `save_deferred`: the value made on the writer thread is what the trial holds (saved
/// steps and recorded ones, the NaN trigger included), the closure runs off the training
/// thread, and a failing one stops the writer with a typed error.
#[test]
fn deferred_values_are_made_on_the_writer_thread() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    let mut h = hook(&t, FlightRecorder::default());
    let training = std::thread::current().id();
    let off_thread = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for step in 0..140 {
        h.step().unwrap();
        let counter = off_thread.clone();
        h.save_deferred("fc.weight", 64, move || {
            if std::thread::current().id() != training {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(weights(step, step >= 137))
        })
        .unwrap();
    }
    h.close().unwrap();
    // Every step offered was made (recorded at every step), none on the training thread.
    assert_eq!(off_thread.load(std::sync::atomic::Ordering::Relaxed), 140);
    let mut want = vec![0, 100];
    want.extend(127..=137);
    assert_eq!(steps_on_disk(&t), want);
    let key = index_file_key(130, "worker_0").unwrap();
    let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
    let file = std::fs::read(t.join(index.meta.event_file_name.as_deref().unwrap())).unwrap();
    let e = &index.tensors[0];
    let rec = smdebug_record::decode_record_at(&file, e.start_idx, e.length).unwrap();
    let ev = smdebug_record::decode_tensor_event(rec.payload).unwrap();
    assert_eq!(ev.tensor, weights(130, false));
    assert_eq!(
        recordings(&manifest(&t))[0].get("trigger"),
        Some(&PyValue::Str("non-finite".into()))
    );

    let t2 = d.path().join("t2");
    let mut h = hook(&t2, FlightRecorder::default());
    h.step().unwrap();
    h.save_deferred("fc.weight", 64, || Err("device lost".into()))
        .unwrap();
    let err = h.close().unwrap_err().to_string();
    assert!(
        err.contains("fc.weight") && err.contains("device lost"),
        "{err}"
    );
}

/// A lent tensor that counts its copies and the handles alive, and can refuse to lend a
/// view.
struct Counted {
    value: TensorValue,
    copies: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    alive: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    lends_view: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.alive
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl smdebug_hook::LentTensor for Counted {
    fn len(&self) -> usize {
        self.value.len()
    }
    fn with_view(&self, f: &mut dyn FnMut(smdebug_hook::TensorView<'_>)) -> bool {
        match self.value.reduce_view() {
            Some(v) if self.lends_view => {
                f(v);
                true
            }
            _ => false,
        }
    }
    fn to_value(&self) -> Result<TensorValue, String> {
        self.copies
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.value.clone())
    }
}

#[test]
fn lent_tensors_are_copied_once_and_given_back_at_once() {
    use std::sync::atomic::Ordering::Relaxed;
    for lends_view in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        let mut h = hook(&t, FlightRecorder::default());
        let copies = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let alive = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for step in 0..140 {
            h.step().unwrap();
            alive.fetch_add(1, Relaxed);
            let lent = Counted {
                value: weights(step, step >= 137),
                copies: copies.clone(),
                alive: alive.clone(),
                lends_view,
            };
            h.save_lent("fc.weight", lent).unwrap();
            if step % 20 == 0 {
                // The recorder holds 11 steps, as copies: no handle stays with the hook
                // once its writer caught up.
                h.flush().unwrap();
                assert_eq!(alive.load(Relaxed), 0, "step {step}");
            }
        }
        h.close().unwrap();
        assert_eq!(alive.load(Relaxed), 0);
        let mut want = vec![0, 100];
        want.extend(127..=137);
        assert_eq!(steps_on_disk(&t), want);
        let n = copies.load(Relaxed);
        if lends_view {
            // Steps 0 and 100, saved by the save config, are copied through `to_value`; the
            // recorder copies the others from the view it is lent.
            assert_eq!(n, 2, "lends a view: {n} copies");
        } else {
            // No view: every step is copied once through `to_value`, the copy is what is
            // checked, kept and written.
            assert_eq!(n, 140, "no view: {n} copies");
        }
        for step in [100, 130, 137] {
            let key = index_file_key(step, "worker_0").unwrap();
            let index = IndexFile::parse(&key, &std::fs::read(t.join(&key)).unwrap()).unwrap();
            let file =
                std::fs::read(t.join(index.meta.event_file_name.as_deref().unwrap())).unwrap();
            let e = &index.tensors[0];
            let rec = smdebug_record::decode_record_at(&file, e.start_idx, e.length).unwrap();
            let ev = smdebug_record::decode_tensor_event(rec.payload).unwrap();
            let got = ev.tensor.as_array::<f32>().unwrap().clone();
            let want = weights(step, step >= 137);
            let want = want.as_array::<f32>().unwrap();
            // NaN != NaN: compare the bits.
            let bits = |a: &ndarray::ArrayD<f32>| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(want), "step {step}");
        }
        let m = recordings(&manifest(&t));
        assert_eq!(
            m[0].get("trigger"),
            Some(&PyValue::Str("non-finite".into()))
        );
        let PyValue::Str(reason) = m[0].get("reason").unwrap() else {
            panic!()
        };
        assert!(reason.contains("fc.weight holds 1 NaN"), "{reason}");
    }
}
