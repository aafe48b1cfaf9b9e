//! The watcher over jobs that start one after another while it runs: firings recorded
//! once, the stop signal obeyed, verdicts equal to each trial judged alone, and restarts
//! that record nothing twice.

use crate::common::{healthy, start_job, vanishing_from_5, write_job, write_job_step, Job};
use smdebug_fleet::{FiringLog, FleetError, TrialStatus, WatchOptions, WatchRule, Watcher};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn rules() -> Vec<WatchRule> {
    vec![
        WatchRule {
            label: "VanishingGradient".into(),
            name: "VanishingGradient".into(),
            params: BTreeMap::new(),
            stop_training: true,
        },
        WatchRule {
            label: "nan".into(),
            name: "ExplodingTensor".into(),
            params: BTreeMap::new(),
            stop_training: false,
        },
    ]
}

fn options(root: &Path, state: &Path) -> WatchOptions {
    let mut o = WatchOptions::new(vec![root.to_str().unwrap().to_owned()], rules());
    o.state = Some(state.to_owned());
    o.log = Some(state.with_extension("firings.jsonl"));
    o.poll = Duration::from_millis(20);
    o.until_idle = true;
    o.idle = Duration::from_millis(500);
    o.jobs = 2;
    o
}

/// (trial, rule label, step) of every firing of each rule on each finished trial judged
/// alone with `invoke_rule`.
fn judged_alone(root: &Path, names: &[&str]) -> BTreeSet<(String, String, i64)> {
    judged_alone_counted(root, names).0
}

/// [`judged_alone`] and the steps the rules evaluated, all together.
fn judged_alone_counted(root: &Path, names: &[&str]) -> (BTreeSet<(String, String, i64)>, u64) {
    let mut out = BTreeSet::new();
    let mut steps = 0;
    for name in names {
        let trial = std::sync::Arc::new(
            smdebug_trial::create_trial(root.join(name).to_str().unwrap()).unwrap(),
        );
        for r in rules() {
            let mut rule =
                smdebug_rules::build_rule(&r.name, &r.params, std::sync::Arc::clone(&trial))
                    .unwrap();
            let eval = smdebug_rules::invoke_rule(rule.as_mut(), 0, None, false).unwrap();
            steps += eval.steps_evaluated;
            for f in eval.firings {
                out.insert((name.to_string(), r.label.clone(), f.step));
            }
        }
    }
    (out, steps)
}

fn logged(log: &Path) -> Vec<(String, String, i64)> {
    let (_, records) = FiringLog::open(log).unwrap();
    records
        .into_iter()
        .map(|r| (r.trial, r.rule, r.step))
        .collect()
}

#[test]
fn watches_jobs_as_they_start_and_stops_the_one_that_fires() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    std::fs::create_dir_all(&root).unwrap();
    let state = dir.path().join("watch.json");
    let jobs = [
        ("job-1", healthy as fn(i64) -> f32, &[][..]),
        ("job-2", vanishing_from_5, &[][..]),
        ("job-3", healthy, &[3, 7][..]),
    ];
    let written = std::thread::scope(|s| {
        let writers: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, (name, grad, nan_at))| {
                let out = root.join(name);
                s.spawn(move || {
                    std::thread::sleep(Duration::from_millis(250 * i as u64));
                    let job = Job {
                        steps: 40,
                        grad: *grad,
                        nan_at,
                        pause: Duration::from_millis(15),
                    };
                    write_job(&out, &job)
                })
            })
            .collect();
        let mut watcher = Watcher::new(options(&root, &state)).unwrap();
        let events = std::sync::Mutex::new(Vec::new());
        let summary = watcher
            .run(
                &|e| events.lock().unwrap().push(format!("{e:?}")),
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(
            (summary.trials, summary.ended, summary.broken),
            (3, 3, 0),
            "{summary:?}"
        );
        assert_eq!(summary.firings_new, summary.firings_total);
        let events = events.into_inner().unwrap();
        let fired = events.iter().filter(|e| e.starts_with("Fired")).count() as u64;
        assert_eq!(fired, summary.firings_new, "{events:#?}");
        writers
            .into_iter()
            .map(|w| w.join().unwrap())
            .collect::<Vec<i64>>()
    });
    assert_eq!(written[0], 40);
    assert_eq!(written[2], 40);
    assert!(written[1] < 40, "job-2 was not stopped: {written:?}");
    assert!(root.join("job-2/stop_training.smd").exists());
    assert!(!root.join("job-1/stop_training.smd").exists());

    let log = state.with_extension("firings.jsonl");
    let got = logged(&log);
    let unique: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(unique.len(), got.len(), "a firing logged twice: {got:?}");
    assert_eq!(unique, judged_alone(&root, &["job-1", "job-2", "job-3"]));
    assert!(unique.contains(&("job-2".into(), "VanishingGradient".into(), 5)));
    assert!(unique.contains(&("job-3".into(), "nan".into(), 7)));

    // A restart finds everything done: nothing recorded again.
    let mut again = Watcher::new(options(&root, &state)).unwrap();
    let s = again.run(&|_| {}, &AtomicBool::new(false)).unwrap();
    assert_eq!((s.firings_new, s.firings_total), (0, got.len() as u64));
    assert!(again
        .state()
        .trials
        .values()
        .all(|t| t.status == TrialStatus::Ended));
    // Even with the state lost, the log keeps every firing once.
    std::fs::remove_file(&state).unwrap();
    let mut fresh = Watcher::new(options(&root, &state)).unwrap();
    let s = fresh.run(&|_| {}, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.firings_new, 0);
    assert_eq!(logged(&log), got);

    // A state made for other rules is refused.
    let mut other = options(&root, &state);
    other.rules.pop();
    assert!(matches!(
        Watcher::new(other),
        Err(FleetError::Corrupt { .. })
    ));
}

