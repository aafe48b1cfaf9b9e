//! The candle rows measured in turns: the `paired_steps` bench of smdebug-candle times the
//! demo network without a hook, with the hook at save interval 500, with that hook plus the
//! flight recorder, and with reductions saved at every step, in alternating blocks of steps,
//! so that the machine's slow spells fall on all of them. Three goals are judged on it:
//! interval 500 against no hook (≤ 1 %), reductions every step against no hook (≤ 5 %), the
//! flight recorder against the same hook without it (≤ 5 %). The criterion rows of
//! the same comparisons stay in the table, without a goal: two benches run seconds apart
//! moved by more than the few per cent they compare.
use anyhow::Context;
use serde_json::{json, Value};

/// One comparison of the `paired_steps` bench and its row.
struct Paired {
    /// Its key under `comparisons` in the bench's JSON.
    key: &'static str,
    name: &'static str,
    goal: f64,
    /// The criterion row of the same comparison, which this row follows.
    after: &'static str,
    /// What the baseline is, for the row's baseline column.
    baseline: &'static str,
}

const PAIRED: &[Paired] = &[
    Paired {
        key: "interval_500",
        name: "candle: step with hook at save_interval 500 vs no hook, paired blocks (goal ≤1 %)",
        goal: 0.99,
        after: crate::bench::figures::CRITERION_INTERVAL,
        baseline: "the same network without a hook",
    },
    Paired {
        key: "reductions_every_step",
        name: "candle: step with reductions saved every step vs no hook, paired blocks (goal ≤5 %)",
        goal: 0.95,
        after: crate::bench::figures::CRITERION_REDUCTIONS,
        baseline: "the same network without a hook",
    },
    Paired {
        key: "recorder_n10",
        name: "candle: step with flight recorder N=10 vs the same hook without, paired blocks (goal ≤5 %)",
        goal: 0.95,
        after: crate::bench::figures::CRITERION_RECORDER,
        baseline: "the same hook without the recorder",
    },
];

/// Runs of the bench; each row takes the run with its median figure.
const RUNS: usize = 3;

