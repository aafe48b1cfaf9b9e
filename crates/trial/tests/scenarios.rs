//! The reader behaviours smdebug's own test-suite checks (docs/src/testing.md sections I–N and S),
//! on trials written with `smdebug_synth::steps` into in-memory stores.

use ndarray::ArrayD;
use smdebug_config::Mode;
use smdebug_exceptions::{AnalysisError, StepState};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::{TensorValue, Trial, TrialError, TrialOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

use StepState::{Available as A, NotYetAvailable as N, Unavailable as U};

fn fresh_url(test: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "memory://scenarios-{}-{}/{test}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

struct Fixture {
    url: String,
    store: BlockingStore,
}

impl Fixture {
    fn new(test: &str, workers: &[&str]) -> Fixture {
        let url = fresh_url(test);
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        for w in workers {
            write_collections(&store, w, workers.len() as i64).unwrap();
        }
        Fixture { url, store }
    }

    fn step(&self, step: i64, worker: &str, mode: Mode, mode_step: i64, names: &[&str]) {
        let v = |s: i64| TensorValue::Float32(ArrayD::from_elem(ndarray::IxDyn(&[2, 2]), s as f32));
        let tensors: Vec<(&str, TensorValue)> = names.iter().map(|n| (*n, v(step))).collect();
        write_step(
            &self.store,
            &StepWrite {
                step,
                worker,
                mode,
                mode_step,
                tensors: &tensors,
                shapes: &[],
            },
        )
        .unwrap();
    }

    fn global(&self, step: i64, worker: &str) {
        self.step(step, worker, Mode::Global, step, &["gradients/dummy:0"]);
    }

    fn end(&self) {
        write_end_marker(&self.store).unwrap();
    }

    fn open(&self) -> Trial {
        Trial::open(&self.url, TrialOptions::default()).unwrap()
    }
}

fn states(t: &Trial, mode: Mode, steps: &[i64]) -> Vec<StepState> {
    steps
        .iter()
        .map(|&s| t.has_passed_step(s, mode).unwrap())
        .collect()
}

fn token(step: i64, worker: &str) -> Option<String> {
    Some(smdebug_index::index_file_key(step, worker).unwrap())
}

fn analysis(e: TrialError) -> AnalysisError {
    match e {
        TrialError::Analysis(a) => a,
        other => panic!("expected an analysis condition, got {other:?}"),
    }
}

const W3: [&str; 3] = ["worker_0", "worker_1", "worker_2"];

/// 3 workers; `by` lists which workers wrote each step 0..=6.
fn three_workers(test: &str, by: &[&[usize]], end: bool) -> Fixture {
    let f = Fixture::new(test, &W3);
    for (step, ws) in by.iter().enumerate() {
        for &w in *ws {
            f.global(step as i64, W3[w]);
        }
    }
    if end {
        f.end();
    }
    f
}

#[test]
fn m88_one_worker_ended() {
    let f = Fixture::new("m88", &["worker_0"]);
    (0..7).for_each(|s| f.global(s, "worker_0"));
    f.end();
    let t = f.open();
    assert_eq!(t.workers().unwrap(), ["worker_0"]);
    assert!(t.loaded_all_steps());
    let all: Vec<i64> = (0..7).collect();
    assert_eq!(t.steps(Mode::Global, true).unwrap(), all);
    assert_eq!(t.steps(Mode::Global, false).unwrap(), all);
    assert_eq!(states(&t, Mode::Global, &[3, 8]), [A, U]);
    assert_eq!(t.last_index_token(), token(6, "worker_0"));
    assert_eq!(t.last_complete_step(), 6);
}

fn m89_fixture(test: &str, end: bool) -> Trial {
    let f = Fixture::new(test, &["worker_0"]);
    for s in [0, 10, 20, 30] {
        f.step(s, "worker_0", Mode::Train, s, &["t"]);
    }
    for (i, s) in [40, 50, 60, 70].into_iter().enumerate() {
        f.step(s, "worker_0", Mode::Eval, 10 * i as i64, &["t"]);
    }
    if end {
        f.end();
    }
    f.open()
}

#[test]
fn m89_m90_modes_with_and_without_end() {
    for end in [true, false] {
        let t = m89_fixture("m89", end);
        let all: Vec<i64> = (0..8).map(|i| i * 10).collect();
        assert_eq!(t.steps(Mode::Global, false).unwrap(), all);
        assert_eq!(t.loaded_all_steps(), end);
        assert_eq!(states(&t, Mode::Global, &[30]), [A]);
        assert_eq!(states(&t, Mode::Train, &[23]), [U]);
        assert_eq!(states(&t, Mode::Train, &[40]), [if end { U } else { N }]);
        assert_eq!(states(&t, Mode::Eval, &[30, 23]), [A, U]);
        let beyond = if end { U } else { N };
        for m in [Mode::Global, Mode::Train, Mode::Eval] {
            assert_eq!(states(&t, m, &[80]), [beyond], "{m}");
        }
        assert_eq!(t.last_index_token(), token(70, "worker_0"));
        assert_eq!(t.last_complete_step(), 70);
    }
}

#[test]
fn m91_one_worker_running() {
    let f = Fixture::new("m91", &["worker_0"]);
    (0..7).for_each(|s| f.global(s, "worker_0"));
    let t = f.open();
    assert_eq!(
        t.steps(Mode::Global, false).unwrap(),
        t.steps(Mode::Global, true).unwrap()
    );
    assert_eq!(states(&t, Mode::Global, &[3, 8]), [A, N]);
    assert_eq!(t.last_index_token(), token(6, "worker_0"));
    t.wait_for_steps(&[0, 1, 2, 3, 4, 5, 6], Mode::Global)
        .unwrap();
}

#[test]
fn m92_m93_skipped_step() {
    for end in [true, false] {
        let f = Fixture::new("m92", &["worker_0"]);
        [0, 1, 2, 3, 5, 6]
            .into_iter()
            .for_each(|s| f.global(s, "worker_0"));
        if end {
            f.end();
        }
        let t = f.open();
        assert_eq!(
            states(&t, Mode::Global, &[4, 8]),
            [U, if end { U } else { N }]
        );
        assert_eq!(t.last_complete_step(), 6);
        if end {
            t.wait_for_steps(&[0, 1, 2, 3, 5, 6], Mode::Global).unwrap();
            let e = t.wait_for_steps(&[0, 1, 2, 3, 4, 5, 6], Mode::Global);
            assert!(matches!(
                analysis(e.unwrap_err()),
                AnalysisError::StepUnavailable { step: 4, .. }
            ));
            let e = analysis(
                t.wait_for_steps(&[0, 1, 2, 3, 5, 6, 7], Mode::Global)
                    .unwrap_err(),
            );
            assert_eq!(
                e.to_string(),
                "Looking for step 7 of mode GLOBAL and reached end of training. Max step available is 6"
            );
        }
    }
}

#[test]
fn m94_m95_three_workers_complete() {
    for end in [true, false] {
        let all3: &[usize] = &[0, 1, 2];
        let t = three_workers("m94", &[all3; 7], end).open();
        assert_eq!(t.workers().unwrap().len(), 3);
        assert_eq!(
            t.steps(Mode::Global, false).unwrap(),
            (0..7).collect::<Vec<_>>()
        );
        assert_eq!(
            states(&t, Mode::Global, &[3, 4, 8]),
            [A, A, if end { U } else { N }]
        );
        assert_eq!(t.last_index_token(), token(6, "worker_2"));
    }
}

#[test]
fn m96_m97_two_of_three_after_step_2() {
    let by: [&[usize]; 7] = [
        &[0, 1, 2],
        &[0, 1, 2],
        &[0, 1, 2],
        &[0, 1],
        &[0, 1],
        &[0, 1],
        &[0, 1],
    ];
    let t = three_workers("m96", &by, true).open();
    assert_eq!(
        t.steps(Mode::Global, false).unwrap(),
        (0..7).collect::<Vec<_>>()
    );
    assert_eq!(states(&t, Mode::Global, &[3, 4, 6, 8]), [A, A, A, U]);
    assert_eq!(t.last_complete_step(), 6);
    assert_eq!(t.last_index_token(), token(2, "worker_2"));

    let t = three_workers("m97", &by, false).open();
    assert_eq!(
        t.steps(Mode::Global, true).unwrap(),
        (0..7).collect::<Vec<_>>()
    );
    assert_eq!(t.steps(Mode::Global, false).unwrap(), [0, 1, 2]);
    assert_eq!(states(&t, Mode::Global, &[2, 4, 6, 8]), [A, N, N, N]);
    assert_eq!(t.last_complete_step(), 2);
    assert_eq!(t.last_index_token(), token(2, "worker_2"));
}

#[test]
fn m98_to_m101_gaps() {
    let all3: &[usize] = &[0, 1, 2];
    let two: &[usize] = &[0, 1];
    let t = three_workers("m98", &[all3, all3, all3, two, two, two, all3], false).open();
    assert_eq!(
        t.steps(Mode::Global, false).unwrap(),
        (0..7).collect::<Vec<_>>()
    );
    assert_eq!(states(&t, Mode::Global, &[2, 4, 6, 8]), [A, A, A, N]);
    assert_eq!(t.last_complete_step(), 6);
    assert_eq!(t.last_index_token(), token(6, "worker_2"));

    let t = three_workers("m99", &[all3, all3, all3, &[], two, two, all3], false).open();
    assert_eq!(t.steps(Mode::Global, false).unwrap(), [0, 1, 2, 4, 5, 6]);
    assert_eq!(t.steps(Mode::Global, true).unwrap(), [0, 1, 2, 4, 5, 6]);
    assert_eq!(states(&t, Mode::Global, &[3, 2, 4, 6, 8]), [U, A, A, A, N]);
    assert_eq!(t.last_complete_step(), 6);

    let by: [&[usize]; 7] = [all3, all3, all3, &[], two, two, two];
    let t = three_workers("m100", &by, false).open();
    assert_eq!(t.steps(Mode::Global, true).unwrap(), [0, 1, 2, 4, 5, 6]);
    assert_eq!(t.steps(Mode::Global, false).unwrap(), [0, 1, 2]);
    assert_eq!(states(&t, Mode::Global, &[3, 4, 6, 8, 2]), [N, N, N, N, A]);
    assert_eq!(t.last_complete_step(), 2);
    assert_eq!(t.last_index_token(), token(2, "worker_2"));

    let t = three_workers("m101", &by, true).open();
    assert_eq!(t.steps(Mode::Global, false).unwrap(), [0, 1, 2, 4, 5, 6]);
    assert_eq!(states(&t, Mode::Global, &[3, 2, 4, 6, 8]), [U, A, A, A, U]);
    assert_eq!(t.last_complete_step(), 6);
    assert_eq!(t.last_index_token(), token(2, "worker_2"));
}

#[test]
fn m102_incomplete_step_window() {
    let f = Fixture::new("m102", &W3);
    (0..20).for_each(|s| f.global(s, "worker_0"));
    let options = TrialOptions {
        incomplete_step_window: 10,
        ..TrialOptions::default()
    };
    let t = Trial::open(&f.url, options).unwrap();
    assert_eq!(t.last_complete_step(), 4);
    assert_eq!(t.last_index_token(), token(4, "worker_2"));
    t.workers().unwrap();
    assert_eq!(t.last_complete_step(), 9);
    assert_eq!(t.last_index_token(), token(9, "worker_2"));
    t.tensor_names().unwrap();
    t.tensor_names().unwrap();
    assert_eq!(t.last_complete_step(), 9);
    assert_eq!(
        t.steps(Mode::Global, true).unwrap(),
        (0..20).collect::<Vec<_>>()
    );
}

#[test]
fn paths_are_stripped_like_python_and_named_after_their_last_component() {
    let f = Fixture::new("strip", &["worker_0"]);
    f.global(0, "worker_0");
    f.end();
    // U+001F and U+0085 are whitespace to Python's `str.strip()`; U+001F is not to Rust's `trim()`.
    let t = Trial::open(
        &format!("\u{1f} {}\n\u{85}", f.url),
        TrialOptions::default(),
    )
    .unwrap();
    assert_eq!(t.path(), f.url);
    assert_eq!(t.name(), "strip");
    assert_eq!(t.steps(Mode::Global, true).unwrap(), [0]);
    let t = Trial::open(&format!("{}/", f.url), TrialOptions::default()).unwrap();
    assert_eq!(t.name(), "", "os.path.basename of a path ending in '/'");
}

#[test]
fn i61_i62_range_steps() {
    let f = Fixture::new("i61", &["algo-1"]);
    (0..20).for_each(|s| f.global(s, "algo-1"));
    let options = TrialOptions {
        range_steps: Some((Some(0), Some(5))),
        ..TrialOptions::default()
    };
    let t = Trial::open(&f.url, options.clone()).unwrap();
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 5);
    (20..28).for_each(|s| f.global(s, "algo-1"));
    t.refresh_data().unwrap();
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 5);
    let bad = TrialOptions {
        range_steps: Some((Some(4), Some(4))),
        ..TrialOptions::default()
    };
    let e = Trial::open(&f.url, bad).unwrap_err();
    assert_eq!(e.kind().as_str(), "AssertionError");
}

