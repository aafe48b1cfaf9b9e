//! Fleets: `smdebug rules` over many trials (verdicts equal to each trial alone, a corrupt
//! trial named and skipped) and `smdebug watch` over jobs that start while it runs (the
//! one that fires is stopped; killed with SIGKILL and restarted, it logs every firing
//! exactly once; SIGINT and SIGTERM stop it cleanly), and `export --follow` over jobs
//! being written.

use ndarray::arr1;
use serde_json::Value;
use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, TensorValue};
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn smdebug() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smdebug"))
}

/// A training job writing its trial through the Rust hook: a gradient of magnitude
/// `grad(step)` (NaN at `nan_at`), `pause` per step, stopping when a rule asks. Returns
/// the steps trained.
fn train(out: &Path, steps: i64, grad: fn(i64) -> f32, nan_at: &[i64], pause: Duration) -> i64 {
    let mut hook = HookBuilder::new(out.to_str().unwrap())
        .include_collections(["gradients"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .stop_check_interval(Duration::from_millis(5))
        .build()
        .unwrap();
    hook.set_mode(Mode::Train);
    let mut trained = 0;
    for step in 0..steps {
        hook.step().unwrap();
        let m = grad(step);
        let mut g = vec![m, -m, m, -m];
        if nan_at.contains(&step) {
            g[2] = f32::NAN;
        }
        hook.save("gradient/w", TensorValue::from(arr1(&g).into_dyn()))
            .unwrap();
        trained += 1;
        if hook.should_stop() {
            break;
        }
        std::thread::sleep(pause);
    }
    hook.close().unwrap();
    trained
}

fn healthy(_: i64) -> f32 {
    1e-2
}

fn vanishing_from_10(step: i64) -> f32 {
    if step >= 10 {
        1e-9
    } else {
        1e-2
    }
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

const RULES: [&str; 6] = [
    "--rule",
    "VanishingGradient",
    "--rule",
    "ExplodingTensor",
    "--rule",
    "LossNotDecreasing",
];

/// Peer presets, a hook trial whose gradient vanishes, one with a NaN, a corrupt one.
fn fleet(root: &Path) {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    for name in ["small", "modes", "workers", "reductions"] {
        let recipe = Recipe::load(&presets.join(format!("{name}.json"))).unwrap();
        let out = root.join("presets").join(name);
        write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default()).unwrap();
    }
    train(
        &root.join("hook/vanish"),
        14,
        vanishing_from_10,
        &[],
        Duration::ZERO,
    );
    train(&root.join("hook/nan"), 6, healthy, &[2, 4], Duration::ZERO);
    train(&root.join("broken"), 4, healthy, &[], Duration::ZERO);
    std::fs::write(
        root.join("broken/index/000000000/000000000001_worker_0.json"),
        "{not json",
    )
    .unwrap();
}

#[test]
fn rules_over_a_fleet_judge_each_trial_as_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fleet(root);
    let o = smdebug()
        .arg("rules")
        .arg(root)
        .args(RULES)
        .args(["--json", "-j", "2", "--timeout", "5"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("trial broken skipped"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Per trial: its firings (without the trial) and its summary.
    let mut firings: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut summaries: BTreeMap<String, Value> = BTreeMap::new();
    let mut errors = Vec::new();
    for mut line in json_lines(&o) {
        let trial = line["trial"].as_str().unwrap().to_owned();
        if line.get("error").is_some() {
            errors.push(trial);
        } else if let Some(s) = line.get("summary") {
            summaries.insert(trial, s.clone());
        } else {
            line.as_object_mut().unwrap().remove("trial");
            firings.entry(trial).or_default().push(line);
        }
    }
    assert_eq!(errors, ["broken"]);
    let names: Vec<&str> = summaries.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "hook/nan",
            "hook/vanish",
            "presets/modes",
            "presets/reductions",
            "presets/small",
            "presets/workers"
        ]
    );
    assert!(firings["hook/vanish"].iter().any(|f| f["step"] == 10));
    assert!(firings["hook/nan"].iter().any(|f| f["step"] == 4));
    for name in names {
        let alone = smdebug()
            .arg("rules")
            .arg(root.join(name))
            .args(RULES)
            .args(["--json", "--timeout", "5"])
            .output()
            .unwrap();
        let mut lines = json_lines(&alone);
        let summary = lines.pop().unwrap();
        assert_eq!(summary["summary"], summaries[name], "{name}");
        let mut alone: Vec<Value> = lines
            .into_iter()
            .map(|mut l| {
                l.as_object_mut().unwrap().remove("trial");
                l
            })
            .collect();
        let key = |v: &Value| (v["step"].as_i64(), v["rule"].to_string());
        alone.sort_by_key(key);
        let mut fleet = firings.remove(name).unwrap_or_default();
        fleet.sort_by_key(key);
        assert_eq!(fleet, alone, "{name}");
    }

    // The table: one row per trial and rule, the broken trial named.
    let o = smdebug()
        .arg("rules")
        .arg(root.join("hook"))
        .arg(root.join("broken"))
        .args(RULES)
        .args(["--timeout", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let vanish = format!("{}/vanish", root.join("hook").display());
    let row = text
        .lines()
        .find(|l| l.starts_with(&vanish) && l.contains("VanishingGradient"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("fired 4 time(s)") && row.contains(" 10 ") && row.contains("TRAIN 10"),
        "{row}"
    );
    assert!(text.lines().next().unwrap().starts_with("trial"), "{text}");
    assert!(
        text.contains("3 trial(s): 2 with a firing, 1 skipped"),
        "{text}"
    );
    assert!(
        text.contains(&format!("skipped {}", root.join("broken").display())),
        "{text}"
    );

    // --strict: the broken trial is fatal.
    let o = smdebug()
        .arg("rules")
        .arg(root)
        .args(RULES)
        .args(["--strict", "--timeout", "5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("trial broken"));

    // A rule that cannot be built is the command's error, not every trial's.
    let o = smdebug()
        .arg("rules")
        .arg(root.join("hook"))
        .args(["--rule", "VanishingGradient:treshold=1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("treshold") && !stderr.contains("skipped"),
        "{stderr}"
    );
}

/// The rules the watcher runs: VanishingGradient stops training (SageMaker's action
/// string), ExplodingTensor only reports.
fn watch_config(dir: &Path) -> PathBuf {
    let path = dir.join("rules.json");
    let config = serde_json::json!([
        {"RuleConfigurationName": "VanishingGradient", "RuleParameters": {
            "rule_to_invoke": "VanishingGradient",
            "action_json": "{\"name\": \"StopTraining\", \"training_job_prefix\": \"job-2\"}"}},
        {"RuleConfigurationName": "nan", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}},
    ]);
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn watch(root: &Path, config: &Path, state: &Path) -> Command {
    let mut c = smdebug();
    c.arg("watch")
        .arg(root)
        .arg("--config")
        .arg(config)
        .arg("--state")
        .arg(state)
        .args(["--poll", "0.03", "-j", "2", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A job's gradient magnitude per step and the steps holding a NaN.
type JobSpec = (fn(i64) -> f32, &'static [i64]);

/// Jobs 1–4 start 300 ms apart; job-2's gradient vanishes at step 10, job-3 has NaNs.
fn start_jobs<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    root: &'s Path,
    steps: i64,
    pause: Duration,
) -> Vec<std::thread::ScopedJoinHandle<'s, i64>> {
    let jobs: [JobSpec; 4] = [
        (healthy, &[]),
        (vanishing_from_10, &[]),
        (healthy, &[3, 17]),
        (healthy, &[]),
    ];
    jobs.into_iter()
        .enumerate()
        .map(|(i, (grad, nan_at))| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(300 * i as u64));
                train(
                    &root.join(format!("job-{}", i + 1)),
                    steps,
                    grad,
                    nan_at,
                    pause,
                )
            })
        })
        .collect()
}

/// Every firing of the config's rules on each finished trial judged alone.
fn judged_alone(root: &Path) -> BTreeSet<(String, String, i64)> {
    let mut out = BTreeSet::new();
    for i in 1..=4 {
        let name = format!("job-{i}");
        let trial = std::sync::Arc::new(
            smdebug_trial::create_trial(root.join(&name).to_str().unwrap()).unwrap(),
        );
        for (label, rule) in [
            ("VanishingGradient", "VanishingGradient"),
            ("nan", "ExplodingTensor"),
        ] {
            let mut r =
                smdebug_rules::build_rule(rule, &BTreeMap::new(), std::sync::Arc::clone(&trial))
                    .unwrap();
            for f in smdebug_rules::invoke_rule(r.as_mut(), 0, None, false)
                .unwrap()
                .firings
            {
                out.insert((name.clone(), label.to_owned(), f.step));
            }
        }
    }
    out
}

fn firing_log(state: &Path) -> Vec<(String, String, i64)> {
    let mut name = state.as_os_str().to_owned();
    name.push(".firings.jsonl");
    std::fs::read_to_string(PathBuf::from(name))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["trial"].as_str().unwrap().to_owned(),
                v["rule"].as_str().unwrap().to_owned(),
                v["step"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn assert_exactly_once(root: &Path, state: &Path, trained: &[i64], steps: i64) {
    let logged = firing_log(state);
    let unique: BTreeSet<_> = logged.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        logged.len(),
        "a firing logged twice: {logged:?}"
    );
    assert_eq!(unique, judged_alone(root));
    assert!(unique.contains(&("job-2".into(), "VanishingGradient".into(), 10)));
    assert!(unique.contains(&("job-3".into(), "nan".into(), 17)));
    assert!(trained[1] < steps, "job-2 was not stopped: {trained:?}");
    assert!(root.join("job-2/stop_training.smd").exists());
    for i in [0, 2, 3] {
        assert_eq!(trained[i], steps, "job-{} stopped: {trained:?}", i + 1);
        assert!(!root
            .join(format!("job-{}/stop_training.smd", i + 1))
            .exists());
    }
}

#[test]
fn watch_stops_the_job_that_fires_while_jobs_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    std::fs::create_dir_all(&root).unwrap();
    let config = watch_config(dir.path());
    let state = dir.path().join("watch.json");
    let (trained, o) = std::thread::scope(|s| {
        let child = watch(&root, &config, &state)
            .args(["--until-idle", "--idle", "1"])
            .spawn()
            .unwrap();
        let jobs = start_jobs(s, &root, 40, Duration::from_millis(20));
        let o = child.wait_with_output().unwrap();
        let trained: Vec<i64> = jobs.into_iter().map(|j| j.join().unwrap()).collect();
        (trained, o)
    });
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines = json_lines(&o);
    let found = lines.iter().filter(|l| l["event"] == "found").count();
    let ended = lines.iter().filter(|l| l["event"] == "ended").count();
    assert_eq!((found, ended), (4, 4), "{lines:#?}");
    let stop = lines
        .iter()
        .find(|l| l["trial"] == "job-2" && l["rule"] == "VanishingGradient" && l["step"] == 10)
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(stop["actions"], serde_json::json!(["stoptraining"]));
    assert_eq!(stop["mode"], "TRAIN");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["ended"], 4);
    assert_eq!(summary["firings_new"], summary["firings_total"]);
    assert_exactly_once(&root, &state, &trained, 40);
}

/// A small deterministic generator (xorshift), seeded from the clock and printed, so that a
/// failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn watch_killed_and_restarted_logs_every_firing_exactly_once() {
    let seed = std::env::var("SMDEBUG_WATCH_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    println!("SMDEBUG_WATCH_KILL_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    std::fs::create_dir_all(&root).unwrap();
    let config = watch_config(dir.path());
    let state = dir.path().join("watch.json");
    let steps = 60;
    let mut printed: Vec<(String, String, i64)> = Vec::new();
    let mut take_printed = |o: &Output| {
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            // A kill may cut the last line short: only whole JSON lines count.
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let (Some(t), Some(r), Some(s)) =
                (v["trial"].as_str(), v["rule"].as_str(), v["step"].as_i64())
            {
                printed.push((t.to_owned(), r.to_owned(), s));
            }
        }
    };
    let trained = std::thread::scope(|s| {
        let jobs = start_jobs(s, &root, steps, Duration::from_millis(40));
        let started = Instant::now();
        for _ in 0..24 {
            let mut child = watch(&root, &config, &state).spawn().unwrap();
            std::thread::sleep(Duration::from_millis(20 + rng.below(300)));
            child.kill().unwrap(); // SIGKILL
            let o = child.wait_with_output().unwrap();
            take_printed(&o);
        }
        println!("24 kills in {:?}", started.elapsed());
        let o = watch(&root, &config, &state)
            .args(["--until-idle", "--idle", "0.5"])
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        take_printed(&o);
        jobs.into_iter()
            .map(|j| j.join().unwrap())
            .collect::<Vec<i64>>()
    });
    // Reports on standard output are at most once, across all runs.
    let unique: BTreeSet<_> = printed.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        printed.len(),
        "a firing printed twice: {printed:?}"
    );
    assert_exactly_once(&root, &state, &trained, steps);
}

/// SIGINT and SIGTERM stop the watcher cleanly: it exits with its own status (a firing is
/// in the log), not killed by the signal, after printing the summary, with the state saved.
#[test]
fn watch_stops_cleanly_on_a_signal() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("jobs");
        train(&root.join("job-3"), 20, healthy, &[3, 17], Duration::ZERO);
        let config = watch_config(dir.path());
        let state = dir.path().join("watch.json");
        let mut child = watch(&root, &config, &state).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Signalled once it has judged the whole trial: a pass is done.
        let mut lines = Vec::new();
        let until = Instant::now() + Duration::from_secs(60);
        while !lines
            .iter()
            .any(|l: &String| l.contains(r#""event":"ended""#))
        {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(line) => lines.push(line),
                Err(e) => {
                    let _ = child.kill();
                    panic!("{e}: {lines:#?}");
                }
            }
        }
        let pid = child.id().to_string();
        let sent = Command::new("kill").args(["-s", signal, &pid]).status();
        assert!(sent.unwrap().success());
        let until = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > until {
                let _ = child.kill();
                panic!("SIG{signal} did not stop the watcher: {lines:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        reader.join().unwrap();
        lines.extend(rx.try_iter());
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(1), "SIG{signal}: {lines:#?} {stderr}");
        assert!(stderr.contains("stopping"), "{stderr}");
        let summary: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        let summary = &summary["summary"];
        assert_eq!(
            (&summary["ended"], &summary["firings_total"]),
            (&Value::from(1), &Value::from(2)),
            "SIG{signal}: {lines:#?}"
        );
        let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        assert_eq!(saved["trials"]["job-3"]["status"], "ended", "{saved:#}");
    }
}

/// Rows of every CSV part file below `dir` (a header line each).
fn csv_rows(dir: &Path) -> usize {
    let mut rows = 0;
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "csv") {
                let text = std::fs::read_to_string(&path).unwrap();
                rows += text.lines().count().saturating_sub(1);
            }
        }
    }
    rows
}

