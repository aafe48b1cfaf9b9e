//! Real framework trials: XGBoost jobs (`xgboost.train`) written by smdebug 1.0.34's own
//! `smdebug.xgboost.Hook` (tests/peer/xgboost_trials.py), generated once per test run.
//!
//! * Our dump of each trial equals the original's, with named differences only.
//! * Every built-in rule that applies runs on each trial; the verdict expected from how the
//!   trial was made (fire or stay silent) is checked.
//!
//! Both tests also keep `docs/src/real-trials.md` current: each owns a generated section
//! of it and fails when the section is stale; `SMDEBUG_BLESS=1` rewrites it.

use crate::trial::{compare, mode_keyerror_ignores, python_dump, rust_dump, NUMERIC_IGNORES};
use smdebug_conformance::run_peer;
use smdebug_rules::{build_rule, invoke_rule, RuleError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The trials xgboost_trials.py writes, in table order.
const TRIALS: [&str; 8] = [
    "binary_healthy",
    "multiclass_softprob",
    "multiclass_softmax",
    "binary_imbalanced",
    "binary_dominant_feature",
    "binary_stalled",
    "regression_healthy",
    "regression_deep_trees",
];

/// The generated trials and the facts the peer script reports about each.
struct Trials {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    facts: serde_json::Value,
}

impl Trials {
    fn path(&self, trial: &str) -> PathBuf {
        self.dir.join(trial)
    }

    fn fact(&self, trial: &str) -> &serde_json::Value {
        &self.facts[trial]
    }
}

/// The trials, written once for all the tests of this module that run at the same time:
/// the first to ask writes them with the real hook, the last to finish removes them.
struct Shared {
    trials: Option<Arc<Trials>>,
    users: usize,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    trials: None,
    users: 0,
});

/// A test's hold on the shared trials.
struct TrialsGuard(Arc<Trials>);

impl std::ops::Deref for TrialsGuard {
    type Target = Trials;
    fn deref(&self) -> &Trials {
        &self.0
    }
}

impl Drop for TrialsGuard {
    fn drop(&mut self) {
        let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        s.users -= 1;
        if s.users == 0 {
            s.trials = None;
        }
    }
}

fn trials() -> TrialsGuard {
    let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let t = match &s.trials {
        Some(t) => t.clone(),
        None => {
            let t = Arc::new(write_trials());
            s.trials = Some(t.clone());
            t
        }
    };
    s.users += 1;
    TrialsGuard(t)
}

fn write_trials() -> Trials {
    {
        let tmp = smdebug_conformance::tempdir();
        let dir = tmp.path().to_path_buf();
        let out = run_peer("xgboost_trials.py", &[dir.to_str().expect("utf-8 path")]);
        let facts: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("xgboost_trials.py prints JSON");
        let names: Vec<&str> = facts
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = TRIALS.to_vec();
        want.sort();
        assert_eq!(names, want, "the trials written");
        Trials {
            _tmp: tmp,
            dir,
            facts,
        }
    }
}

fn f64s(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The generated sections of docs/src/real-trials.md

fn doc_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("docs/src/real-trials.md")
}

/// Replaces the text between `<!-- BEGIN GENERATED {section} -->` and the matching END
/// marker with `body`; with `SMDEBUG_BLESS=1` writes the file, otherwise says (as the
/// error) how it is stale.
fn check_doc_section(section: &str, body: &str) -> Result<(), String> {
    let path = doc_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let begin = format!("<!-- BEGIN GENERATED {section} (tests/conformance/xgboost.rs) -->\n");
    let end = format!("<!-- END GENERATED {section} -->");
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("{} has no line {begin:?}", path.display()))
        + begin.len();
    let stop = start
        + text[start..]
            .find(&end)
            .unwrap_or_else(|| panic!("{} has no line {end:?}", path.display()));
    if &text[start..stop] == body {
        return Ok(());
    }
    if std::env::var_os("SMDEBUG_BLESS").is_some_and(|v| v == "1") {
        let new = format!("{}{body}{}", &text[..start], &text[stop..]);
        std::fs::write(&path, new).expect("write the doc");
        return Ok(());
    }
    Err(format!(
        "{} section {section} is stale; rerun with SMDEBUG_BLESS=1 to rewrite it. It should \
         read:\n{body}",
        path.display()
    ))
}