/// One run of the `paired_steps` bench (its JSON, see the bench's documentation).
fn run(quick: bool) -> anyhow::Result<Value> {
    let out = crate::util::root().join("target/paired_steps.json");
    let _ = std::fs::remove_file(&out);
    let mut cmd = crate::util::cargo();
    cmd.args(["bench", "-p", "smdebug-candle", "--bench", "paired_steps"])
        .env("SMDEBUG_PAIRED_JSON", &out)
        .env("SMDEBUG_PAIRED_ROUNDS", if quick { "100" } else { "300" });
    crate::util::run(&mut cmd)?;
    let text = std::fs::read_to_string(&out)
        .with_context(|| format!("paired_steps wrote no {}", out.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", out.display()))
}

/// Adds the rows of [`PAIRED`] from [`RUNS`] runs of the bench, each after the criterion
/// row of its comparison.
pub(crate) fn rows(rows: &mut Vec<Value>, quick: bool) {
    crate::util::step(&format!("candle paired blocks: {RUNS} runs"));
    let runs: anyhow::Result<Vec<Value>> = (0..RUNS).map(|_| run(quick)).collect();
    for p in PAIRED {
        let row = match &runs {
            Ok(runs) => row(p, runs),
            Err(e) => Err(anyhow::anyhow!("paired runs: {e:#}")),
        };
        let row = row.unwrap_or_else(|e| json!({"name": p.name, "error": format!("{e:#}")}));
        let at = after(rows, p.after);
        rows.insert(at, row);
    }
}

/// The row of `p` from the runs: the run with the median figure.
fn row(p: &Paired, runs: &[Value]) -> anyhow::Result<Value> {
    let (ratios, run) = median(runs, p.key)?;
    let c = &run["comparisons"][p.key];
    Ok(json!({
        "name": format!("{} (median of {RUNS} runs)", p.name),
        "value": c["with_median_seconds"], "unit": "s",
        "baseline": format!(
            "{}, in turns: {} rounds of a {}-step block each (order alternating, a hooked \
             block ends when its writer has caught up), median of the rounds' ratios; \
             median of {RUNS} runs",
            p.baseline, run["rounds"], run["block_steps"]
        ),
        "ratio": ratios[ratios.len() / 2], "goal": p.goal,
        "seconds": c["with_median_seconds"],
        "baseline_seconds": c["without_median_seconds"], "runs": ratios,
        "quartiles": [c["ratio_q1"], c["ratio_q3"]],
    }))
}

/// Where a row goes: after the criterion row named `criterion` (or its median row, whose
/// name adds the number of runs), else at the end.
fn after(rows: &[Value], criterion: &str) -> usize {
    rows.iter()
        .position(|r| r["name"].as_str().is_some_and(|n| n.starts_with(criterion)))
        .map_or(rows.len(), |i| i + 1)
}

/// The runs' figures of comparison `key` (its `ratio_median`), sorted, and the run with
/// the median figure.
fn median(runs: &[Value], key: &str) -> anyhow::Result<(Vec<f64>, Value)> {
    let mut runs: Vec<(f64, &Value)> = runs
        .iter()
        .map(|r| {
            r["comparisons"][key]["ratio_median"]
                .as_f64()
                .map(|x| (x, r))
                .ok_or_else(|| anyhow::anyhow!("no comparisons.{key}.ratio_median in {r}"))
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(!runs.is_empty(), "no runs");
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ratios = runs.iter().map(|r| r.0).collect();
    Ok((ratios, runs[runs.len() / 2].1.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(key: &str, figures: &[f64]) -> Vec<Value> {
        figures
            .iter()
            .map(|r| {
                json!({"rounds": 300, "block_steps": 16,
                       "comparisons": {key: {"ratio_median": r, "with_median_seconds": r}}})
            })
            .collect()
    }

    #[test]
    fn each_row_takes_the_run_with_its_own_median_figure_and_says_what_is_missing() {
        let (ratios, run) = median(&runs("a", &[0.97, 0.91, 0.99]), "a").unwrap();
        assert_eq!(ratios, vec![0.91, 0.97, 0.99]);
        assert_eq!(run["comparisons"]["a"]["ratio_median"], 0.97);
        let e = median(&runs("a", &[0.97]), "b").unwrap_err().to_string();
        assert!(e.contains("no comparisons.b.ratio_median"), "{e}");
    }

    #[test]
    fn a_row_keeps_its_goal_and_the_median_runs_figures() {
        let p = &PAIRED[2];
        let r = row(p, &runs(p.key, &[0.96, 0.93, 0.98])).unwrap();
        assert_eq!(r["ratio"], 0.96);
        assert_eq!(r["goal"], 0.95);
        assert_eq!(r["seconds"], 0.96, "the median run's own time");
        assert_eq!(r["runs"], json!([0.93, 0.96, 0.98]));
    }

    #[test]
    fn a_row_goes_after_the_criterion_row_of_the_same_comparison() {
        let mut rows = vec![
            json!({"name": "before"}),
            json!({"name": format!("{} (median of 3 runs)", PAIRED[2].after)}),
            json!({"name": "after"}),
        ];
        assert_eq!(after(&rows, PAIRED[2].after), 2);
        rows.remove(1);
        assert_eq!(after(&rows, PAIRED[2].after), 2, "none: at the end");
    }

    /// Every comparison follows a criterion row that the bench table has, and none of those
    /// rows keeps a goal of its own (the goal is judged here, once).
    #[test]
    fn every_criterion_row_a_comparison_follows_exists_without_a_goal() {
        for p in PAIRED {
            let f = crate::bench::figures::FIGURES
                .iter()
                .chain(crate::bench::figures::HEALTH_FIGURES)
                .find(|f| f.name == p.after)
                .unwrap_or_else(|| panic!("{}: no criterion row {}", p.key, p.after));
            assert_eq!(f.goal, None, "{}", f.name);
        }
    }
}