/// `export --follow` over a fleet whose jobs are still writing: each run's partition gets
/// every step its job wrote, and the marker is written once every job has ended.
#[test]
fn export_follows_a_fleet_while_its_jobs_write() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    let out = dir.path().join("dataset");
    std::fs::create_dir_all(&root).unwrap();
    let (trained, o) = std::thread::scope(|s| {
        let jobs: Vec<_> = [("job-1", &[][..]), ("job-2", &[4][..])]
            .into_iter()
            .map(|(name, nan_at)| {
                let out = root.join(name);
                s.spawn(move || train(&out, 30, healthy, nan_at, Duration::from_millis(50)))
            })
            .collect();
        // The export finds the trials that exist when it starts.
        let until = Instant::now() + Duration::from_secs(30);
        while !["job-1", "job-2"]
            .iter()
            .all(|n| root.join(n).join("index").exists())
        {
            assert!(Instant::now() < until, "the jobs wrote no index");
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = smdebug()
            .arg("export")
            .arg(&root)
            .arg(&out)
            .args(["--follow", "--poll", "0.05", "--format", "csv", "--json"])
            .output()
            .unwrap();
        let trained: Vec<i64> = jobs.into_iter().map(|j| j.join().unwrap()).collect();
        (trained, o)
    });
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(trained, [30, 30]);
    for run in ["job-1", "job-2"] {
        let part = out.join("steps").join(format!("run={run}"));
        assert_eq!(csv_rows(&part), 30, "{run}");
        // Written while the job ran: steps came in several rounds, each its own part file.
        let parts = std::fs::read_dir(part.join("step_bucket=0"))
            .unwrap()
            .count();
        assert!(parts > 1, "{run}: {parts} part file(s)");
    }
    let marker: Value =
        serde_json::from_slice(&std::fs::read(out.join("_SUCCESS")).unwrap()).unwrap();
    let runs: Vec<&str> = marker["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["job-1", "job-2"]);
}