// ---------------------------------------------------------------------------------------
// Dumps

/// What one dump comparison covered.
#[derive(Default)]
struct DumpFigures {
    tensors: usize,
    steps: usize,
    values: usize,
    computed_reductions: usize,
    named_keyerror: Vec<String>,
    signed_zero: usize,
}

fn figures(doc: &serde_json::Value) -> DumpFigures {
    let mut f = DumpFigures {
        steps: doc["trial"]["steps"]["GLOBAL"]
            .as_array()
            .map_or(0, Vec::len),
        ..DumpFigures::default()
    };
    for t in doc["tensors"].as_object().expect("tensors").values() {
        f.tensors += 1;
        for at in t["at"].as_object().expect("at").values() {
            for w in at["by_worker"].as_object().expect("by_worker").values() {
                f.values += 1;
                f.computed_reductions += w["reduction_value"].as_object().map_or(0, |m| m.len());
            }
        }
    }
    f
}

/// (c) Computed `min`/`max` that differ only in the sign of a zero: when a float array's
/// extreme is a zero of both signs, numpy returns the one its vectorised reduction order
/// keeps, ours the first in element order. The values are equal numbers and still
/// compared; only these byte hashes (which see the sign) are skipped, and only where the
/// two dumps hold a zero whose hashes differ.
fn signed_zero_ignores(py: &serde_json::Value, rs: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let token = |s: &str| s.replace('~', "~0").replace('/', "~1");
    for (name, t) in py["tensors"].as_object().expect("tensors") {
        for (step, at) in t["at"].as_object().expect("at") {
            for (worker, w) in at["by_worker"].as_object().expect("by_worker") {
                for red in ["min", "max"] {
                    let p = &w["reduction_value"][red];
                    let r = &rs["tensors"][name]["at"][step]["by_worker"][worker]
                        ["reduction_value"][red];
                    let zero = |v: &serde_json::Value| {
                        v["dtype"].as_str().is_some_and(|d| d.starts_with("float"))
                            && v["data"][0].as_f64() == Some(0.0)
                    };
                    if zero(p) && zero(r) && p["sha256"] != r["sha256"] {
                        out.push(format!(
                            "/tensors/{}/at/{step}/by_worker/{}/reduction_value/{red}/sha256",
                            token(name),
                            token(worker)
                        ));
                    }
                }
            }
        }
    }
    out
}

/// The reduction of `trees/Category` at the first step, from a dump.
fn category_norm<'a>(doc: &'a serde_json::Value, red: &str) -> &'a serde_json::Value {
    let at = doc["tensors"]["trees/Category"]["at"]
        .as_object()
        .expect("trees/Category is dumped");
    let first = at.values().next().expect("a step");
    let w = first["by_worker"]
        .as_object()
        .and_then(|m| m.values().next())
        .expect("a worker");
    &w["reduction_value"][red]
}