#[test]
fn j63_to_j69_modes() {
    let f = Fixture::new("j63", &["worker_0"]);
    let mut t: Option<Trial> = None;
    for s in 0..10i64 {
        let mode = if s % 2 == 0 { Mode::Train } else { Mode::Eval };
        f.step(s, "worker_0", mode, s / 2, &["arr"]);
        let tr = t.get_or_insert_with(|| f.open());
        if s % 2 == 0 {
            assert_eq!(tr.has_passed_step(s / 2, Mode::Train).unwrap(), A);
            assert_eq!(tr.has_passed_step(s / 2, Mode::Eval).unwrap(), N);
        } else {
            assert_eq!(tr.has_passed_step(s / 2, Mode::Eval).unwrap(), A);
        }
        assert_eq!(tr.has_passed_step(s, Mode::Global).unwrap(), A);
        assert_eq!(tr.has_passed_step(s + 1, Mode::Global).unwrap(), N);
    }
    f.end();
    let t = t.unwrap();
    assert_eq!(t.tensor_names().unwrap().len(), 1);
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 10);
    assert_eq!(t.steps(Mode::Train, false).unwrap().len(), 5);
    assert_eq!(t.steps(Mode::Eval, false).unwrap().len(), 5);
    assert_eq!(t.modes(), [Mode::Train, Mode::Eval]);
    for i in 0..10 {
        let m = if i % 2 == 0 { Mode::Train } else { Mode::Eval };
        assert_eq!(t.mode(i).unwrap(), Some(m));
        assert_eq!(t.mode_step(i).unwrap(), Some(i / 2));
    }
    for i in 0..5 {
        assert_eq!(t.global_step(Mode::Train, i).unwrap(), Some(2 * i));
        assert_eq!(t.global_step(Mode::Eval, i).unwrap(), Some(2 * i + 1));
    }
    let arr = t.tensor("arr").unwrap();
    assert_eq!(arr.steps(Mode::Global, false).unwrap().len(), 10);
    assert_eq!(arr.steps(Mode::Train, false).unwrap().len(), 5);
    assert_eq!(arr.steps(Mode::Eval, false).unwrap().len(), 5);
    for i in 0..10 {
        arr.value(i, Mode::Global, None).unwrap();
    }
    for i in 0..5 {
        let v = arr.value(i, Mode::Train, None).unwrap();
        assert_eq!(v.as_array::<f32>().unwrap()[[0, 0]], (2 * i) as f32);
        arr.value(i, Mode::Eval, None).unwrap();
    }
}

