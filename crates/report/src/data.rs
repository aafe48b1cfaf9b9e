//! The report's data: what the page draws, also embedded in the page as JSON
//! (`<script type="application/json" id="smdebug-report-data">`, schema
//! [`SCHEMA`]) so that tools and tests can check the numbers drawn against the trial.

use serde::Serialize;

/// The schema name of the embedded JSON document.
pub const SCHEMA: &str = "smdebug-report/v1";

/// Everything the report shows.
#[derive(Debug, Clone, Serialize)]
pub struct ReportData {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The trial's summary.
    pub summary: Summary,
    /// Loss and scalar curves, one chart per tensor, every mode on it.
    pub scalars: Vec<Chart>,
    /// Per-layer gradient norms over steps: the L2 norm of all elements (Frobenius for a
    /// matrix, where smdebug's `l2` reduction is the spectral norm); a saved `l2` reduction
    /// where no raw value was saved.
    pub gradient_norms: Vec<Chart>,
    /// Per-layer weight norms over steps, as the gradient norms.
    pub weight_norms: Vec<Chart>,
    /// Per-layer weight update ratio `‖w_t − w_prev‖ / ‖w_prev‖` between consecutive saved
    /// steps.
    pub update_ratios: Vec<Chart>,
    /// Dead / saturated fractions of activation tensors.
    pub activations: Vec<Chart>,
    /// Histograms of chosen tensors at a few steps.
    pub histograms: Vec<Histogram>,
    /// Worker × step completeness (only for multi-worker trials).
    pub completeness: Option<Completeness>,
    /// Rule verdicts.
    pub rules: Vec<RuleVerdict>,
    /// Health findings: non-finite values met while reading, and what the rules set aside.
    pub health: Vec<Finding>,
    /// Tensors of a kind that were left out because a chart group is bounded.
    pub omitted: Vec<String>,
}

/// The trial at a glance.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The trial's path as given.
    pub trial: String,
    /// Workers (from the collections files).
    pub workers: Vec<String>,
    /// Per mode: its name and its complete steps (count, first, last).
    pub modes: Vec<ModeSteps>,
    /// Distinct global steps.
    pub global_steps: usize,
    /// Collections with the number of tensors each names.
    pub collections: Vec<(String, usize)>,
    /// Number of tensors.
    pub tensors: usize,
    /// Bytes of every object under the trial.
    pub size_bytes: u64,
    /// Whether the training-job end marker is there.
    pub training_ended: bool,
    /// The step range the report was restricted to (`--steps`), if any.
    pub step_range: Option<(i64, i64)>,
}

/// The steps of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeSteps {
    /// TRAIN, EVAL, PREDICT or GLOBAL.
    pub mode: String,
    /// Number of complete steps.
    pub steps: usize,
    /// First global step.
    pub first: Option<i64>,
    /// Last global step.
    pub last: Option<i64>,
}

/// One chart: a title and its series over global steps.
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// The tensor (or layer) the chart shows.
    pub title: String,
    /// Its series.
    pub series: Vec<Series>,
}

/// One line of a chart.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// What it is (a mode name, `l2`, `dead`, …).
    pub label: String,
    /// Global steps (the x axis).
    pub steps: Vec<i64>,
    /// The mode steps of the same points (for a per-mode series), else empty.
    pub mode_steps: Vec<i64>,
    /// The values (`null` in JSON for a non-finite value).
    pub values: Vec<Option<f64>>,
    /// True when the series holds an even sample of the saved steps rather than every one.
    pub sampled: bool,
}

/// A histogram of one tensor at one step.
#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    /// The tensor.
    pub tensor: String,
    /// The global step.
    pub step: i64,
    /// Bin edges (`counts.len() + 1` of them).
    pub edges: Vec<f64>,
    /// Finite values per bin.
    pub counts: Vec<u64>,
    /// Values left out because they are NaN or infinite.
    pub non_finite: u64,
}

/// Which worker wrote which step, binned so that the heatmap stays small.
#[derive(Debug, Clone, Serialize)]
pub struct Completeness {
    /// Number of workers.
    pub workers: usize,
    /// Worker names of each row (a row groups consecutive workers when there are many).
    pub row_labels: Vec<String>,
    /// The global steps each column starts at.
    pub column_steps: Vec<i64>,
    /// Per row, per column: the fraction of (worker, step) pairs with an index file.
    pub fraction: Vec<Vec<f64>>,
    /// (worker, global step) pairs missing, at most 100 listed.
    pub missing: Vec<(String, i64)>,
    /// Number of missing (worker, step) pairs.
    pub missing_count: u64,
}

/// What one rule said.
#[derive(Debug, Clone, Serialize)]
pub struct RuleVerdict {
    /// The rule's label (its name, or a configuration name).
    pub rule: String,
    /// Firings (the first 1000; `fired` counts them all).
    pub firings: Vec<Fired>,
    /// Number of firings.
    pub fired: usize,
    /// Steps evaluated.
    pub steps_evaluated: u64,
    /// An error that stopped the rule (e.g. a required tensor is missing), if any.
    pub error: Option<String>,
}

/// One firing.
#[derive(Debug, Clone, Serialize)]
pub struct Fired {
    /// Global step.
    pub step: i64,
    /// The tensor it fired on, if the rule says.
    pub tensor: Option<String>,
    /// Its message.
    pub message: String,
}

/// A health finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Who found it: `reader` (a non-finite value read for a chart) or a rule's name.
    pub source: String,
    /// Global step.
    pub step: i64,
    /// The tensor, if known.
    pub tensor: Option<String>,
    /// What was found.
    pub message: String,
}