#[test]
fn xgboost_trials_dump_like_python() {
    let t = trials();
    let work = smdebug_conformance::tempdir();
    let mut rows = Vec::new();
    for name in TRIALS {
        let path = t.path(name);
        let path = path.to_str().unwrap();
        let py_path = work.path().join(format!("{name}.py.json"));
        let rs_path = work.path().join(format!("{name}.rs.json"));
        let py = python_dump(path, &py_path);
        let rs = rust_dump(path, &rs_path);

        // (a) the original's tensor_names(mode=M) raises KeyError for a mode the trial
        // never saw (every XGBoost step is GLOBAL); we return no names.
        let keyerror = mode_keyerror_ignores(&py);
        let zeros = signed_zero_ignores(&py, &rs);
        let mut ignores: Vec<String> = NUMERIC_IGNORES.iter().map(|s| s.to_string()).collect();
        ignores.extend(keyerror.iter().cloned());
        ignores.extend(zeros.iter().cloned());
        for (a, b, label) in [
            (&py_path, &rs_path, "Python A, Rust B"),
            (&rs_path, &py_path, "Rust A, Python B"),
        ] {
            let (equal, report) = compare(a, b, &ignores);
            assert!(equal, "{name}: dumps differ ({label}):\n{report}");
        }

        // (b) l1/l2 of the string tensor trees/Category: numpy casts the strings to float
        // ("nan" → NaN) and so do we; compared above without an ignore, checked here to be
        // what the comparison saw.
        for red in ["l1", "l2"] {
            for (doc, side) in [(&py, "python"), (&rs, "rust")] {
                let v = category_norm(doc, red);
                assert_eq!(
                    v["dtype"], "float64",
                    "{name}: {side} trees/Category {red}: {v}"
                );
                assert_eq!(
                    v["data"],
                    serde_json::json!(["NaN"]),
                    "{name}: {side} trees/Category {red}: {v}"
                );
            }
        }

        let mut f = figures(&py);
        let fr = figures(&rs);
        assert_eq!(
            (f.tensors, f.steps, f.values, f.computed_reductions),
            (fr.tensors, fr.steps, fr.values, fr.computed_reductions),
            "{name}: both dumps cover the same"
        );
        assert!(
            f.tensors > 40 && f.steps == 12,
            "{name}: {} tensors, {} steps",
            f.tensors,
            f.steps
        );
        f.named_keyerror = keyerror;
        f.signed_zero = zeros.len();
        rows.push((name, f));
    }

    let mut body = String::from(
        "| trial | tensors | steps | values compared | computed reductions compared | \
         other differences | named (a): `tensor_names(mode=…)` KeyError in the original | \
         named (c): sign of a zero `min`/`max` (hash only) |\n\
         |---|---:|---:|---:|---:|---:|---|---:|\n",
    );
    for (name, f) in &rows {
        let modes: Vec<&str> = f
            .named_keyerror
            .iter()
            .map(|p| p.rsplit('/').next().unwrap())
            .collect();
        body += &format!(
            "| `{name}` | {} | {} | {} | {} | 0 | {} | {} |\n",
            f.tensors,
            f.steps,
            f.values,
            f.computed_reductions,
            if modes.is_empty() {
                "—".to_owned()
            } else {
                modes.join(", ")
            },
            f.signed_zero
        );
    }
    check_doc_section("dumps", &body).unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------
// Rules

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Fires,
    Silent,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Fires => "fires",
            Verdict::Silent => "silent",
        }
    }
}

/// A rule as the table runs it: its name and the parameters it gets (defaults otherwise).
struct RuleRun {
    rule: &'static str,
    params: &'static [(&'static str, &'static str)],
}

/// The rules that apply to an XGBoost trial, with the parameters used.
const APPLIED: &[RuleRun] = &[
    RuleRun {
        rule: "ClassImbalance",
        params: &[],
    },
    RuleRun {
        rule: "Confusion",
        params: &[],
    },
    RuleRun {
        rule: "FeatureImportanceOverweight",
        params: &[],
    },
    RuleRun {
        rule: "TreeDepth",
        params: &[],
    },
    RuleRun {
        rule: "LossNotDecreasing",
        params: &[],
    },
    RuleRun {
        rule: "Overtraining",
        params: &[],
    },
    RuleRun {
        rule: "Overfit",
        params: &[],
    },
    // Not its default selection (every tensor): the hook writes NaN by design in
    // trees/Split for leaf rows, which is not an explosion (docs/src/real-trials.md).
    RuleRun {
        rule: "ExplodingTensor",
        params: &[(
            "collection_names",
            "metrics,predictions,labels,feature_importance,average_shap,full_shap",
        )],
    },
];

fn is_classifier(t: &Trials, trial: &str) -> bool {
    !t.fact(trial)["objective"]
        .as_str()
        .unwrap()
        .starts_with("reg:")
}