#[test]
fn k74_to_k77_name_filters() {
    use smdebug_trial::TensorFilter;
    let f = Fixture::new("k74", &["worker_0"]);
    let foo: Vec<String> = (0..10).map(|i| format!("foo_{i}")).collect();
    let boo: Vec<String> = (0..10).map(|i| format!("boo_{i}")).collect();
    let foo_r: Vec<&str> = foo.iter().map(String::as_str).collect();
    let boo_r: Vec<&str> = boo.iter().map(String::as_str).collect();
    (0..3).for_each(|s| f.step(s, "worker_0", Mode::Global, s, &foo_r));
    (3..6).for_each(|s| f.step(s, "worker_0", Mode::Global, s, &boo_r));
    let t = f.open();
    assert_eq!(t.tensor_names().unwrap().len(), 20);
    let regex = |r: &str| TensorFilter {
        regex: Some(vec![r.to_owned()]),
        ..Default::default()
    };
    assert_eq!(t.tensor_names_filtered(&regex("foo")).unwrap().len(), 10);
    // A collection the analysis defines is not part of the trial's files; like smdebug,
    // an unknown name gives an empty collection, which filters to nothing.
    let coll = TensorFilter {
        collection: Some("nonexistent".into()),
        ..Default::default()
    };
    assert!(t.tensor_names_filtered(&coll).unwrap().is_empty());
    assert!(t.collection("nonexistent").tensor_names.is_empty());
    // `all` (written by synth) matches every name.
    let all = TensorFilter {
        collection: Some("all".into()),
        ..Default::default()
    };
    assert_eq!(t.tensor_names_filtered(&all).unwrap().len(), 20);
    let both = TensorFilter {
        collection: Some("all".into()),
        regex: Some(vec!["foo".into()]),
        ..Default::default()
    };
    assert_eq!(
        t.tensor_names_filtered(&both).unwrap_err().kind().as_str(),
        "ValueError"
    );

    let f = Fixture::new("k77", &["worker_0"]);
    for s in 0..4 {
        let (mode, name) = if s % 2 == 0 {
            (Mode::Train, "arr_1")
        } else {
            (Mode::Eval, "arr_2")
        };
        f.step(s, "worker_0", mode, s / 2, &[name]);
    }
    let t = f.open();
    let by = |step: Option<i64>, mode: Mode| {
        t.tensor_names_filtered(&TensorFilter {
            step,
            mode,
            ..Default::default()
        })
        .unwrap()
    };
    assert_eq!(t.tensor_names().unwrap(), ["arr_1", "arr_2"]);
    assert_eq!(by(Some(0), Mode::Global), ["arr_1"]);
    assert_eq!(by(Some(1), Mode::Global), ["arr_2"]);
    assert_eq!(by(Some(0), Mode::Train), ["arr_1"]);
    assert_eq!(by(Some(0), Mode::Eval), ["arr_2"]);
    assert_eq!(by(None, Mode::Train), ["arr_1"]);
    assert_eq!(by(None, Mode::Eval), ["arr_2"]);
    // S154: an unknown mode step with `step=` is a KeyError as in smdebug; a mode never
    // seen gives no names (Python: KeyError [PY-BUG]).
    let e = t
        .tensor_names_filtered(&TensorFilter {
            step: Some(9),
            mode: Mode::Eval,
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.kind().as_str(), "KeyError");
    assert!(by(None, Mode::Predict).is_empty());
}

#[test]
fn l78_to_l82_refresh_and_no_refresh() {
    let f = Fixture::new("l78", &["worker_0"]);
    let names = |n: usize| -> Vec<String> { (0..n).map(|i| format!("foo_{i}")).collect() };
    let write = |s: i64, n: usize| {
        let ns = names(n);
        let r: Vec<&str> = ns.iter().map(String::as_str).collect();
        f.step(s, "worker_0", Mode::Global, s, &r);
    };
    (0..8).for_each(|s| write(s, 10));
    let t = f.open();
    assert!(!t.tensor_names().unwrap().contains(&"foo_11".to_owned()));
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 8);
    assert_eq!(
        t.tensor("foo_1")
            .unwrap()
            .steps(Mode::Global, false)
            .unwrap()
            .len(),
        8
    );
    (8..16).for_each(|s| write(s, 10));
    t.no_refresh(|t| {
        assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 8);
        assert_eq!(
            t.tensor("foo_1")
                .unwrap()
                .steps(Mode::Global, false)
                .unwrap()
                .len(),
            8
        );
    });
    assert!(t.dynamic_refresh());
    assert_eq!(
        t.tensor("foo_1")
            .unwrap()
            .steps(Mode::Global, false)
            .unwrap()
            .len(),
        16
    );
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 16);
    write(16, 10);
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 17);
    write(17, 13);
    assert!(t.tensor("foo_11").is_ok());
}

