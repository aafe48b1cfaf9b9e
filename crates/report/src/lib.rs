//! Pictures of an smdebug trial: [`report`] builds one self-contained HTML page (inline CSS
//! and SVG, no script, font or network request) with the trial's summary, loss and scalar
//! curves per mode, per-layer gradient and weight norms, the weight update ratio,
//! activation statistics, histograms, a worker × step completeness heatmap, the rule
//! verdicts marked on the step axis, and health findings. The numbers drawn are embedded
//! in the page as JSON ([`data::SCHEMA`]) so they can be checked against the Trial API.
//!
//! With the default feature `plot`, [`plot::plot`] draws one tensor's statistic over
//! steps as PNG or SVG with plotters, the DejaVu Sans font compiled in.
//!
//! Every value is read through `smdebug-trial`; big trials stay small pages: norms and
//! activations are read at an even sample of at most [`ReportOptions::max_points`] steps,
//! each series is drawn with at most two points per pixel column, chart groups hold at most
//! [`ReportOptions::max_panels`] tensors and the heatmap bins workers and steps.
//!
//! ```no_run
//! use smdebug_report::{report, ReportOptions, NoProgress};
//! let page = report("/tmp/trial", &Default::default(), &ReportOptions::default(), &NoProgress)?;
//! std::fs::write("report.html", page.html)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod axis;
mod collect;
pub mod data;
mod histogram;
#[cfg(feature = "plot")]
pub mod plot;
mod render;

use std::collections::BTreeMap;

pub use data::ReportData;
use smdebug_trial::{Mode, Trial, TrialOptions};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Reading the trial failed.
    #[error(transparent)]
    Trial(#[from] smdebug_trial::TrialError),
    /// Listing the trial's objects failed.
    #[error(transparent)]
    Storage(#[from] smdebug_storage::StorageError),
    /// A rule name or parameter is wrong.
    #[error("rule {rule}: {message}")]
    Rule {
        /// The rule.
        rule: String,
        /// What is wrong.
        message: String,
    },
    /// A bad regular expression.
    #[error("regular expression: {0}")]
    Regex(String),
    /// Drawing or writing a plot failed.
    #[error("plot: {0}")]
    Plot(String),
    /// Nothing to plot: no tensor matches, or none of those that match has a finite value
    /// of the statistic at the chosen steps.
    #[cfg(feature = "plot")]
    #[error("{}", plot::nothing_to_plot(.regex, .stat, *.matched, *.multi_element))]
    NothingToPlot {
        /// The `--tensor` regex.
        regex: String,
        /// The `--stat` asked for.
        stat: String,
        /// How many tensors the regex matches.
        matched: usize,
        /// How many of those hold more than one element (no `value` to draw).
        multi_element: usize,
    },
}

impl ReportError {
    fn regex(e: regex::Error) -> ReportError {
        ReportError::Regex(e.to_string())
    }
}

/// `Result` with [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// The `--steps` range of the report, the one step-range type of the trial reader.
pub use smdebug_trial::StepRange;

/// One rule the report runs: a label, the built-in rule's name and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleChoice {
    /// Shown in the report.
    pub label: String,
    /// The built-in rule (see `smdebug rules --list`).
    pub name: String,
    /// Its parameters (SageMaker string form).
    pub params: BTreeMap<String, String>,
}

impl RuleChoice {
    /// A rule with its default parameters.
    pub fn new(name: &str) -> RuleChoice {
        RuleChoice {
            label: name.to_owned(),
            name: name.to_owned(),
            params: BTreeMap::new(),
        }
    }
}

/// The rules of `--rules default`: one detector of each common training problem, on
/// SageMaker's defaults (the `smdebug demo` set).
pub const DEFAULT_RULES: &[&str] = &[
    "VanishingGradient",
    "ExplodingTensor",
    "DeadRelu",
    "LossNotDecreasing",
    "Overfit",
    "PoorWeightInitialization",
    "SaturatedActivation",
];

/// The rules of `--rules all`: every built-in rule that needs no parameter.
pub fn all_rules() -> Vec<RuleChoice> {
    smdebug_rules::builtin_rules()
        .iter()
        .filter(|r| !r.params.iter().any(|p| p.required))
        .map(|r| RuleChoice::new(r.name))
        .collect()
}

/// [`DEFAULT_RULES`]; on a trial with TRAIN steps LossNotDecreasing watches the TRAIN
/// series only (its default GLOBAL series would compare evaluation losses with training
/// losses).
pub fn default_rules(has_train_mode: bool) -> Vec<RuleChoice> {
    DEFAULT_RULES
        .iter()
        .map(|n| {
            let mut c = RuleChoice::new(n);
            if *n == "LossNotDecreasing" && has_train_mode {
                c.params.insert("mode".into(), "TRAIN".into());
            }
            c
        })
        .collect()
}

/// Checks that every chosen rule exists and takes the given parameters (before reading
/// anything).
pub fn check_rules(rules: &[RuleChoice]) -> Result<()> {
    for r in rules {
        let spec = smdebug_rules::find_rule(&r.name).map_err(|e| ReportError::Rule {
            rule: r.name.clone(),
            message: e.to_string(),
        })?;
        for k in r.params.keys() {
            if !spec.params.iter().any(|p| p.name == k) {
                return Err(ReportError::Rule {
                    rule: r.name.clone(),
                    message: format!("no parameter {k:?}"),
                });
            }
        }
    }
    Ok(())
}

