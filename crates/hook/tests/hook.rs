//! The hook's behaviour, checked on the files it writes: steps and modes, what is saved
//! when, reductions and shapes, scalars, custom tensors, the queue policy, the stop signal
//! and the refusal of finished trials.

use ndarray::{arr0, arr1, Array2};
use smdebug_config::{
    Collection, ConfigError, Mode, Reduction, ReductionConfig, SaveConfig, SaveConfigMode,
};
use smdebug_hook::{DType, HookBuilder, HookError, QueuePolicy, Saved, TensorValue, WriterError};
use smdebug_index::IndexFile;
use smdebug_record::{decode_record_at, decode_tensor_event, TensorEvent};
use smdebug_storage::{BlockingStore, Bytes, Location};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn trial() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("trial");
    (dir, t)
}

fn every(n: i64) -> SaveConfig {
    SaveConfig::new(SaveConfigMode::every(n))
}

fn index(trial: &Path, step: i64) -> Option<IndexFile> {
    let key = smdebug_index::index_file_key(step, "worker_0").unwrap();
    let bytes = std::fs::read(trial.join(&key)).ok()?;
    Some(IndexFile::parse(&key, &bytes).unwrap())
}

/// Every record of a step, decoded through its index entries.
fn events(trial: &Path, step: i64) -> Vec<TensorEvent> {
    let Some(idx) = index(trial, step) else {
        return Vec::new();
    };
    let Some(ev) = idx.meta.event_file_name.as_deref() else {
        return Vec::new();
    };
    let file = std::fs::read(trial.join(ev)).unwrap();
    idx.tensors
        .iter()
        .map(|t| {
            let rec = decode_record_at(&file, t.start_idx, t.length).unwrap();
            rec.verify_payload_crc32c(t.payload_crc32c.unwrap())
                .unwrap();
            let e = decode_tensor_event(rec.payload).unwrap();
            assert_eq!(e.tag, t.name);
            e
        })
        .collect()
}

fn tags(trial: &Path, step: i64) -> Vec<String> {
    events(trial, step).into_iter().map(|e| e.tag).collect()
}

fn f32t(v: f32) -> TensorValue {
    TensorValue::from(arr0(v).into_dyn())
}

fn weights(v: f32) -> TensorValue {
    TensorValue::from(Array2::<f32>::from_elem((2, 3), v).into_dyn())
}

#[test]
fn steps_and_modes_are_counted_like_smdebug() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .build()
        .unwrap();
    assert_eq!(hook.global_step(), -1);
    hook.set_mode(Mode::Train);
    for _ in 0..5 {
        hook.step().unwrap();
        hook.save("MSELoss_output_0", f32t(1.0)).unwrap();
    }
    hook.set_mode(Mode::Eval);
    for _ in 0..3 {
        hook.step().unwrap();
        hook.save("MSELoss_output_0", f32t(1.0)).unwrap();
    }
    assert_eq!((hook.global_step(), hook.mode_step()), (7, 2));
    hook.close().unwrap();
    for g in 0..8 {
        let idx = index(&t, g).unwrap();
        let (mode, ms) = if g < 5 {
            (Mode::Train, g)
        } else {
            (Mode::Eval, g - 5)
        };
        assert_eq!((idx.meta.mode, idx.meta.mode_step), (mode, ms), "step {g}");
        let e = &events(&t, g)[0];
        assert_eq!((e.step, e.mode, e.mode_step), (g, mode.as_int(), ms));
    }
    assert!(t.join("training_job_end.ts").exists());
}

#[test]
fn a_finished_trial_is_refused() {
    let (_d, t) = trial();
    HookBuilder::new(t.to_str().unwrap())
        .build()
        .unwrap()
        .close()
        .unwrap();
    let err = HookBuilder::new(t.to_str().unwrap()).build().unwrap_err();
    assert!(matches!(err, HookError::FinishedTrial { .. }), "{err}");
    assert!(err.to_string().contains("training_job_end.ts"));
}