#[test]
fn a_corrupt_trial_is_given_up_and_the_others_watched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    let job = Job {
        steps: 8,
        grad: vanishing_from_5,
        nan_at: &[],
        pause: Duration::ZERO,
    };
    write_job(&root.join("good"), &job);
    write_job(&root.join("bad"), &job);
    crate::common::corrupt(&root.join("bad"));
    let mut o = options(&root, &dir.path().join("state.json"));
    o.idle = Duration::ZERO;
    let mut watcher = Watcher::new(o).unwrap();
    let failures = std::sync::Mutex::new(Vec::new());
    let summary = watcher
        .run(
            &|e| {
                if let smdebug_fleet::WatchEvent::Failed { trial, broken, .. } = e {
                    failures.lock().unwrap().push((trial.to_string(), *broken));
                }
            },
            &AtomicBool::new(false),
        )
        .unwrap();
    assert_eq!((summary.ended, summary.broken), (1, 1));
    assert_eq!(
        failures.into_inner().unwrap(),
        [
            ("bad".into(), false),
            ("bad".into(), false),
            ("bad".into(), true)
        ]
    );
    let state = &watcher.state().trials["bad"];
    assert!(
        state
            .error
            .as_deref()
            .unwrap_or("")
            .contains("000000000000_worker_0.json"),
        "{state:?}"
    );
    // The good trial fired from step 5 on (steps 5, 6, 7).
    assert_eq!(summary.firings_total, 3);
}

/// Three live trials and one job: each pass evaluates every trial, one at a time, and a
/// trial's next pass starts where its rules stopped, never at step 0 again. The steps
/// evaluated over the passes add up to those of each trial judged alone once, and the
/// firings are the same.
#[test]
fn more_live_trials_than_jobs_resume_where_their_rules_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    let names = ["job-a", "job-b", "job-c"];
    let jobs = [
        Job {
            steps: 30,
            grad: healthy,
            nan_at: &[3, 17, 25],
            pause: Duration::ZERO,
        },
        Job {
            steps: 30,
            grad: vanishing_from_5,
            nan_at: &[],
            pause: Duration::ZERO,
        },
        Job {
            steps: 30,
            grad: healthy,
            nan_at: &[],
            pause: Duration::ZERO,
        },
    ];
    let stores: Vec<_> = names.iter().map(|n| start_job(&root.join(n))).collect();
    let mut o = options(&root, &dir.path().join("state.json"));
    o.jobs = 1;
    let mut watcher = Watcher::new(o).unwrap();
    let mut evaluated = Vec::new();
    for steps in [0..10, 10..20, 20..30] {
        for step in steps {
            for (store, job) in stores.iter().zip(&jobs) {
                write_job_step(store, job, step);
            }
        }
        watcher.pass(&|_| {}).unwrap();
        evaluated.push(watcher.summary().steps_evaluated);
    }
    for store in &stores {
        smdebug_synth::steps::write_end_marker(store).unwrap();
    }
    watcher.pass(&|_| {}).unwrap();
    let summary = watcher.summary();
    assert_eq!((summary.ended, summary.live), (3, 0), "{summary:?}");
    let (firings, steps) = judged_alone_counted(&root, &names);
    assert_eq!(
        summary.steps_evaluated, steps,
        "steps evaluated after each pass: {evaluated:?}"
    );
    // Each pass evaluated only what was new (with one worker a step is complete once it
    // is written): ten steps per trial and rule each time, none at the end.
    let steps_by = |n: u64| n * names.len() as u64 * rules().len() as u64;
    assert_eq!(evaluated, [steps_by(10), steps_by(20), steps_by(30)]);
    let log = dir.path().join("state.firings.jsonl");
    let got: BTreeSet<_> = logged(&log).into_iter().collect();
    assert_eq!(got, firings);
    assert!(got.contains(&("job-a".into(), "nan".into(), 17)));
}
