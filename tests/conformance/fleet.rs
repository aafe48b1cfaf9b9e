//! `smdebug rules` over a fleet of trials written by the real smdebug: local and on the S3
//! test server, every trial is found, its verdicts are those it gets alone, a corrupt trial
//! is named and skipped (fatal with `--strict`); and the command's peak memory follows the
//! number of trials evaluated at once, not the fleet's size.

use serde_json::{json, Value};
use smdebug_conformance::{presets_dir, require_s3_server, run_peer_json, smdebug_bin, tempdir};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The rules every run evaluates: one fires on vanishing gradients, one on NaN.
const RULES: [&str; 2] = ["VanishingGradient", "ExplodingTensor:only_nan=True"];
/// Trials evaluated at once.
const JOBS: &str = "3";
/// Healthy and rule-firing trials of the fleet (the corrupt one comes on top).
const TRIALS: usize = 52;
/// The trial whose events file is cut short.
const CORRUPT: &str = "team-b/job-corrupt";

fn preset(name: &str) -> Value {
    let path = presets_dir().join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The fleet: per trial its name below the fleet's folder and its recipe. One kind in
/// four is healthy, one has vanishing gradients, one NaN in a gradient, one two workers;
/// every tenth trial is the `workers` preset (12 workers, TRAIN and EVAL); trials sit one
/// or two folders deep.
fn fleet_plan() -> Vec<(String, Value)> {
    let (small, workers) = (preset("small"), preset("workers"));
    let mut plan = Vec::new();
    for i in 0..TRIALS {
        let many = i % 10 == 9;
        let mut r = if many { workers.clone() } else { small.clone() };
        r["seed"] = json!(1000 + i);
        let gradients = r["tensors"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .filter(|t| t["name"].as_str().unwrap().starts_with("gradient/"));
        match i % 4 {
            1 => gradients.for_each(|t| t["range"] = json!([-1e-9, 1e-9])),
            2 => gradients
                .take(1)
                .for_each(|t| t["inject"] = json!([{"index": 1, "value": "nan"}])),
            3 if !many => r["workers"] = json!(2),
            _ => {}
        }
        let name = match i % 3 {
            0 => format!("team-a/job-{i:02}"),
            1 => format!("team-b/job-{i:02}"),
            _ => format!("team-c/job-{i:02}/debug-output"),
        };
        plan.push((name, r));
    }
    let mut corrupt = small.clone();
    corrupt["seed"] = json!(999);
    plan.push((CORRUPT.to_owned(), corrupt));
    plan
}

/// Writes the fleet with the real smdebug (one Python process) into `dir/fleet`, cuts
/// the corrupt trial's first events file short, and returns the fleet's folder and its
/// trials' names.
fn write_fleet(dir: &Path) -> (PathBuf, Vec<String>) {
    let fleet = dir.join("fleet");
    let recipes = dir.join("recipes");
    std::fs::create_dir_all(&recipes).unwrap();
    let mut plan = Vec::new();
    let mut names = Vec::new();
    for (i, (name, recipe)) in fleet_plan().into_iter().enumerate() {
        let file = recipes.join(format!("{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&recipe).unwrap()).unwrap();
        plan.push(json!({"out": fleet.join(&name), "recipe": file}));
        names.push(name);
    }
    let plan_file = dir.join("plan.json");
    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let written = run_peer_json("fleet_write.py", &[plan_file.to_str().unwrap()]);
    assert_eq!(written["written"], names.len());
    let events = fleet.join(CORRUPT).join("events/000000000000");
    let file = std::fs::read_dir(&events)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    names.sort();
    (fleet, names)
}

fn rules(paths: &[&str], extra: &[&str]) -> Output {
    let mut cmd = Command::new(smdebug_bin());
    cmd.arg("rules").args(paths).arg("--json");
    for r in RULES {
        cmd.args(["--rule", r]);
    }
    cmd.args(extra)
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .expect("run smdebug rules")
}

/// One fleet run's output: per trial its JSON lines without the `trial` field (firings
/// and the summary, sorted: a single trial prints firings as its rules' threads find
/// them), and per skipped trial its error.
#[derive(Debug, Default, PartialEq)]
struct Verdicts {
    lines: BTreeMap<String, Vec<Value>>,
    errors: BTreeMap<String, String>,
}

fn parse_fleet(out: &Output) -> Verdicts {
    let mut v = Verdicts::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut obj: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let trial = obj["trial"]
            .as_str()
            .expect("a line without `trial`")
            .to_owned();
        obj.as_object_mut().unwrap().remove("trial");
        if let Some(e) = obj.get("error") {
            v.errors.insert(trial, e.as_str().unwrap().to_owned());
        } else {
            v.lines.entry(trial).or_default().push(obj);
        }
    }
    v.lines.values_mut().for_each(|l| sort_lines(l));
    v
}

fn sort_lines(lines: &mut [Value]) {
    lines.sort_by_cached_key(Value::to_string);
}

/// `smdebug rules TRIAL --json` alone: its lines without the `trial` field, sorted.
fn alone(trial: &Path) -> (Option<i32>, Vec<Value>) {
    let out = rules(&[trial.to_str().unwrap()], &[]);
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut obj: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            obj.as_object_mut().unwrap().remove("trial");
            obj
        })
        .collect();
    sort_lines(&mut lines);
    (out.status.code(), lines)
}

/// Checks a fleet run against the trials' names and their verdicts alone.
fn check_fleet(
    what: &str,
    out: &Output,
    names: &[String],
    single: &BTreeMap<String, Vec<Value>>,
) -> Verdicts {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: a rule fired\n{stderr}");
    let v = parse_fleet(out);
    let found: BTreeSet<&String> = v.lines.keys().chain(v.errors.keys()).collect();
    assert_eq!(
        found,
        names.iter().collect::<BTreeSet<_>>(),
        "{what}: every trial found"
    );
    assert_eq!(
        v.errors.keys().collect::<Vec<_>>(),
        [CORRUPT],
        "{what}: only the corrupt trial is skipped"
    );
    assert!(
        stderr.contains(CORRUPT),
        "{what}: the skipped trial is named on stderr:\n{stderr}"
    );
    for (name, lines) in &v.lines {
        assert_eq!(Some(lines), single.get(name), "{what}: verdicts of {name}");
    }
    v
}

fn check_strict(what: &str, path: &str) {
    let out = rules(&[path], &["-j", JOBS, "--strict"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what} --strict fails:\n{stderr}"
    );
    assert!(
        stderr.contains(CORRUPT),
        "{what} --strict names it:\n{stderr}"
    );
}

#[test]
fn rules_over_a_fleet_written_by_smdebug_local_and_s3() {
    let dir = tempdir();
    let (fleet, names) = write_fleet(dir.path());
    assert!(names.len() > 50);

    // Every trial alone: the reference verdicts.
    let mut single = BTreeMap::new();
    let mut fired: BTreeMap<String, usize> = BTreeMap::new();
    let mut quiet = 0;
    for name in names.iter().filter(|n| *n != CORRUPT) {
        let (code, lines) = alone(&fleet.join(name));
        let summary = lines
            .iter()
            .find_map(|l| l.get("summary"))
            .unwrap_or_else(|| panic!("{name} alone: no summary line"))
            .clone();
        let firing: Vec<&str> = summary
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["firings"].as_u64().unwrap() > 0)
            .map(|s| s["rule"].as_str().unwrap())
            .collect();
        assert_eq!(code, Some(i32::from(!firing.is_empty())), "{name} alone");
        for r in &firing {
            *fired.entry(r.to_string()).or_default() += 1;
        }
        quiet += usize::from(firing.is_empty());
        single.insert(name.clone(), lines);
    }
    // The fleet holds healthy trials and trials that fire each rule.
    assert!(quiet > 0, "no healthy trial");
    for r in RULES {
        let r = r.split(':').next().unwrap();
        assert!(fired.get(r).copied().unwrap_or(0) > 0, "{r} never fired");
    }
    let (code, _) = alone(&fleet.join(CORRUPT));
    assert_eq!(code, Some(2), "the corrupt trial fails alone");

    let local = fleet.to_str().unwrap();
    let out = rules(&[local], &["-j", JOBS]);
    let local_verdicts = check_fleet("local fleet", &out, &names, &single);
    check_strict("local fleet", local);

    let (_endpoint, bucket) = require_s3_server();
    let url = format!(
        "s3://{bucket}/fleet-conformance/{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let up = run_peer_json("fleet_write.py", &["--upload", local, &url]);
    assert!(up["uploaded"].as_u64().unwrap() > 0);
    let out = rules(&[&format!("{url}/")], &["-j", JOBS]);
    let s3_verdicts = check_fleet("S3 fleet", &out, &names, &single);
    assert_eq!(s3_verdicts.lines, local_verdicts.lines);
    check_strict("S3 fleet", &url);
}

/// Peak resident memory of `smdebug rules` over `fleet` in KiB (`/usr/bin/time`).
fn peak_rss_kib(fleet: &Path, trials: usize) -> u64 {
    let report = fleet.with_extension("time");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f").arg("%M").arg("-o").arg(&report);
    cmd.arg(smdebug_bin()).arg("rules").arg(fleet);
    for r in RULES {
        cmd.args(["--rule", r]);
    }
    let out = cmd
        .args(["--json", "-j", "2"])
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .expect("/usr/bin/time (package `time`) runs smdebug rules");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "smdebug rules over {trials} trials: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"summary\""))
        .count();
    assert_eq!(summaries, trials, "every trial judged");
    let text = std::fs::read_to_string(&report).unwrap();
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {text:?}"))
}

#[test]
fn rules_peak_memory_follows_jobs_not_fleet_size() {
    let dir = tempdir();
    let template = dir.path().join("template");
    let synth = Command::new(smdebug_bin())
        .arg("synth")
        .arg(presets_dir().join("small.json"))
        .arg(&template)
        .arg("-q")
        .output()
        .unwrap();
    assert!(synth.status.success(), "{synth:?}");
    let mut peaks = Vec::new();
    for n in [50, 500] {
        let fleet = dir.path().join(format!("fleet-{n}"));
        std::fs::create_dir_all(&fleet).unwrap();
        for i in 0..n {
            let copy = Command::new("cp")
                .arg("-R")
                .arg(&template)
                .arg(fleet.join(format!("job-{i:03}")))
                .status()
                .unwrap();
            assert!(copy.success());
        }
        peaks.push(peak_rss_kib(&fleet, n));
    }
    let (p50, p500) = (peaks[0], peaks[1]);
    println!("smdebug rules -j 2 peak RSS: 50 trials {p50} KiB, 500 trials {p500} KiB");
    assert!(
        p500 <= 2 * p50,
        "peak RSS grows with the fleet: 50 trials {p50} KiB, 500 trials {p500} KiB"
    );
}