#[test]
fn gradients_are_not_saved_in_eval_and_losses_always_are() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .include_collections(["gradients", "weights"])
        .build()
        .unwrap();
    for mode in [Mode::Train, Mode::Eval] {
        hook.set_mode(mode);
        hook.step().unwrap();
        for name in [
            "fc.weight",
            "gradient/fc.weight",
            "CrossEntropyLoss_output_0",
            "other",
        ] {
            hook.save(name, weights(1.0)).unwrap();
        }
    }
    hook.close().unwrap();
    assert_eq!(
        tags(&t, 0),
        [
            "fc.weight",
            "gradient/fc.weight",
            "CrossEntropyLoss_output_0"
        ]
    );
    assert_eq!(tags(&t, 1), ["fc.weight", "CrossEntropyLoss_output_0"]);
    let coll =
        std::fs::read_to_string(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    assert!(
        coll.contains(r#""tensor_names": ["gradient/fc.weight"]"#),
        "{coll}"
    );
    assert!(coll.ends_with(r#""_meta": {"num_workers": 1}}"#));
}

#[test]
fn reductions_shapes_and_raw_values_follow_the_collection_configs() {
    let (_d, t) = trial();
    let mut stats = Collection::new("stats");
    stats.include("^act").unwrap();
    stats.reduction_config = Some(ReductionConfig {
        reductions: vec![Reduction::Mean, Reduction::Max],
        abs_reductions: vec![Reduction::Min],
        save_shape: true,
        ..Default::default()
    });
    let mut shapes = Collection::new("shapes");
    shapes.include("^only_shape").unwrap();
    shapes.reduction_config = Some(ReductionConfig {
        save_shape: true,
        ..Default::default()
    });
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .without_default_collections()
        .collection(stats)
        .collection(shapes)
        .include_collections(["stats", "shapes"])
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    let act = TensorValue::from(arr1(&[1.0f32, -3.0, 2.0]).into_dyn());
    hook.save("act:0", act).unwrap();
    hook.step().unwrap();
    hook.save("only_shape", weights(2.0)).unwrap();
    hook.close().unwrap();

    let ev = events(&t, 0);
    let names: Vec<&str> = ev.iter().map(|e| e.tag.as_str()).collect();
    assert_eq!(
        names,
        [
            "smdebug/reductions/mean/act",
            "smdebug/reductions/max/act",
            "smdebug/reductions/abs_min/act"
        ]
    );
    // PyTorch flavour by default: 0-d results.
    assert_eq!(ev[0].tensor, f32t(0.0));
    assert_eq!(ev[1].tensor, f32t(2.0));
    assert_eq!(ev[2].tensor, f32t(1.0));
    let idx0 = index(&t, 0).unwrap();
    assert_eq!(idx0.shapes[0].name, "act:0");
    assert_eq!(idx0.shapes[0].shape, [3]);
    // A step with only a shape: an index file without an events file.
    let idx1 = index(&t, 1).unwrap();
    assert!(idx1.meta.event_file_name.is_none());
    assert_eq!(idx1.shapes[0].shape, [2, 3]);
    assert!(!t.join("events/000000000001").exists());
}

#[test]
fn empty_tensors_get_shape_and_reductions_but_no_raw_value() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_all(true)
        .save_config(every(1))
        .reduction_config(ReductionConfig {
            reductions: vec![Reduction::Mean, Reduction::Min],
            save_raw_tensor: true,
            save_shape: true,
            ..Default::default()
        })
        .reduction_flavor(smdebug_hook::Flavor::Numpy)
        .build()
        .unwrap();
    hook.step().unwrap();
    let empty = TensorValue::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0])));
    hook.save("x:0", empty).unwrap();
    hook.close().unwrap();
    // numpy: the mean of nothing is NaN, its min raises (skipped).
    let ev = events(&t, 0);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].tag, "smdebug/reductions/mean/x");
    assert_eq!(index(&t, 0).unwrap().shapes[0].shape, [0]);
}