#[test]
fn l83_to_l87_lookup_conditions() {
    let f = Fixture::new("l83", &["worker_0"]);
    [1, 3, 5, 7]
        .into_iter()
        .for_each(|s| f.global(s, "worker_0"));
    let t = f.open();
    assert_eq!(t.steps(Mode::Global, false).unwrap().len(), 4);
    let e = t.tensor("bar").unwrap_err();
    assert_eq!(e.to_string(), "Tensor bar was not saved.");
    let x = t.tensor("gradients/dummy:0").unwrap();
    x.value(7, Mode::Global, None).unwrap();
    assert!(matches!(
        analysis(x.value(6, Mode::Global, None).unwrap_err()),
        AnalysisError::StepUnavailable { step: 6, .. }
    ));
    assert!(matches!(
        analysis(x.value(16, Mode::Global, None).unwrap_err()),
        AnalysisError::StepNotYetAvailable { step: 16, .. }
    ));
    [9, 11, 13, 15]
        .into_iter()
        .for_each(|s| f.global(s, "worker_0"));
    x.value(9, Mode::Global, None).unwrap();
    assert!(matches!(
        analysis(x.value(8, Mode::Global, None).unwrap_err()),
        AnalysisError::StepUnavailable { .. }
    ));
    assert!(matches!(
        analysis(x.value(24, Mode::Global, None).unwrap_err()),
        AnalysisError::StepNotYetAvailable { .. }
    ));
    // InvalidWorker for a worker that does not have the step.
    assert_eq!(
        analysis(x.value(9, Mode::Global, Some("w9")).unwrap_err()).to_string(),
        "Invalid Worker: w9"
    );
}

