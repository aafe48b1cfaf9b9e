//! Reads what the report shows from a trial: every value through the Trial API, bounded so
//! that a trial of 100,000 steps or 512 workers still gives a small page.

use crate::data::*;
use crate::{Progress, ReportError, ReportOptions, Result, RuleChoice, StepRange};
use regex::Regex;
use smdebug_config::Mode;
use smdebug_fleet::{RuleOutcome, RuleSpec, Schedule, TrialRules};
use smdebug_index::{classify_key, TrialFile};
use smdebug_record::TensorValue;
use smdebug_storage::BlockingStore;
use smdebug_trial::parallel::for_each_ordered;
use smdebug_trial::{AnalysisError, Trial, TrialError, TrialOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Collections (and name patterns) whose tensors are drawn as loss/scalar curves.
const SCALAR_COLLECTIONS: &[&str] = &["losses", "scalars", "metrics", "sm_metrics"];
/// Activation collections and what is drawn for them.
const ACTIVATION_COLLECTIONS: &[(&str, Activation)] = &[
    ("relu_output", Activation::Relu),
    ("relu_input", Activation::Relu),
    ("tanh_input", Activation::Tanh),
    ("sigmoid_input", Activation::Sigmoid),
];
/// A unit is dead when it is active on fewer than this percent of samples (DeadRelu's
/// default `threshold_inactivity`).
const INACTIVITY_PERCENT: f64 = 1.0;
/// SaturatedActivation's default thresholds.
const TANH_SATURATED: (f64, f64) = (-9.4999, 9.4999);
const SIGMOID_SATURATED: (f64, f64) = (-23.0, 16.99999);
/// Histogram bins.
pub(crate) const BINS: usize = 30;
/// Most missing (worker, step) pairs listed by name.
const MISSING_LISTED: usize = 100;
/// Most steps of a scalar series read one by one rather than in one pass over the mode.
const SHORT_RANGE: usize = 64;
/// Most firings kept per rule.
const FIRINGS_KEPT: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activation {
    Relu,
    Tanh,
    Sigmoid,
}

/// Builds the report's data from the trial at `path`.
pub fn collect(
    path: &str,
    trial_options: &TrialOptions,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> Result<ReportData> {
    let range = options.steps;
    // Only the range's index files are listed and read (docs/src/scale.md); the rules'
    // readers get the same options.
    let trial_options = &TrialOptions {
        range_steps: range.to_range_steps().or(trial_options.range_steps),
        ..trial_options.clone()
    };
    let trial = Trial::open(path, trial_options.clone())?;
    collect_open(&trial, trial_options, options, progress)
}

/// The tensors of each kind the report draws.
pub(crate) struct Kinds {
    /// Loss and scalar curves.
    pub scalars: Vec<String>,
    /// Gradients (their norms).
    pub gradients: Vec<String>,
    /// Weights (norms and update ratios).
    pub weights: Vec<String>,
    /// Activations and how they are judged.
    activations: Vec<(String, Activation)>,
}

/// Sorts the trial's tensors into the kinds the report draws, by collection and name.
pub(crate) fn kinds(trial: &Trial, names: &[String]) -> Result<Kinds> {
    let collections = trial.collections();
    let in_collection = |c: &str, name: &str| {
        collections
            .get(c)
            .is_some_and(|c| c.contains(name).unwrap_or(false))
    };
    let scalar_re = Regex::new(r"(?i)(loss|accuracy|metric)").map_err(ReportError::regex)?;
    let gradients: Vec<String> = names
        .iter()
        .filter(|n| in_collection("gradients", n) || n.starts_with("gradient"))
        .cloned()
        .collect();
    let scalars = names
        .iter()
        .filter(|n| !gradients.contains(n))
        .filter(|n| SCALAR_COLLECTIONS.iter().any(|c| in_collection(c, n)) || scalar_re.is_match(n))
        .cloned()
        .collect();
    let weights = names
        .iter()
        .filter(|n| !gradients.contains(n) && in_collection("weights", n))
        .cloned()
        .collect();
    let activations = names
        .iter()
        .filter_map(|n| {
            ACTIVATION_COLLECTIONS
                .iter()
                .find(|(c, _)| in_collection(c, n) || n.contains(c))
                .map(|(_, a)| (n.clone(), *a))
        })
        .collect();
    Ok(Kinds {
        scalars,
        gradients,
        weights,
        activations,
    })
}

/// [`collect`] over a trial already open (with `trial_options`, which the rules' readers
/// also get).
pub fn collect_open(
    trial: &Trial,
    trial_options: &TrialOptions,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> Result<ReportData> {
    let range = options.steps;
    let path = trial.path();
    let global = steps_in(trial.steps(Mode::Global, false)?, range);
    let names = trial.tensor_names()?;
    let collections = trial.collections();

    let mut omitted = Vec::new();
    let mut bounded = |kind: &str, mut v: Vec<String>, max: usize| -> Vec<String> {
        if v.len() > max {
            omitted.push(format!(
                "{kind}: {} of {} tensors drawn (the first by name)",
                max,
                v.len()
            ));
            v.truncate(max);
        }
        v
    };
    let Kinds {
        scalars,
        gradients: gradient_names,
        weights,
        activations,
    } = kinds(trial, &names)?;
    let scalars = bounded("scalars", scalars, options.max_panels);
    let gradient_names = bounded("gradient norms", gradient_names, options.max_panels);
    let weights = bounded("weight norms", weights, options.max_panels);
    let activation_names = bounded(
        "activations",
        activations.iter().map(|(n, _)| n.clone()).collect(),
        options.max_panels,
    );
    let activations: Vec<(String, Activation)> = activations
        .into_iter()
        .filter(|(n, _)| activation_names.contains(n))
        .collect();

    let health = Mutex::new(Vec::<Finding>::new());
    let work = (scalars.len() + gradient_names.len() + weights.len() + activations.len()) as u64;
    progress.phase("reading tensors", work);

    let scalar_charts = scalars
        .iter()
        .map(|n| {
            let c = scalar_chart(trial, n, range, options.max_embedded, &health);
            progress.advance(1);
            c
        })
        .collect::<Result<Vec<_>>>()?;
    let threads = options.threads.max(1);
    let norm_jobs: Vec<(String, bool)> = gradient_names
        .iter()
        .map(|n| (n.clone(), false))
        .chain(weights.iter().map(|n| (n.clone(), true)))
        .collect();
    let norms = parallel(&norm_jobs, threads, |(n, w)| {
        let r = norm_charts(trial, n, *w, range, options.max_points, &health);
        progress.advance(1);
        r
    })?;
    let mut gradient_norms = Vec::new();
    let mut weight_norms = Vec::new();
    let mut update_ratios = Vec::new();
    for ((_, is_weight), (norm, ratio)) in norm_jobs.iter().zip(norms) {
        if *is_weight {
            weight_norms.push(norm);
            update_ratios.extend(ratio);
        } else {
            gradient_norms.push(norm);
        }
    }
    let activation_charts = parallel(&activations, threads, |(n, a)| {
        let r = activation_chart(trial, n, *a, range, options.max_points);
        progress.advance(1);
        r
    })?;

    let histogram_names: Vec<&String> = match &options.histogram_tensors {
        Some(re) => names.iter().filter(|n| re.is_match(n)).collect(),
        None => weights
            .iter()
            .take(2)
            .chain(gradient_names.iter().take(2))
            .chain(activation_names.iter().take(1))
            .collect(),
    };
    let histogram_names: Vec<&String> = histogram_names
        .into_iter()
        .take(options.histogram_tensors_max)
        .collect();
    progress.phase("histograms", histogram_names.len() as u64);
    let mut histograms = Vec::new();
    for n in histogram_names {
        histograms.extend(histograms_of(trial, n, range, options.histogram_steps)?);
        progress.advance(1);
    }

    let workers = trial.workers()?;
    let store = BlockingStore::new(Arc::clone(trial.storage()))?;
    let listing = store.list("", None)?;
    let size_bytes = listing.iter().map(|m| m.size).sum();
    let completeness = if workers.len() > 1 || trial.num_workers() > 1 {
        Some(completeness(
            &workers,
            &listing.iter().map(|m| m.key.as_str()).collect::<Vec<_>>(),
            &global,
            options.max_heatmap,
        ))
    } else {
        None
    };

    let last = global.last().copied();
    let mut choices = options.rules.clone();
    if options.default_rules {
        choices.extend(crate::default_rules(trial.modes().contains(&Mode::Train)));
    }
    let rules = run_rules(
        path,
        trial_options,
        &choices,
        range.start.unwrap_or(0),
        range.end.or(last.map(|l| l + 1)).unwrap_or(0),
        progress,
        &health,
    );

    let mut modes = Vec::new();
    for m in trial.modes() {
        let steps = trial.steps(m, false)?;
        let mut g = Vec::new();
        for s in steps {
            let gs = trial.global_step(m, s)?.unwrap_or(s);
            if range.contains(gs) {
                g.push(gs);
            }
        }
        modes.push(ModeSteps {
            mode: m.to_string(),
            steps: g.len(),
            first: g.first().copied(),
            last: g.last().copied(),
        });
    }
    let summary = Summary {
        trial: path.to_owned(),
        workers,
        modes,
        global_steps: global.len(),
        collections: collections
            .iter()
            .map(|(n, c)| {
                (
                    n.clone(),
                    names
                        .iter()
                        .filter(|t| c.contains(t).unwrap_or(false))
                        .count(),
                )
            })
            .collect(),
        tensors: names.len(),
        size_bytes,
        training_ended: trial.has_training_ended()?,
        step_range: (range.start.is_some() || range.end.is_some()).then(|| {
            (
                range.start.unwrap_or(i64::MIN),
                range.end.unwrap_or(i64::MAX),
            )
        }),
    };
    let mut health = health.into_inner().unwrap_or_else(|p| p.into_inner());
    health.sort_by(|a, b| (a.step, &a.tensor).cmp(&(b.step, &b.tensor)));
    Ok(ReportData {
        schema: SCHEMA,
        summary,
        scalars: scalar_charts,
        gradient_norms,
        weight_norms,
        update_ratios,
        activations: activation_charts,
        histograms,
        completeness,
        rules,
        health,
        omitted,
    })
}

/// `items.iter().map(f)` on up to `threads` threads (this one included), through the
/// trial's own loop; the first error stops the rest.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let mut out = Vec::with_capacity(items.len());
    for_each_ordered(items, threads, 1, "smdebug-report", f, |_, r| {
        out.push(r?);
        Ok::<(), ReportError>(())
    })?;
    Ok(out)
}

/// The elements of a real value as f64 (`None` for strings and complex numbers).
pub(crate) fn values_f64(value: &TensorValue) -> Option<Vec<f64>> {
    value.to_f64_vec()
}

/// A one-number summary of a value: the element itself for one element, else the mean.
fn scalar_of(value: &TensorValue) -> Option<f64> {
    let v = values_f64(value)?;
    match v.len() {
        0 => None,
        1 => Some(v[0]),
        n => Some(v.iter().sum::<f64>() / n as f64),
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The steps of `steps` that `range` holds (the report's `--steps`).
fn steps_in(steps: Vec<i64>, range: StepRange) -> Vec<i64> {
    steps.into_iter().filter(|&s| range.contains(s)).collect()
}

/// `n` evenly spaced items of `steps` (all of them when there are at most `n`), always
/// with the first and the last.
pub(crate) fn sample(steps: &[i64], n: usize) -> (Vec<i64>, bool) {
    if steps.len() <= n || n < 2 {
        return (steps.to_vec(), false);
    }
    let mut out: Vec<i64> = (0..n)
        .map(|i| steps[i * (steps.len() - 1) / (n - 1)])
        .collect();
    out.dedup();
    (out, true)
}

fn note_non_finite(health: &Mutex<Vec<Finding>>, tensor: &str, step: i64, what: &str) {
    let mut h = health.lock().unwrap_or_else(|p| p.into_inner());
    // One finding per tensor: the first step where it went non-finite.
    if let Some(f) = h
        .iter_mut()
        .find(|f| f.source == "reader" && f.tensor.as_deref() == Some(tensor))
    {
        if step < f.step {
            f.step = step;
            f.message = format!("first non-finite {what} at step {step}");
        }
        return;
    }
    h.push(Finding {
        source: "reader".into(),
        step,
        tensor: Some(tensor.to_owned()),
        message: format!("first non-finite {what} at step {step}"),
    });
}

/// A value whose absence is expected (a reduction-only step): `Ok(None)`.
fn optional<T>(r: smdebug_trial::Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(TrialError::Analysis(AnalysisError::TensorUnavailableForStep { .. })) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One scalar tensor's curve per mode over the steps of `range` (at most `max_embedded`
/// points per mode, an even sample beyond); a non-finite value is a gap and a finding.
pub(crate) fn scalar_chart(
    trial: &Trial,
    name: &str,
    range: StepRange,
    max_embedded: usize,
    health: &Mutex<Vec<Finding>>,
) -> Result<Chart> {
    let t = trial.tensor(name)?;
    let mut series = Vec::new();
    let mut modes: Vec<Mode> = trial.modes();
    // A trial written without modes has only GLOBAL; otherwise each mode gets its own line.
    if modes.len() > 1 {
        modes.retain(|m| *m != Mode::Global);
    }
    if modes.is_empty() {
        modes.push(Mode::Global);
    }
    for mode in modes {
        let mode_steps = t.steps(mode, false)?;
        if mode_steps.is_empty() {
            continue;
        }
        let mut pairs: Vec<(i64, i64)> = Vec::with_capacity(mode_steps.len());
        for ms in mode_steps {
            let g = if mode == Mode::Global {
                ms
            } else {
                trial.global_step(mode, ms)?.unwrap_or(ms)
            };
            if range.contains(g) {
                pairs.push((g, ms));
            }
        }
        let all: Vec<i64> = pairs.iter().map(|p| p.1).collect();
        let (kept, sampled) = sample(&all, max_embedded);
        let keep: BTreeSet<i64> = kept.iter().copied().collect();
        pairs.retain(|p| keep.contains(&p.1));
        // A short range (the steps new since a live page last looked) reads only its own
        // steps; a long one reads the mode's values in one pass.
        let read_all = if pairs.len() > SHORT_RANGE {
            optional(t.values(mode, None))?
        } else {
            None
        };
        let mut values = Vec::with_capacity(pairs.len());
        for &(g, ms) in &pairs {
            let v = match read_all.as_ref().and_then(|m| m.get(&ms)) {
                Some(v) => scalar_of(v),
                None => optional(t.value(ms, mode, None))?
                    .as_deref()
                    .and_then(scalar_of)
                    .or(optional(t.reduction_value(ms, "mean", mode, None, false))?
                        .as_deref()
                        .and_then(scalar_of)),
            };
            if v.is_some_and(|x| !x.is_finite()) {
                note_non_finite(health, name, g, "value");
            }
            values.push(v.and_then(finite));
        }
        series.push(Series {
            label: mode.to_string(),
            steps: pairs.iter().map(|p| p.0).collect(),
            mode_steps: if mode == Mode::Global {
                Vec::new()
            } else {
                pairs.iter().map(|p| p.1).collect()
            },
            values,
            sampled,
        });
    }
    Ok(Chart {
        title: name.to_owned(),
        series,
    })
}

fn l2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The L2 norm over sampled steps; for weights also the update ratio to the saved step
/// before each.
pub(crate) fn norm_charts(
    trial: &Trial,
    name: &str,
    is_weight: bool,
    range: StepRange,
    max_points: usize,
    health: &Mutex<Vec<Finding>>,
) -> Result<(Chart, Option<Chart>)> {
    let t = trial.tensor(name)?;
    let all = steps_in(t.steps(Mode::Global, false)?, range);
    let (steps, sampled) = sample(&all, max_points);
    let mut norm_values = Vec::with_capacity(steps.len());
    let mut ratio_steps = Vec::new();
    let mut ratio_values = Vec::new();
    // The previous saved step's value, when it is the one just read.
    let mut prev: Option<(i64, Vec<f64>)> = None;
    for &s in &steps {
        let raw = optional(t.value(s, Mode::Global, None))?;
        let flat = raw.as_deref().and_then(values_f64);
        let norm = match &flat {
            Some(v) => Some(l2(v)),
            None => optional(t.reduction_value(s, "l2", Mode::Global, None, false))?
                .as_deref()
                .and_then(scalar_of),
        };
        if norm.is_some_and(|x| !x.is_finite()) {
            note_non_finite(health, name, s, "L2 norm");
        }
        norm_values.push(norm.and_then(finite));
        if is_weight {
            if let Some(cur) = &flat {
                let before = all.partition_point(|&x| x < s);
                let p = before.checked_sub(1).map(|i| all[i]);
                let previous = match (p, &prev) {
                    (Some(p), Some((ps, pv))) if *ps == p => Some(pv.clone()),
                    (Some(p), _) => optional(t.value(p, Mode::Global, None))?
                        .as_deref()
                        .and_then(values_f64),
                    (None, _) => None,
                };
                if let Some(pv) = previous.filter(|pv| pv.len() == cur.len()) {
                    let diff: f64 = cur
                        .iter()
                        .zip(&pv)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                        .sqrt();
                    let base = l2(&pv);
                    ratio_steps.push(s);
                    ratio_values.push(finite(diff / base));
                }
            }
            prev = flat.map(|v| (s, v));
        }
    }
    let chart = Chart {
        title: name.to_owned(),
        series: vec![Series {
            label: "l2".into(),
            steps,
            mode_steps: Vec::new(),
            values: norm_values,
            sampled,
        }],
    };
    let ratio = (is_weight && !ratio_steps.is_empty()).then(|| Chart {
        title: name.to_owned(),
        series: vec![Series {
            label: "update ratio".into(),
            steps: ratio_steps,
            mode_steps: Vec::new(),
            values: ratio_values,
            sampled,
        }],
    });
    Ok((chart, ratio))
}

/// Fraction of dead (ReLU) or saturated (tanh, sigmoid) units at sampled steps. A value of
/// shape `[samples, units…]` is judged per unit as the rules do (a unit is dead or
/// saturated when fewer than 1 % of samples are active); other shapes element by element.
fn activation_chart(
    trial: &Trial,
    name: &str,
    kind: Activation,
    range: StepRange,
    max_points: usize,
) -> Result<Chart> {
    let t = trial.tensor(name)?;
    let all = steps_in(t.steps(Mode::Global, false)?, range);
    let (steps, sampled) = sample(&all, max_points);
    let mut values = Vec::with_capacity(steps.len());
    let mut kept = Vec::with_capacity(steps.len());
    for &s in &steps {
        let Some(v) = optional(t.value(s, Mode::Global, None))? else {
            continue;
        };
        let Some(flat) = values_f64(&v) else {
            continue;
        };
        let active = |x: f64| match kind {
            Activation::Relu => x > 0.0,
            Activation::Tanh => x > TANH_SATURATED.0 && x < TANH_SATURATED.1,
            Activation::Sigmoid => x > SIGMOID_SATURATED.0 && x < SIGMOID_SATURATED.1,
        };
        let shape = v.shape();
        let samples = if shape.len() >= 2 { shape[0] } else { 1 };
        let units = flat.len().checked_div(samples).unwrap_or(0);
        let mut off = 0usize;
        let mut judged = 0usize;
        for u in 0..units {
            let mut on = 0usize;
            let mut n = 0usize;
            for smp in 0..samples {
                let x = flat[smp * units + u];
                if x.is_finite() {
                    n += 1;
                    on += usize::from(active(x));
                }
            }
            if n > 0 {
                judged += 1;
                if (on as f64) * 100.0 / (n as f64) < INACTIVITY_PERCENT {
                    off += 1;
                }
            }
        }
        kept.push(s);
        values.push((judged > 0).then(|| off as f64 / judged as f64));
    }
    Ok(Chart {
        title: name.to_owned(),
        series: vec![Series {
            label: match kind {
                Activation::Relu => "dead fraction".into(),
                _ => "saturated fraction".into(),
            },
            steps: kept,
            mode_steps: Vec::new(),
            values,
            sampled,
        }],
    })
}

fn histograms_of(trial: &Trial, name: &str, range: StepRange, at: usize) -> Result<Vec<Histogram>> {
    let t = trial.tensor(name)?;
    let all = steps_in(t.steps(Mode::Global, false)?, range);
    let (steps, _) = sample(&all, at);
    let mut out = Vec::new();
    for s in steps {
        if let Some(v) = optional(t.value(s, Mode::Global, None))? {
            out.extend(crate::histogram::histogram_of(name, s, &v, BINS));
        }
    }
    Ok(out)
}

/// Which worker has an index file for which step, from one listing of the trial; rows and
/// columns are binned to at most `max` each.
fn completeness(workers: &[String], keys: &[&str], steps: &[i64], max: usize) -> Completeness {
    let mut have: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for key in keys {
        if let Ok(TrialFile::Index(f)) = classify_key(key) {
            have.entry(f.file_worker).or_default().insert(f.step);
        }
    }
    let mut names: Vec<String> = workers.to_vec();
    for w in have.keys() {
        if !names.contains(w) {
            names.push(w.clone());
        }
    }
    let max = max.max(1);
    let row_size = names.len().div_ceil(max).max(1);
    let col_size = steps.len().div_ceil(max).max(1);
    let mut missing = Vec::new();
    let mut missing_count = 0u64;
    let mut fraction = Vec::new();
    let mut row_labels = Vec::new();
    for rows in names.chunks(row_size) {
        row_labels.push(if rows.len() == 1 {
            rows[0].clone()
        } else {
            format!("{} … {}", rows[0], rows[rows.len() - 1])
        });
        let mut line = Vec::new();
        for cols in steps.chunks(col_size) {
            let mut present = 0usize;
            for w in rows {
                let set = have.get(w);
                for s in cols {
                    if set.is_some_and(|x| x.contains(s)) {
                        present += 1;
                    } else {
                        missing_count += 1;
                        if missing.len() < MISSING_LISTED {
                            missing.push((w.clone(), *s));
                        }
                    }
                }
            }
            line.push(present as f64 / (rows.len() * cols.len()) as f64);
        }
        fraction.push(line);
    }
    Completeness {
        workers: names.len(),
        row_labels,
        column_steps: steps.chunks(col_size).map(|c| c[0]).collect(),
        fraction,
        missing,
        missing_count,
    }
}

/// Runs each rule on its own thread over its own reader (`smdebug_fleet::TrialRules`, as
/// `smdebug rules` does), from `start` to before `end`. A rule that fails gives a verdict
/// with its error; the others stand.
fn run_rules(
    path: &str,
    trial_options: &TrialOptions,
    rules: &[RuleChoice],
    start: i64,
    end: i64,
    progress: &dyn Progress,
    health: &Mutex<Vec<Finding>>,
) -> Vec<RuleVerdict> {
    progress.phase("rules", rules.len() as u64);
    if rules.is_empty() {
        return Vec::new();
    }
    let specs: Vec<RuleSpec> = rules
        .iter()
        .map(|c| RuleSpec {
            label: c.label.clone(),
            name: c.name.clone(),
            params: c.params.clone(),
            stop_training: false,
        })
        .collect();
    let results: Vec<std::result::Result<RuleOutcome, String>> = match TrialRules::open(
        path,
        &specs,
        trial_options,
        start,
        Some(end),
        Schedule::Concurrent,
    ) {
        Ok(set) => set
            .run(&|_, _| {})
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect(),
        // No reader, no verdicts: each rule says why.
        Err(e) => rules.iter().map(|_| Err(e.to_string())).collect(),
    };
    rules
        .iter()
        .zip(results)
        .map(|(choice, result)| {
            progress.advance(1);
            verdict(choice, result, health)
        })
        .collect()
}

/// A rule's verdict; its remarks go to the health findings, one per (rule, tensor).
fn verdict(
    choice: &RuleChoice,
    result: std::result::Result<RuleOutcome, String>,
    health: &Mutex<Vec<Finding>>,
) -> RuleVerdict {
    let mut verdict = RuleVerdict {
        rule: choice.label.clone(),
        firings: Vec::new(),
        fired: 0,
        steps_evaluated: 0,
        error: None,
    };
    let eval = match result {
        Ok(outcome) => outcome.evaluation,
        Err(e) => {
            verdict.error = Some(e);
            return verdict;
        }
    };
    verdict.fired = eval.firings.len();
    verdict.steps_evaluated = eval.steps_evaluated;
    verdict.firings = eval
        .firings
        .into_iter()
        .take(FIRINGS_KEPT)
        .map(|f| Fired {
            step: f.step,
            tensor: f.tensor,
            message: f.message,
        })
        .collect();
    // One finding per (rule, tensor): the first, with a count.
    let mut firsts: Vec<(Finding, usize, i64)> = Vec::new();
    for r in eval.remarks {
        match firsts
            .iter_mut()
            .find(|(f, _, _)| f.source == r.rule && f.tensor == r.tensor)
        {
            Some(e) => {
                e.1 += 1;
                e.2 = e.2.max(r.step);
            }
            None => firsts.push((
                Finding {
                    source: r.rule,
                    step: r.step,
                    tensor: r.tensor,
                    message: r.message,
                },
                1,
                r.step,
            )),
        }
    }
    let mut h = health.lock().unwrap_or_else(|p| p.into_inner());
    h.extend(firsts.into_iter().map(|(mut f, n, last)| {
        if n > 1 {
            f.message = format!("{} (at {n} steps, up to step {last})", f.message);
        }
        f
    }));
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_keeps_the_ends_and_bounds_the_count() {
        let steps: Vec<i64> = (0..100_000).collect();
        let (s, sampled) = sample(&steps, 400);
        assert!(sampled);
        assert_eq!(s.len(), 400);
        assert_eq!(s[0], 0);
        assert_eq!(*s.last().unwrap(), 99_999);
        let (s, sampled) = sample(&steps[..10], 400);
        assert!(!sampled);
        assert_eq!(s.len(), 10);
    }

    #[test]
    fn completeness_bins_512_workers() {
        let workers: Vec<String> = (0..512).map(|i| format!("worker_{i}")).collect();
        let steps: Vec<i64> = (0..1000).collect();
        let keys: Vec<String> = workers
            .iter()
            .filter(|w| *w != "worker_7")
            .flat_map(|w| {
                steps
                    .iter()
                    .map(move |s| format!("index/000000000/{s:012}_{w}.json"))
            })
            .collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let c = completeness(&workers, &keys, &steps, 64);
        assert_eq!(c.workers, 512);
        assert_eq!(c.fraction.len(), 64);
        assert!(c.fraction.iter().all(|r| r.len() <= 64));
        assert_eq!(c.missing_count, 1000);
        assert_eq!(c.missing[0], ("worker_7".to_owned(), 0));
        assert!(c.fraction[0][0] < 1.0 && c.fraction[1][0] == 1.0);
    }
}