#[test]
fn cached_scalars_land_in_the_next_step_that_saves() {
    // smdebug verified: interval 2, save_scalar("lr") at steps 0-3 → step 0 holds one,
    // step 2 two (steps 1 and 2), step 3 a file created at close with only the last.
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(2))
        .build()
        .unwrap();
    for s in 0..4 {
        hook.step().unwrap();
        hook.save_scalar("lr", f64::from(s), Some(100.0 + f64::from(s)));
    }
    hook.close().unwrap();
    let step = |g| -> Vec<(String, f64)> {
        events(&t, g)
            .into_iter()
            .map(|e| (e.tag, e.wall_time))
            .collect()
    };
    assert_eq!(step(0), [("scalar/lr".to_owned(), 100.0)]);
    assert!(index(&t, 1).is_none());
    assert_eq!(
        step(2),
        [
            ("scalar/lr".to_owned(), 101.0),
            ("scalar/lr".to_owned(), 102.0)
        ]
    );
    assert_eq!(step(3), [("scalar/lr".to_owned(), 103.0)]);
    let v = &events(&t, 3)[0].tensor;
    assert_eq!(v, &TensorValue::from(arr1(&[3.0f64]).into_dyn()));
}

#[test]
fn custom_tensors_join_their_collection_without_a_save_config_check() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    hook.save_tensor("my/first", weights(1.0), "default");
    hook.save_tensor("my/first", weights(2.0), "default");
    hook.save_tensor("my/second", f32t(3.0), "custom");
    hook.save("CrossEntropyLoss_output_0", f32t(0.5)).unwrap();
    hook.close().unwrap();
    let ev = events(&t, 0);
    let names: Vec<&str> = ev.iter().map(|e| e.tag.as_str()).collect();
    assert_eq!(
        names,
        ["CrossEntropyLoss_output_0", "my/first", "my/second"]
    );
    assert_eq!(ev[1].tensor, weights(2.0), "the last value of a name wins");
    let coll =
        std::fs::read_to_string(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    assert!(coll.contains(r#""tensor_names": ["my/first"]"#), "{coll}");
    assert!(coll.contains(r#""name": "custom""#), "{coll}");
}

#[test]
fn the_drop_policy_counts_what_it_drops() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_all(true)
        .save_config(every(1))
        .queue_capacity(1)
        .queue_policy(QueuePolicy::DropNewest)
        .build()
        .unwrap();
    hook.step().unwrap();
    let big = TensorValue::from(Array2::<f32>::from_elem((512, 512), 1.0).into_dyn());
    let mut dropped = 0;
    let mut queued = 0;
    for i in 0..200 {
        match hook.save(&format!("t{i}"), big.clone()).unwrap() {
            Saved::Dropped => dropped += 1,
            Saved::Queued => queued += 1,
            Saved::NotDue => panic!("save_all saves everything"),
        }
    }
    assert_eq!(hook.dropped_tensors(), dropped);
    let stats = hook.close().unwrap();
    assert_eq!(stats.dropped, dropped);
    assert_eq!(stats.records, queued);
    assert_eq!(events(&t, 0).len() as u64, queued);
}

#[test]
fn blocking_policy_loses_nothing_with_a_tiny_queue() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_all(true)
        .save_config(every(1))
        .queue_capacity(1)
        .build()
        .unwrap();
    for _ in 0..3 {
        hook.step().unwrap();
        for i in 0..50 {
            assert_eq!(
                hook.save(&format!("t{i}"), weights(i as f32)).unwrap(),
                Saved::Queued
            );
        }
    }
    let stats = hook.close().unwrap();
    assert_eq!((stats.records, stats.dropped), (150, 0));
    for g in 0..3 {
        assert_eq!(events(&t, g).len(), 50);
    }
}

#[test]
fn the_stop_signal_is_seen_across_processes_and_rate_limited() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .stop_check_interval(Duration::ZERO)
        .build()
        .unwrap();
    hook.step().unwrap();
    assert!(!hook.should_stop());
    let marker = t.join(hook.stop_signal_key());
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    // Another process creates the marker.
    let status = std::process::Command::new("touch")
        .arg(&marker)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!hook.should_stop(), "checked at most once per step");
    hook.step().unwrap();
    assert!(hook.should_stop());
    std::fs::remove_file(&marker).unwrap();
    assert!(hook.should_stop(), "once stopped, stays stopped");
    hook.close().unwrap();
}