#[test]
fn n105_to_n107_many_collection_files() {
    let workers: Vec<String> = (0..300).map(|i| format!("worker_{i}")).collect();
    let refs: Vec<&str> = workers.iter().map(String::as_str).collect();
    let f = Fixture::new("n105", &refs);
    assert_eq!(f.open().workers().unwrap().len(), 300);
    f.end();
    assert_eq!(f.open().workers().unwrap().len(), 300);

    // 200 of 300 expected files and the job ended: MissingCollectionFiles.
    let url = fresh_url("n106");
    let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
    for w in &refs[..200] {
        write_collections(&store, w, 300).unwrap();
    }
    write_end_marker(&store).unwrap();
    let e = Trial::open(&url, TrialOptions::default()).unwrap_err();
    assert_eq!(e.kind().as_str(), "MissingCollectionFiles");
}

#[test]
fn s151_raw_value_and_shape_both_kept_and_reductions() {
    let f = Fixture::new("s151", &["worker_0"]);
    let v = TensorValue::Float32(ndarray::arr2(&[[1.0f32, -2.0], [3.0, -4.0]]).into_dyn());
    let saved_max = TensorValue::Float32(ndarray::arr1(&[99.0f32]).into_dyn());
    write_step(
        &f.store,
        &StepWrite {
            step: 0,
            worker: "worker_0",
            mode: Mode::Train,
            mode_step: 0,
            tensors: &[("x", v.clone()), ("smdebug/reductions/max/x", saved_max)],
            shapes: &[("x", vec![2, 2]), ("y", vec![7])],
        },
    )
    .unwrap();
    f.end();
    let t = f.open();
    let x = t.tensor("x").unwrap();
    assert_eq!(*x.value(0, Mode::Train, None).unwrap(), v);
    assert_eq!(x.shape(0, Mode::Train, None).unwrap(), [2, 2]);
    assert_eq!(x.original_name().as_deref(), Some("x"));
    // The saved reduction wins over the computed one.
    let max = x
        .reduction_value(0, "max", Mode::Train, None, false)
        .unwrap();
    assert_eq!(max.as_array::<f32>().unwrap()[[0]], 99.0);
    // S152: l1 of a 2-D tensor is the matrix 1-norm (max column abs sum).
    let l1 = x
        .reduction_value(0, "l1", Mode::Train, None, false)
        .unwrap();
    assert_eq!(l1.as_array::<f32>().unwrap()[[]], 6.0);
    assert_eq!(x.reduction_values(0, Mode::Train, None).unwrap().len(), 1);
    // A shape-only tensor: shape yes, value no.
    let y = t.tensor("y").unwrap();
    assert_eq!(y.shape(0, Mode::Train, None).unwrap(), [7]);
    let e = analysis(y.value(0, Mode::Train, None).unwrap_err());
    assert!(matches!(e, AnalysisError::TensorUnavailableForStep { .. }));
    let e = y
        .reduction_value(0, "max", Mode::Train, None, false)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Value for tensor max is not available for step 0 with mode TRAIN as it was not saved."
    );
    assert_eq!(
        y.reduction_value(0, "median", Mode::Train, None, false)
            .map(|_| ())
            .unwrap_err()
            .kind()
            .as_str(),
        "TensorUnavailableForStep"
    );
    assert_eq!(
        x.reduction_value(0, "median", Mode::Train, None, false)
            .unwrap_err()
            .kind()
            .as_str(),
        "SMDebugValueError"
    );
    assert_eq!(x.prev_steps(0, None, Mode::Train).unwrap(), [0]);
    assert_eq!(x.workers(0, Mode::Train).unwrap(), ["worker_0"]);
    assert_eq!(x.values(Mode::Global, None).unwrap().len(), 1);
}

