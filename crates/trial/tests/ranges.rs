//! Step ranges (`range_steps`) and the latest steps (`last_steps`): a range gives exactly
//! what the whole trial gives for its steps, and opening the last steps reads only the
//! newest index folder.

use ndarray::ArrayD;
use proptest::prelude::*;
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location, Storage};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::{StepRange, TensorValue, Trial, TrialOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A fresh trial location: a temporary folder (kept alive by the guard) or memory.
fn fresh(test: &str, local: bool) -> (Option<tempfile::TempDir>, String) {
    if local {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join(test).to_str().unwrap().to_owned();
        (Some(dir), url)
    } else {
        (None, fresh_url(test))
    }
}

fn fresh_url(test: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "memory://ranges-{}-{}/{test}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Writes a trial: `steps[i]` = (global step, mode, which of the workers wrote it); each
/// step saves a tensor every worker writes and one only worker 0 writes on even steps.
fn write_trial(store: &BlockingStore, workers: usize, steps: &[(i64, Mode, Vec<bool>)]) {
    let names: Vec<String> = (0..workers).map(|w| format!("worker_{w}")).collect();
    for n in &names {
        write_collections(store, n, workers as i64).unwrap();
    }
    let mut mode_steps: BTreeMap<Mode, i64> = BTreeMap::new();
    for (step, mode, by) in steps {
        let mode_step = {
            let m = mode_steps.entry(*mode).or_insert(0);
            *m += 1;
            *m - 1
        };
        for (w, name) in names.iter().enumerate() {
            if !by[w] {
                continue;
            }
            let v = |k: f32| {
                TensorValue::Float32(ArrayD::from_elem(
                    ndarray::IxDyn(&[2]),
                    *step as f32 * 10.0 + w as f32 + k,
                ))
            };
            let mut tensors = vec![("all/t:0", v(0.0))];
            if w == 0 && step % 2 == 0 {
                tensors.push(("even/t:0", v(0.5)));
            }
            write_step(
                store,
                &StepWrite {
                    step: *step,
                    worker: name,
                    mode: *mode,
                    mode_step,
                    tensors: &tensors,
                    shapes: &[],
                },
            )
            .unwrap();
        }
    }
    write_end_marker(store).unwrap();
}

/// Everything the Trial API says about the global steps in `range`: steps of every mode
/// (complete or not), tensor names per step, and every value per (tensor, step, worker).
fn view(t: &Trial, range: StepRange) -> String {
    let mut out = String::new();
    let steps: Vec<i64> = t
        .steps(Mode::Global, true)
        .unwrap()
        .into_iter()
        .filter(|s| range.contains(*s))
        .collect();
    out += &format!("steps {steps:?}\n");
    out += &format!(
        "complete {:?}\n",
        t.steps(Mode::Global, false)
            .unwrap()
            .into_iter()
            .filter(|s| range.contains(*s))
            .collect::<Vec<_>>()
    );
    for mode in [Mode::Train, Mode::Eval] {
        let mode_steps: Vec<i64> = t
            .steps(mode, true)
            .unwrap()
            .into_iter()
            .filter(|&s| range.contains(t.global_step(mode, s).unwrap().unwrap()))
            .collect();
        out += &format!("{mode:?} {mode_steps:?}\n");
    }
    for &s in &steps {
        let filter = smdebug_trial::TensorFilter {
            step: Some(s),
            ..Default::default()
        };
        let names = t.tensor_names_filtered(&filter).unwrap();
        out += &format!("{s} {names:?} {:?}\n", t.mode_modestep(s).unwrap());
        for n in names {
            let tensor = t.tensor(&n).unwrap();
            for w in t.workers().unwrap() {
                let v = tensor.value(s, Mode::Global, Some(&w));
                out += &format!("  {n} {w} {:?}\n", v.map(|v| (*v).clone()).ok());
            }
        }
    }
    out
}

fn arb_trial() -> impl Strategy<Value = (usize, Vec<(i64, Mode, Vec<bool>)>)> {
    (1usize..=3).prop_flat_map(|workers| {
        let step = (
            0i64..4,
            prop_oneof![Just(Mode::Train), Just(Mode::Eval)],
            proptest::collection::vec(proptest::bool::weighted(0.85), workers),
        );
        (
            Just(workers),
            proptest::collection::vec(step, 1..25).prop_map(|raw| {
                // Strictly increasing global steps with gaps, across index folders
                // (1,000 steps each).
                let mut s = 0;
                raw.into_iter()
                    .map(|(gap, mode, mut by)| {
                        s += 1 + gap * 97;
                        if !by.iter().any(|b| *b) {
                            by[0] = true;
                        }
                        (s, mode, by)
                    })
                    .collect()
            }),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_step_range_gives_exactly_what_the_whole_trial_gives_for_it(
        (workers, steps) in arb_trial(),
        ai in any::<prop::sample::Index>(),
        bi in any::<prop::sample::Index>(),
        da in -1i64..=1,
        db in -1i64..=1,
        open_start in any::<bool>(),
        open_end in any::<bool>(),
        local in any::<bool>(),
    ) {
        let (_dir, url) = fresh("prop", local);
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        write_trial(&store, workers, &steps);
        let whole = Trial::open(&url, TrialOptions::default()).unwrap();
        // Bounds at, just before and just after written steps: where an off-by-one shows.
        let a = (steps[ai.index(steps.len())].0 + da).max(0);
        let b = (steps[bi.index(steps.len())].0 + db).max(a + 1);
        let range = StepRange {
            start: (!open_start).then_some(a),
            end: (!open_end).then_some(b),
        };
        let part = Trial::open(&url, TrialOptions {
            range_steps: range.to_range_steps(),
            ..TrialOptions::default()
        }).unwrap();
        prop_assert_eq!(view(&part, range), view(&whole, range));
        // Nothing outside the range was loaded.
        prop_assert!(part.steps(Mode::Global, true).unwrap().iter().all(|s| range.contains(*s)));
    }

    #[test]
    fn the_last_n_steps_are_the_whole_trials_last_n(
        (workers, steps) in arb_trial(),
        n in 1usize..30,
        end_at in proptest::option::of((any::<prop::sample::Index>(), -1i64..=1)),
        local in any::<bool>(),
    ) {
        let (_dir, url) = fresh("last", local);
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        write_trial(&store, workers, &steps);
        let end = end_at.map(|(i, d)| (steps[i.index(steps.len())].0 + d).max(0));
        let whole = Trial::open(&url, TrialOptions::default()).unwrap();
        let before_end: Vec<i64> = whole.steps(Mode::Global, true).unwrap()
            .into_iter().filter(|s| end.is_none_or(|e| *s < e)).collect();
        let want = &before_end[before_end.len().saturating_sub(n)..];
        let last = Trial::open(&url, TrialOptions {
            last_steps: Some(n),
            range_steps: end.map(|e| (None, Some(e))),
            ..TrialOptions::default()
        }).unwrap();
        prop_assert_eq!(last.steps(Mode::Global, true).unwrap(), want);
        let range = StepRange { start: want.first().copied(), end };
        prop_assert_eq!(view(&last, range), view(&whole, range));
    }
}

/// A store that counts the calls that reach it, by kind.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Storage>,
    lists: AtomicUsize,
    listed: AtomicUsize,
    gets: AtomicUsize,
}

/// Opens the trial at `url` for its last 10 steps over a fresh [`Counting`] store.
fn open_last_10(url: &str, name: &str) -> (Arc<Counting>, Trial) {
    let counting = Arc::new(Counting {
        inner: Location::parse(url).unwrap().open().unwrap(),
        lists: AtomicUsize::new(0),
        listed: AtomicUsize::new(0),
        gets: AtomicUsize::new(0),
    });
    let options = TrialOptions {
        last_steps: Some(10),
        ..TrialOptions::default()
    };
    let t = Trial::from_storage(counting.clone(), url, name.into(), options).unwrap();
    (counting, t)
}

#[async_trait::async_trait]
impl Storage for Counting {
    fn location(&self) -> String {
        self.inner.location()
    }
    async fn list_opts(
        &self,
        prefix: &str,
        options: smdebug_storage::ListOptions<'_>,
    ) -> smdebug_storage::Result<Vec<smdebug_storage::ObjectMeta>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let out = self.inner.list_opts(prefix, options).await?;
        self.listed.fetch_add(out.len(), Ordering::SeqCst);
        Ok(out)
    }
    async fn list_folders(&self, dir: &str) -> smdebug_storage::Result<Vec<String>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_folders(dir).await
    }
    async fn get(&self, key: &str) -> smdebug_storage::Result<bytes::Bytes> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key).await
    }
    async fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> smdebug_storage::Result<bytes::Bytes> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get_range(key, range).await
    }
    async fn put(&self, key: &str, data: bytes::Bytes) -> smdebug_storage::Result<()> {
        self.inner.put(key, data).await
    }
    async fn exists(&self, key: &str) -> smdebug_storage::Result<bool> {
        self.inner.exists(key).await
    }
    async fn delete(&self, key: &str) -> smdebug_storage::Result<()> {
        self.inner.delete(key).await
    }
}