#[test]
fn the_stop_signal_works_on_object_storage() {
    let url = "memory://hook-stop-test/run-1";
    let mut hook = HookBuilder::new(url)
        .stop_signal_file("rules/stop")
        .stop_check_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    hook.step().unwrap();
    assert!(!hook.should_stop());
    let other = BlockingStore::open(&Location::parse(url).unwrap()).unwrap();
    other.put("rules/stop", Bytes::from_static(b"1")).unwrap();
    hook.step().unwrap();
    // Rate limit: within 50 ms of the last check the store is not asked again.
    assert!(!hook.should_stop());
    std::thread::sleep(Duration::from_millis(60));
    hook.step().unwrap();
    assert!(hook.should_stop());
    hook.close().unwrap();
    assert!(other.exists("training_job_end.ts").unwrap());
}

#[test]
fn the_collections_file_is_written_at_the_first_step() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .worker("worker_3", 4)
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    hook.flush().unwrap();
    let f = t.join("collections/000000000/worker_3_collections.json");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.ends_with(r#""_meta": {"num_workers": 4}}"#), "{text}");
    hook.save("CrossEntropyLoss_output_0", f32t(1.0)).unwrap();
    drop(hook);
    // Dropping closes: the last step and the end marker are written.
    assert!(t
        .join("index/000000000/000000000000_worker_3.json")
        .exists());
    assert!(t.join("training_job_end.ts").exists());
}

#[test]
fn saving_before_the_first_step_is_an_error() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap()).build().unwrap();
    let err = hook.save("x", f32t(1.0)).unwrap_err();
    assert!(matches!(err, HookError::NoStep { .. }), "{err}");
}

#[test]
fn collections_without_regexes_or_names_are_refused() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap()).build().unwrap();
    hook.get_collection("empty");
    let err = hook.step().unwrap_err();
    assert!(
        matches!(err, HookError::InvalidCollectionConfiguration { ref name } if name == "empty"),
        "{err}"
    );
}

#[test]
fn a_hook_is_built_from_the_sagemaker_json_config() {
    let (d, t) = trial();
    let cfg = d.path().join("debughookconfig.json");
    std::fs::write(
        &cfg,
        format!(
            r#"{{"LocalPath": "{}",
                "HookParameters": {{"save_interval": "2", "include_regex": "relu.*"}},
                "CollectionConfigurations": [
                  {{"CollectionName": "weights", "CollectionParameters": {{"reductions": "mean"}}}}]}}"#,
            t.display()
        ),
    )
    .unwrap();
    let mut hook = HookBuilder::from_config_file(&cfg)
        .unwrap()
        .build()
        .unwrap();
    for _ in 0..3 {
        hook.step().unwrap();
        hook.save("fc.weight", weights(2.0)).unwrap();
        hook.save("relu1_output_0", weights(1.0)).unwrap();
    }
    hook.close().unwrap();
    assert_eq!(
        tags(&t, 0),
        ["smdebug/reductions/mean/fc.weight", "relu1_output_0"]
    );
    assert!(index(&t, 1).is_none());
    assert_eq!(tags(&t, 2).len(), 2);
    let missing = HookBuilder::from_config_file(&d.path().join("nope.json")).unwrap_err();
    assert!(matches!(missing, HookError::NoHookConfig { .. }));
}

#[test]
fn non_chief_workers_write_nothing_with_include_workers_one() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .worker("worker_1", 2)
        .include_workers(smdebug_hook::IncludeWorkers::One)
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    assert_eq!(
        hook.save("CrossEntropyLoss_output_0", f32t(1.0)).unwrap(),
        Saved::NotDue
    );
    hook.close().unwrap();
    assert!(!t.exists() || std::fs::read_dir(&t).unwrap().next().is_none());
}