/// The expected verdict of `rule` on `trial`, from how the trial was made, and why; `None`
/// where the rule does not apply (regression labels are not classes). Each reason is
/// checked against the trial's facts where they can say it.
fn expected(t: &Trials, trial: &str, rule: &str) -> Option<(Verdict, String)> {
    use Verdict::*;
    let fact = t.fact(trial);
    let classifier = is_classifier(t, trial);
    let (train, val) = {
        let m = fact["metrics"].as_object().unwrap();
        let train = m.keys().find(|k| k.starts_with("train-")).unwrap().clone();
        (
            f64s(&m[&train]),
            f64s(&m[&train.replacen("train-", "validation-", 1)]),
        )
    };
    Some(match rule {
        "ClassImbalance" | "Confusion" if !classifier => return None,
        "ClassImbalance" => {
            let counts: Vec<u64> = fact["val_class_counts"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let ratio = *counts.iter().max().unwrap() as f64 / *counts.iter().min().unwrap() as f64;
            if trial == "binary_imbalanced" {
                assert!(ratio > 10.0, "{trial}: class ratio {ratio}");
                (
                    Fires,
                    format!("class ratio {ratio:.1} > 10 by construction"),
                )
            } else if trial == "binary_stalled" {
                (
                    Fires,
                    "eta 0: every sample is predicted as one class, the other class is all \
                     mispredicted"
                        .into(),
                )
            } else {
                let recall = fact["val_recall"].as_object().unwrap();
                let worst = recall
                    .values()
                    .map(|v| v.as_f64().unwrap())
                    .fold(1.0, f64::min);
                assert!(
                    worst > 0.9 && ratio < 1.2,
                    "{trial}: recall {worst}, ratio {ratio}"
                );
                (
                    Silent,
                    format!("balanced classes (ratio {ratio:.2}), every class recall ≥ {worst:.2}"),
                )
            }
        }
        "Confusion" => {
            let precision = fact["val_precision"].as_object().unwrap();
            let worst = precision
                .values()
                .map(|v| v.as_f64().unwrap())
                .fold(1.0, f64::min);
            if trial == "binary_stalled" {
                (
                    Fires,
                    format!("one predicted class, {worst:.2} of it correct"),
                )
            } else {
                assert!(worst >= 0.93, "{trial}: precision {worst}");
                (
                    Silent,
                    format!("every predicted class ≥ {worst:.2} correct (min_diag 0.9)"),
                )
            }
        }
        "FeatureImportanceOverweight" => {
            let k = fact["label_depends_on"].as_array().unwrap().len();
            if k <= 3 {
                (
                    Fires,
                    format!("the label depends on {k} of 8 features (nfeatures 3, threshold 0.8)"),
                )
            } else {
                (
                    Silent,
                    format!("the label depends on {k} of 8 features about equally"),
                )
            }
        }
        "TreeDepth" => {
            let largest = f64s(&fact["largest_node_id_per_tree"])
                .into_iter()
                .fold(0.0, f64::max);
            let depth = fact["params"]["max_depth"].as_u64().unwrap();
            if depth > 4 {
                (
                    Fires,
                    format!("max_depth {depth}; largest node id {largest}"),
                )
            } else {
                assert!(largest < 32.0, "{trial}: node id {largest}");
                (
                    Silent,
                    format!(
                        "max_depth {depth}: at most {} nodes",
                        (1u32 << (depth + 1)) - 1
                    ),
                )
            }
        }
        "LossNotDecreasing" | "Overtraining" => {
            if trial == "binary_stalled" {
                assert!(train.windows(2).all(|w| w[0] == w[1]), "{trial}: {train:?}");
                (Fires, "eta 0: the loss never moves".into())
            } else if trial == "binary_imbalanced" && rule == "Overtraining" {
                // One clean split separates the classes: the job has converged after a
                // few rounds and trains on (Overtraining's delta is absolute, 0.01).
                assert!(train[3] < 0.02, "{trial}: {train:?}");
                (
                    Fires,
                    format!(
                        "one split separates the classes: the training loss is {:.3} after 4 rounds, later rounds gain less than delta 0.01",
                        train[3]
                    ),
                )
            } else {
                let drop = 1.0 - train[11] / train[0];
                assert!(drop > 0.3, "{trial}: the training loss fell by {drop}");
                (
                    Silent,
                    format!("the training loss falls {:.0} % in 12 rounds", drop * 100.0),
                )
            }
        }
        "Overfit" => {
            let worst = train
                .iter()
                .zip(&val)
                .map(|(t, v)| (v - t) / t)
                .fold(f64::NEG_INFINITY, f64::max);
            if trial == "regression_deep_trees" {
                assert!(worst > 0.5, "{trial}: gap {worst}");
                (
                    Fires,
                    format!("deep trees fit the training set: validation loss up to {:.0} % above training", worst * 100.0),
                )
            } else {
                assert!(worst < 0.09, "{trial}: gap {worst}");
                (
                    Silent,
                    format!(
                        "(validation loss − training loss) / training loss is at most {:+.1} % at every round (ratio_threshold 10 %)",
                        worst * 100.0
                    ),
                )
            }
        }
        "ExplodingTensor" => (
            Silent,
            "finite data and a finite loss: nothing in these collections is NaN or infinite".into(),
        ),
        other => panic!("no expectation for {other}"),
    })
}

/// Runs `rule` over the whole trial; the firings' steps and the first message.
fn run_rule(trial_path: &Path, r: &RuleRun) -> Result<(Vec<i64>, Option<String>), RuleError> {
    let trial = Arc::new(smdebug_trial::create_trial(trial_path.to_str().unwrap())?);
    let params: BTreeMap<String, String> = r
        .params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut rule = build_rule(r.rule, &params, trial)?;
    let eval = invoke_rule(rule.as_mut(), 0, None, false)?;
    Ok((
        eval.firings.iter().map(|f| f.step).collect(),
        eval.firings.first().map(|f| f.message.clone()),
    ))
}

/// An expected verdict, why, and the trials it holds for.
type Reason = (Verdict, String, Vec<&'static str>);

#[test]
fn rules_on_xgboost_trials_give_the_expected_verdicts() {
    let t = trials();
    let mut wrong = Vec::new();
    let mut body = String::from("| rule |");
    for trial in TRIALS {
        body += &format!(" `{trial}` |");
    }
    body += "\n|---|";
    body += &"---|".repeat(TRIALS.len());
    body += "\n";
    // Per rule, the trials that share a verdict and reason, so that each reason is said once.
    let mut reasons: Vec<(&str, Vec<Reason>)> = Vec::new();
    for r in APPLIED {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if params.is_empty() {
            body += &format!("| {} |", r.rule);
        } else {
            body += &format!("| {} ({}) |", r.rule, params.join("; "));
        }
        for trial in TRIALS {
            let Some((want, why)) = expected(&t, trial, r.rule) else {
                body += " n/a |";
                continue;
            };
            let (steps, message) = run_rule(&t.path(trial), r)
                .unwrap_or_else(|e| panic!("{} on {trial}: {e}", r.rule));
            let got = if steps.is_empty() {
                Verdict::Silent
            } else {
                Verdict::Fires
            };
            let mark = if got == want { "✓" } else { "✗" };
            body += &format!(" {} / {} {mark} |", want.word(), got.word());
            if reasons.last().is_none_or(|(rule, _)| *rule != r.rule) {
                reasons.push((r.rule, Vec::new()));
            }
            let groups = &mut reasons.last_mut().unwrap().1;
            match groups.iter_mut().find(|(v, w, _)| *v == want && *w == why) {
                Some(g) => g.2.push(trial),
                None => groups.push((want, why, vec![trial])),
            }
            if got != want {
                wrong.push(format!(
                    "{} on {trial}: expected {}, {} (steps {steps:?}; {})",
                    r.rule,
                    want.word(),
                    got.word(),
                    message.as_deref().unwrap_or("no firing")
                ));
            }
        }
        body += "\n";
    }
    body += "\nCells: expected / actual. Why each expectation holds:\n\n";
    for (rule, groups) in &reasons {
        for (verdict, why, trials) in groups {
            let names: Vec<String> = trials.iter().map(|t| format!("`{t}`")).collect();
            body += &format!(
                "- {rule} {} on {}: {why}.\n",
                verdict.word(),
                names.join(", ")
            );
        }
    }
    // The doc shows the table as it is (✗ cells too), so it is written before the verdicts
    // are judged.
    let doc = check_doc_section("verdicts", &body);
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
    doc.unwrap_or_else(|e| panic!("{e}"));
}