/// Opening the last 10 steps lists the index folders and the newest folder only, and reads
/// 10 index files, whether the trial has 1,500 steps or 4,500.
#[test]
fn opening_the_last_steps_costs_the_same_whatever_the_trials_length() {
    let mut costs = Vec::new();
    for len in [1500i64, 4500] {
        let url = fresh_url("len");
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        let steps: Vec<(i64, Mode, Vec<bool>)> =
            (0..len).map(|s| (s, Mode::Train, vec![true])).collect();
        write_trial(&store, 1, &steps);
        let (counting, t) = open_last_10(&url, "len");
        let want: Vec<i64> = (len - 10..len).collect();
        assert_eq!(t.steps(Mode::Global, false).unwrap(), want);
        let v = t
            .tensor("all/t:0")
            .unwrap()
            .value(len - 1, Mode::Global, None)
            .unwrap();
        assert_eq!(
            v.as_array::<f32>().unwrap().iter().next(),
            Some(&((len - 1) as f32 * 10.0))
        );
        costs.push((
            counting.lists.load(Ordering::SeqCst),
            counting.listed.load(Ordering::SeqCst),
            counting.gets.load(Ordering::SeqCst),
        ));
    }
    // Same listings, same number of index/collections/value reads; keys listed: windows of
    // the newest steps (the newest folder holds 500 steps in both trials, so the window
    // widens to 640 steps before it holds 10) plus the collections file.
    assert_eq!(costs[0], costs[1], "costs {costs:?}");
    assert!(costs[0].1 < 200, "listed {} keys", costs[0].1);
}