#[test]
fn an_unknown_reduction_in_the_sagemaker_config_names_its_collection() {
    let (d, t) = trial();
    let cfg = d.path().join("debughookconfig.json");
    std::fs::write(
        &cfg,
        format!(
            r#"{{"LocalPath": "{}",
                "CollectionConfigurations": [
                  {{"CollectionName": "weights", "CollectionParameters": {{"reductions": "mean, avg"}}}}]}}"#,
            t.display()
        ),
    )
    .unwrap();
    let err = HookBuilder::from_config_file(&cfg).unwrap_err();
    let HookError::HookConfig {
        source: ConfigError::InvalidReduction {
            collection, name, ..
        },
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(collection.as_deref(), Some("weights"));
    assert_eq!(name, "avg");
    assert!(!t.exists(), "nothing is written");
}

#[test]
fn a_reduction_smdebug_refuses_is_refused_when_the_hook_is_built() {
    let (_d, t) = trial();
    let median = ReductionConfig {
        reductions: vec![Reduction::Mean, Reduction::Median],
        ..Default::default()
    };
    let mut weights = Collection::new("weights");
    weights.include("weight").unwrap();
    weights.reduction_config = Some(median.clone());
    let err = HookBuilder::new(t.to_str().unwrap())
        .collection(weights)
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, HookError::Config(ConfigError::InvalidReduction { collection: Some(c), name, .. })
            if c == "weights" && name == "median"),
        "{err:?}"
    );
    // The hook's own reduction config belongs to no collection.
    let err = HookBuilder::new(t.to_str().unwrap())
        .reduction_config(ReductionConfig {
            norms: vec![Reduction::Mean],
            ..Default::default()
        })
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, HookError::Config(ConfigError::InvalidReduction { collection: None, name, .. })
            if name == "mean"),
        "{err:?}"
    );
    // Changed after the hook was built: refused when the collections are prepared.
    let mut hook = HookBuilder::new(t.to_str().unwrap()).build().unwrap();
    hook.get_collection("weights").reduction_config = Some(median);
    let err = hook.step().unwrap_err();
    assert!(
        matches!(&err, HookError::Config(ConfigError::InvalidReduction { collection: Some(c), .. })
            if c == "weights"),
        "{err:?}"
    );
}

#[test]
fn writer_failures_are_typed_and_name_the_object() {
    let (_d, t) = trial();
    // A file where the events folder should be: storing the first events file fails.
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("events"), b"in the way").unwrap();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    hook.save("CrossEntropyLoss_output_0", f32t(1.0)).unwrap();
    hook.step().unwrap();
    let err = hook.flush().unwrap_err();
    let HookError::WriterFailed { source } = &err else {
        panic!("{err:?}");
    };
    let WriterError::Store { key, source: cause } = &**source else {
        panic!("{source:?}");
    };
    assert_eq!(key, "events/000000000000/000000000000_worker_0.tfevents");
    assert!(
        matches!(cause, smdebug_storage::StorageError::Io { .. }),
        "{cause:?}"
    );
    // Every later call reports the same first failure, and nothing more is written.
    let again = hook.step().unwrap_err();
    assert!(
        matches!(&again, HookError::WriterFailed { source: s } if std::sync::Arc::ptr_eq(s, source)),
        "{again:?}"
    );
    assert!(matches!(hook.close(), Err(HookError::WriterFailed { .. })));
    assert!(!t.join("index").exists());
    assert!(!t.join("training_job_end.ts").exists());
}

#[test]
fn a_tensor_smdebug_cannot_encode_fails_the_writer_with_its_name() {
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .build()
        .unwrap();
    hook.step().unwrap();
    let strings = ndarray::Array2::from_elem((2, 2), String::from("x")).into_dyn();
    hook.write_raw_record("labels", TensorValue::Str(strings))
        .unwrap();
    let err = hook.flush().unwrap_err();
    assert!(
        matches!(&err, HookError::WriterFailed { source }
            if matches!(&**source, WriterError::Encode { name, step: 0, .. } if name == "labels")),
        "{err:?}"
    );
}

/// How `write_weights_via` hands the weights to the hook.
#[derive(Clone, Copy)]
enum Via {
    Save,
    Bytes,
    /// `save_lent` of a tensor that lends a C-contiguous view (or a transposed one).
    Lent {
        contiguous: bool,
    },
}