#[test]
fn wait_for_steps_keeps_the_refresh_setting() {
    let f = Fixture::new("refresh-flag", &["worker_0"]);
    (0..4).for_each(|s| f.global(s, "worker_0"));
    let t = f.open();
    t.wait_for_steps(&[3], Mode::Global).unwrap();
    // Python leaves automatic refresh off after a wait that returns [PY-BUG].
    assert!(t.dynamic_refresh());
    t.set_dynamic_refresh(false);
    t.wait_for_steps(&[3], Mode::Global).unwrap();
    assert!(!t.dynamic_refresh());
}

#[test]
fn has_passed_step_in_a_mode_without_the_python_key_error() {
    // docs/src/semantics.md §8.7 [PY-BUG]: Python raises KeyError: 1 for has_passed_step(1, EVAL).
    let f = Fixture::new("keyerror", &["worker_0", "worker_1"]);
    f.step(10, "worker_0", Mode::Eval, 0, &["t"]);
    f.step(10, "worker_1", Mode::Eval, 0, &["t"]);
    f.step(11, "worker_0", Mode::Eval, 1, &["t"]);
    f.end();
    let t = f.open();
    assert_eq!(states(&t, Mode::Eval, &[0, 1, 2]), [A, A, U]);
    let e = analysis(t.wait_for_steps(&[2], Mode::Eval).unwrap_err());
    assert_eq!(
        e,
        AnalysisError::NoMoreData {
            step: 2,
            mode: Mode::Eval,
            last_step: 1
        }
    );
}