/// A trial that saved every step up to the end of an index folder: the last 10 steps cost
/// the folder listing, one window listing of 10 keys, the collections listing, and the
/// first query's refresh (the open reads the window's keys without listing them again);
/// one collections GET, 10 index GETs and one GET of the value.
#[test]
fn the_last_steps_of_a_full_folder_cost_four_listings() {
    for len in [2000i64, 5000] {
        let url = fresh_url("full");
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        let steps: Vec<(i64, Mode, Vec<bool>)> =
            (0..len).map(|s| (s, Mode::Train, vec![true])).collect();
        write_trial(&store, 1, &steps);
        let (counting, t) = open_last_10(&url, "full");
        assert!(!t.loaded_all_steps());
        let want: Vec<i64> = (len - 10..len).collect();
        assert_eq!(t.steps(Mode::Global, false).unwrap(), want);
        assert!(t.loaded_all_steps());
        let v = t
            .tensor("all/t:0")
            .unwrap()
            .value(len - 1, Mode::Global, None)
            .unwrap();
        assert_eq!(
            v.as_array::<f32>().unwrap().iter().next(),
            Some(&((len - 1) as f32 * 10.0))
        );
        let cost = (
            counting.lists.load(Ordering::SeqCst),
            counting.listed.load(Ordering::SeqCst),
            counting.gets.load(Ordering::SeqCst),
        );
        assert_eq!(cost, (4, 11, 12), "len {len}");
    }
}