/// A lent `f32` tensor that counts the copies made of it.
struct LentWeights {
    value: ndarray::ArrayD<f32>,
    contiguous: bool,
    copies: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl smdebug_hook::LentTensor for LentWeights {
    fn len(&self) -> usize {
        self.value.len()
    }
    fn with_view(&self, f: &mut dyn FnMut(smdebug_hook::TensorView<'_>)) -> bool {
        if self.contiguous {
            f(smdebug_hook::TensorView::F32(self.value.view()));
        } else {
            // The same elements in the same logical order, through strides.
            let t = self.value.t().to_owned();
            f(smdebug_hook::TensorView::F32(t.t()));
        }
        true
    }
    fn to_value(&self) -> Result<TensorValue, String> {
        self.copies
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(TensorValue::from(self.value.clone()))
    }
}

/// Writes two steps of `weights` (and a `loss` with reductions) through `save`, or for the
/// weights `save_bytes` or `save_lent`; returns the trial's events and index files and the
/// copies made of lent weights.
fn write_weights_via(via: Via) -> (Vec<(PathBuf, Vec<u8>)>, usize) {
    let copies = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (_d, t) = trial();
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(1))
        .include_collections(["weights", "losses"])
        .wall_time(smdebug_hook::WallTime::PerStep(std::sync::Arc::new(|s| {
            1.6e9 + s as f64
        })))
        .build()
        .unwrap();
    for step in 0..2 {
        hook.step().unwrap();
        let w = Array2::<f32>::from_shape_fn((3, 4), |(i, j)| (step * 12 + i * 4 + j) as f32);
        match via {
            Via::Bytes => {
                let le: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
                let saved = hook
                    .save_bytes("fc.weight", DType::Float32, &[3, 4], Bytes::from(le))
                    .unwrap();
                assert_eq!(saved, Some(Saved::Queued));
            }
            Via::Save => {
                hook.save("fc.weight", TensorValue::from(w.into_dyn()))
                    .unwrap();
            }
            Via::Lent { contiguous } => {
                let lent = LentWeights {
                    value: w.into_dyn(),
                    contiguous,
                    copies: copies.clone(),
                };
                hook.save_lent("fc.weight", lent).unwrap();
            }
        }
        hook.save("loss_output_0", f32t(step as f32)).unwrap();
    }
    hook.close().unwrap();
    let mut files = Vec::new();
    for dir in ["events", "index"] {
        for e in walk(&t.join(dir)) {
            files.push((
                e.strip_prefix(&t).unwrap().to_path_buf(),
                std::fs::read(&e).unwrap(),
            ));
        }
    }
    files.sort();
    (files, copies.load(std::sync::atomic::Ordering::Relaxed))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn save_bytes_writes_the_bytes_save_writes() {
    let (via_value, _) = write_weights_via(Via::Save);
    let (via_bytes, _) = write_weights_via(Via::Bytes);
    assert_eq!(via_value.len(), 4);
    assert_eq!(via_value, via_bytes);
}

/// Only the raw value due: a lent tensor whose view is C-contiguous is encoded from its
/// elements (never copied into a value); a strided one is copied. The files are the same.
#[test]
fn save_lent_of_a_raw_value_writes_what_save_writes_without_a_copy() {
    let (via_value, _) = write_weights_via(Via::Save);
    let (via_lent, copies) = write_weights_via(Via::Lent { contiguous: true });
    assert_eq!(via_value, via_lent);
    assert_eq!(copies, 0);
    let (via_strided, _) = write_weights_via(Via::Lent { contiguous: false });
    assert_eq!(via_value, via_strided);
}

#[test]
fn save_bytes_declines_what_needs_the_value_and_refuses_bad_lengths() {
    let (_d, t) = trial();
    let rc = ReductionConfig {
        reductions: vec![Reduction::Max],
        ..ReductionConfig::default()
    };
    let mut biases = Collection::new("biases");
    biases.include(".*bias").unwrap();
    biases.reduction_config = Some(rc);
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_config(every(2))
        .include_collections(["weights", "biases"])
        .collection(biases)
        .build()
        .unwrap();
    hook.step().unwrap();
    let le = Bytes::from(vec![0u8; 8]);
    // Reductions are due: the caller must hand over a value.
    assert_eq!(
        hook.save_bytes("fc.bias", DType::Float32, &[2], le.clone())
            .unwrap(),
        None
    );
    // Raw only: taken.
    assert_eq!(
        hook.save_bytes("fc.weight", DType::Float32, &[2], le.clone())
            .unwrap(),
        Some(Saved::Queued)
    );
    let bad = hook.save_bytes("fc.weight", DType::Float32, &[3], le.clone());
    assert!(
        matches!(bad, Err(HookError::TensorBytes { len: 8, .. })),
        "{bad:?}"
    );
    let text = hook.save_bytes("fc.weight", DType::Str, &[2], le.clone());
    assert!(
        matches!(text, Err(HookError::TensorBytes { .. })),
        "{text:?}"
    );
    hook.step().unwrap(); // step 1: not due
    assert_eq!(
        hook.save_bytes("fc.weight", DType::Float32, &[2], le)
            .unwrap(),
        Some(Saved::NotDue)
    );
    hook.close().unwrap();
    assert_eq!(tags(&t, 0), ["fc.weight"]);
}

/// The steps whose index files are in the trial now (temporary files skipped).
fn published_steps(trial: &Path) -> Vec<i64> {
    let Ok(buckets) = std::fs::read_dir(trial.join("index")) else {
        return Vec::new();
    };
    let mut steps = Vec::new();
    for bucket in buckets {
        for file in std::fs::read_dir(bucket.unwrap().path()).unwrap() {
            let name = file.unwrap().file_name().into_string().unwrap();
            if let Some(step) = name.strip_suffix("_worker_0.json") {
                steps.push(step.parse().unwrap());
            }
        }
    }
    steps.sort_unstable();
    steps
}

#[test]
fn steps_appear_in_order_with_their_events_files_while_several_io_threads_write() {
    // Steps alternate between megabytes and a few bytes: a small step's files are written
    // while the large step before it is still being written, and must wait for it.
    let (_d, t) = trial();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (t, done) = (t.clone(), done.clone());
        std::thread::spawn(move || {
            let mut looks = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                for step in published_steps(&t) {
                    // Files are never removed: whatever was published before this index
                    // file must be there now.
                    for earlier in 0..step {
                        let key = smdebug_index::index_file_key(earlier, "worker_0").unwrap();
                        assert!(t.join(&key).exists(), "{key} missing after step {step}");
                    }
                    let idx = index(&t, step).unwrap();
                    let events = t.join(idx.meta.event_file_name.unwrap());
                    let end = idx.tensors.iter().map(|e| e.start_idx + e.length).max();
                    let len = std::fs::metadata(&events).map_or(0, |m| m.len());
                    assert!(end.unwrap() <= len, "step {step}: events file incomplete");
                }
                looks += 1;
            }
            looks
        })
    };
    let mut hook = HookBuilder::new(t.to_str().unwrap())
        .save_all(true)
        .save_config(every(1))
        .build()
        .unwrap();
    let large = TensorValue::from(ndarray::ArrayD::<f32>::from_elem(
        ndarray::IxDyn(&[1 << 19]),
        0.5,
    ));
    for step in 0..40 {
        hook.step().unwrap();
        let value = if step % 2 == 0 {
            large.clone()
        } else {
            f32t(1.0)
        };
        hook.save("x", value).unwrap();
    }
    hook.close().unwrap();
    done.store(true, std::sync::atomic::Ordering::Release);
    assert!(watcher.join().unwrap() > 0);
    assert_eq!(published_steps(&t), (0..40).collect::<Vec<i64>>());
    for step in [0, 1, 38, 39] {
        assert_eq!(tags(&t, step), ["x"]);
    }
    // No temporary file is left anywhere.
    let mut left = vec![t.clone()];
    while let Some(dir) = left.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            assert!(!path.to_string_lossy().ends_with(".tmp"), "{path:?}");
            if path.is_dir() {
                left.push(path);
            }
        }
    }
}