/// What to put in the report and how far to bound it.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Rules to run (none: the rules section says so).
    pub rules: Vec<RuleChoice>,
    /// Also run [`default_rules`], adapted to the trial's modes once it is open (so that
    /// choosing them costs no second open of the trial).
    pub default_rules: bool,
    /// Only these global steps.
    pub steps: StepRange,
    /// Most steps read per norm or activation series (an even sample beyond).
    pub max_points: usize,
    /// Most points per scalar series embedded in the page (an even sample beyond).
    pub max_embedded: usize,
    /// Most charts per group (scalars, gradient norms, weight norms, activations).
    pub max_panels: usize,
    /// Most rows and columns of the completeness heatmap.
    pub max_heatmap: usize,
    /// Tensors to draw histograms of (default: two weights, two gradients, one activation).
    pub histogram_tensors: Option<regex::Regex>,
    /// Most tensors with histograms.
    pub histogram_tensors_max: usize,
    /// Histograms per tensor (at evenly spread steps).
    pub histogram_steps: usize,
    /// Threads reading norms and activations.
    pub threads: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            rules: Vec::new(),
            default_rules: false,
            steps: StepRange::default(),
            max_points: 400,
            max_embedded: 20_000,
            max_panels: 36,
            max_heatmap: 48,
            histogram_tensors: None,
            histogram_tensors_max: 6,
            histogram_steps: 3,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

/// Told how far the report has got (a progress bar in the CLI).
pub trait Progress: Sync {
    /// A new phase begins with `total` units of work.
    fn phase(&self, name: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// A built report: its data and its page.
#[derive(Debug, Clone)]
pub struct Report {
    /// What the page draws (also embedded in it).
    pub data: ReportData,
    /// The HTML page.
    pub html: String,
}

/// Reads the trial at `path` (local, `s3://…`, `memory://…`) and builds its report.
pub fn report(
    path: &str,
    trial_options: &TrialOptions,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> Result<Report> {
    check_rules(&options.rules)?;
    let data = collect::collect(path, trial_options, options, progress)?;
    let html = render::html(&data);
    Ok(Report { data, html })
}

/// Builds the page of already collected data.
pub fn render_html(data: &ReportData) -> String {
    render::html(data)
}

/// The report's data over a trial already open, for a view that keeps its trial open
/// between reads (a live page): only `options.rules` run, each over a reader of its own
/// opened with `trial_options`; `options.steps` filters what the trial holds.
pub fn collect_trial(
    trial: &Trial,
    trial_options: &TrialOptions,
    options: &ReportOptions,
    progress: &dyn Progress,
) -> Result<ReportData> {
    check_rules(&options.rules)?;
    collect::collect_open(trial, trial_options, options, progress)
}

/// The tensors the report draws as loss and scalar curves (by collection and name).
pub fn scalar_tensors(trial: &Trial) -> Result<Vec<String>> {
    let names = trial.tensor_names()?;
    Ok(collect::kinds(trial, &names)?.scalars)
}

/// One scalar tensor's curves, a series per mode, over the global steps of `range` (at
/// most `max_points` per mode, an even sample beyond; a non-finite value is a gap). A
/// range of a few steps reads only those steps: a live page asks for what is new.
pub fn scalar_curves(
    trial: &Trial,
    tensor: &str,
    range: StepRange,
    max_points: usize,
) -> Result<data::Chart> {
    let findings = std::sync::Mutex::new(Vec::new());
    collect::scalar_chart(trial, tensor, range, max_points, &findings)
}

/// The gradients and the weights whose norms the report draws, by collection and name: at
/// most [`ReportOptions::max_panels`]'s default of each, the first by name, as the report
/// bounds them.
pub fn norm_tensors(trial: &Trial) -> Result<(Vec<String>, Vec<String>)> {
    let names = trial.tensor_names()?;
    let kinds = collect::kinds(trial, &names)?;
    let max = ReportOptions::default().max_panels;
    let first = |mut v: Vec<String>| {
        v.truncate(max);
        v
    };
    Ok((first(kinds.gradients), first(kinds.weights)))
}

/// One tensor's L2 norm over the global steps of `range` (at most `max_points`, an even
/// sample beyond), as the report's norm charts draw it; a short range reads only its steps.
pub fn norm_curve(
    trial: &Trial,
    tensor: &str,
    range: StepRange,
    max_points: usize,
) -> Result<data::Chart> {
    let findings = std::sync::Mutex::new(Vec::new());
    Ok(collect::norm_charts(trial, tensor, false, range, max_points, &findings)?.0)
}

/// The histogram of `tensor` at the step `step` of `mode`, in `bins` bins (0: the report's
/// 30), counted in a streaming pass over the value; `None` when the value is not real or
/// holds no finite element.
pub fn histogram_at(
    trial: &Trial,
    tensor: &str,
    step: i64,
    mode: Mode,
    bins: usize,
) -> Result<Option<data::Histogram>> {
    let value = trial.tensor(tensor)?.value(step, mode, None)?;
    let bins = if bins == 0 { collect::BINS } else { bins };
    Ok(histogram::histogram_of(tensor, step, &value, bins))
}
