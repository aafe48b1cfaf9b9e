//! Rules on labels and predictions: Confusion, ClassImbalance.

use super::defaults;
use crate::error::Result;
use crate::params::{ParamKind::*, ParamReader, ParamSpec};
use crate::rule::{Rule, RuleBase};
use crate::util::{collection_tensors, f64_at, regex_tensors};
use ndarray::{ArrayD, Axis};
use smdebug_trial::Trial;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Values of several tensors at a step, flattened and concatenated in name order, cast to
/// integers by truncation; `None` if any is missing or not numeric.
fn concat_ints(
    trial: &Trial,
    names: &[String],
    step: i64,
    argmax: bool,
) -> Result<Option<Vec<i64>>> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for n in names {
        let Some(a) = f64_at(trial, n, step)? else {
            return Ok(None);
        };
        if argmax && a.ndim() >= 1 {
            out.extend(argmax_last(&a));
        } else {
            out.extend(
                a.iter()
                    .filter(|x| x.is_finite())
                    .map(|&x| x.trunc() as i64),
            );
        }
    }
    Ok(Some(out))
}

fn argmax_last(a: &ArrayD<f64>) -> Vec<i64> {
    let last = Axis(a.ndim() - 1);
    a.lanes(last)
        .into_iter()
        .filter(|lane| !lane.is_empty())
        .map(|lane| {
            let mut best = 0usize;
            for (i, &x) in lane.iter().enumerate() {
                // numpy.argmax: the first maximum; NaN wins.
                if x > lane[best] || (x.is_nan() && !lane[best].is_nan()) {
                    best = i;
                }
            }
            best as i64
        })
        .collect()
}

/// Parameters of [`Confusion`].
#[derive(Debug, Clone, PartialEq)]
pub struct ConfusionConfig {
    /// Number of classes (None: the largest class id seen + 1).
    pub category_no: Option<i64>,
    /// The labels tensor's name (used when the labels collection is absent or empty).
    pub labels: String,
    /// The predictions tensor's name.
    pub predictions: String,
    /// The collection holding the labels.
    pub labels_collection: String,
    /// The collection holding the predictions.
    pub predictions_collection: String,
    /// Minimum diagonal fraction of each predicted class's column.
    pub min_diag: f64,
    /// Maximum off-diagonal fraction of each column.
    pub max_off_diag: f64,
}

impl ConfusionConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "category_no",
            Int,
            None,
            "number of classes (default: the largest class id seen + 1)",
        ),
        ParamSpec::new("labels", Str, Some("labels"), "name of the labels tensor"),
        ParamSpec::new(
            "predictions",
            Str,
            Some("predictions"),
            "name of the predictions tensor",
        ),
        ParamSpec::new(
            "labels_collection",
            Str,
            Some("labels"),
            "collection of the labels (wins over `labels` when it has members)",
        ),
        ParamSpec::new(
            "predictions_collection",
            Str,
            Some("predictions"),
            "collection of the predictions",
        ),
        ParamSpec::new(
            "min_diag",
            Float,
            Some("0.9"),
            "minimum fraction of a predicted class's column on the diagonal",
        ),
        ParamSpec::new(
            "max_off_diag",
            Float,
            Some("0.1"),
            "maximum fraction of a predicted class's column in any other cell",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        let c = ConfusionConfig {
            category_no: p.opt_i64("category_no")?,
            labels: p.string("labels")?,
            predictions: p.string("predictions")?,
            labels_collection: p.string("labels_collection")?,
            predictions_collection: p.string("predictions_collection")?,
            min_diag: p.f64("min_diag")?,
            max_off_diag: p.f64("max_off_diag")?,
        };
        if c.category_no.is_some_and(|n| n < 2) {
            return Err(p.config_error("category_no must be at least 2"));
        }
        Ok(c)
    }
}

impl Default for ConfusionConfig {
    fn default() -> Self {
        defaults("Confusion", Self::PARAMS, Self::from_params)
    }
}

/// Confusion (RULES.md §8): builds the confusion matrix `M[label][prediction]` of the
/// step's labels and predictions (cast to int; no accumulation across steps) and fires if,
/// for some predicted class `i` with a non-empty column, `M[i][i] / column < min_diag` or
/// some `M[j][i] / column > max_off_diag`. Choice: **column**-normalised (the DG's diagonal
/// formula, divided by the trace, would fire on a perfect classifier). Labels come from
/// collection `labels_collection` if it has members, else tensor `labels`; likewise
/// predictions. Missing data or different lengths → no decision; class ids outside
/// `0..category_no` are ignored.
#[derive(Debug)]
pub struct Confusion {
    base: RuleBase,
    config: ConfusionConfig,
}

impl Confusion {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: ConfusionConfig) -> Self {
        Confusion {
            base: RuleBase::new("Confusion", trial, Vec::new()),
            config,
        }
    }

    fn source(trial: &Trial, collection: &str, name: &str) -> Result<Vec<String>> {
        let members = collection_tensors(trial, collection)?;
        if !members.is_empty() {
            return Ok(members);
        }
        Ok(if trial.has_tensor(name)? {
            vec![name.to_owned()]
        } else {
            Vec::new()
        })
    }
}

impl Rule for Confusion {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        let ln = Self::source(&trial, &c.labels_collection, &c.labels)?;
        let pn = Self::source(&trial, &c.predictions_collection, &c.predictions)?;
        let (Some(y), Some(yhat)) = (
            concat_ints(&trial, &ln, step, false)?,
            concat_ints(&trial, &pn, step, false)?,
        ) else {
            return Ok(false);
        };
        if y.len() != yhat.len() || y.is_empty() {
            return Ok(false);
        }
        let n = c
            .category_no
            .unwrap_or_else(|| y.iter().chain(&yhat).copied().max().unwrap_or(0) + 1);
        // Sparse: the class ids come from the data, a dense n×n matrix could be huge.
        let mut cells: BTreeMap<(i64, i64), u64> = BTreeMap::new();
        let mut columns: BTreeMap<i64, u64> = BTreeMap::new();
        for (&l, &p) in y.iter().zip(&yhat) {
            if !(0..n).contains(&l) || !(0..n).contains(&p) {
                continue;
            }
            *cells.entry((l, p)).or_default() += 1;
            *columns.entry(p).or_default() += 1;
        }
        for (&i, &col) in &columns {
            let diag = cells.get(&(i, i)).copied().unwrap_or(0) as f64 / col as f64;
            if diag < c.min_diag {
                self.base.note(
                    None,
                    format!(
                        "predicted class {i}: {:.4} of its predictions are correct (min_diag {})",
                        diag, c.min_diag
                    ),
                );
                return Ok(true);
            }
            for (&(j, p), &count) in &cells {
                if p == i && j != i {
                    let off = count as f64 / col as f64;
                    if off > c.max_off_diag {
                        self.base.note(
                            None,
                            format!(
                                "predicted class {i}: {off:.4} of its predictions have label {j} (max_off_diag {})",
                                c.max_off_diag
                            ),
                        );
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }
}

/// Parameters of [`ClassImbalance`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClassImbalanceConfig {
    /// Largest allowed ratio between the most and least frequent class.
    pub threshold_imbalance: f64,
    /// Largest allowed misprediction fraction of a class.
    pub threshold_misprediction: f64,
    /// Labels to see before deciding.
    pub samples: i64,
    /// Predictions are scores: take the argmax over the last axis.
    pub argmax: bool,
    /// Regex of the labels tensors.
    pub labels_regex: String,
    /// Regex of the predictions tensors.
    pub predictions_regex: String,
}

impl ClassImbalanceConfig {
    /// The string parameters.
    pub const PARAMS: &'static [ParamSpec] = &[
        ParamSpec::new(
            "threshold_imbalance",
            Float,
            Some("10"),
            "maximum ratio between the most and the least frequent class",
        ),
        ParamSpec::new(
            "threshold_misprediction",
            Float,
            Some("0.7"),
            "maximum fraction of mispredicted samples of a class",
        ),
        ParamSpec::new(
            "samples",
            Int,
            Some("500"),
            "number of labels to see before deciding",
        ),
        ParamSpec::new(
            "argmax",
            Bool,
            Some("False"),
            "take the argmax of the predictions over their last axis",
        ),
        ParamSpec::new(
            "labels_regex",
            Str,
            Some(".*labels"),
            "regex of the labels tensors",
        ),
        ParamSpec::new(
            "predictions_regex",
            Str,
            Some(".*predictions"),
            "regex of the predictions tensors",
        ),
    ];

    /// Reads the parameters.
    pub fn from_params(p: &ParamReader<'_>) -> Result<Self> {
        Ok(ClassImbalanceConfig {
            threshold_imbalance: p.f64("threshold_imbalance")?,
            threshold_misprediction: p.f64("threshold_misprediction")?,
            samples: p.i64("samples")?,
            argmax: p.bool("argmax")?,
            labels_regex: p.string("labels_regex")?,
            predictions_regex: p.string("predictions_regex")?,
        })
    }
}

impl Default for ClassImbalanceConfig {
    fn default() -> Self {
        defaults("ClassImbalance", Self::PARAMS, Self::from_params)
    }
}

/// ClassImbalance (RULES.md §9): accumulates, over every step seen, per class the number
/// of labels and of correct predictions (labels and predictions of a step: the tensors
/// matching the regexes, in name order, flattened; lengths must agree). Once at least
/// `samples` labels were seen, fires if `max count / min count > threshold_imbalance` over
/// the classes that occur, or a class's misprediction fraction exceeds
/// `threshold_misprediction`.
#[derive(Debug)]
pub struct ClassImbalance {
    base: RuleBase,
    config: ClassImbalanceConfig,
    counts: BTreeMap<i64, (u64, u64)>,
    total: u64,
}

impl ClassImbalance {
    /// The rule over `trial`.
    pub fn new(trial: Arc<Trial>, config: ClassImbalanceConfig) -> Self {
        ClassImbalance {
            base: RuleBase::new("ClassImbalance", trial, Vec::new()),
            config,
            counts: BTreeMap::new(),
            total: 0,
        }
    }
}

impl Rule for ClassImbalance {
    rule_base!();

    fn invoke_at_step(&mut self, step: i64) -> Result<bool> {
        let trial = self.base.base_trial().clone();
        let c = &self.config;
        let ln = regex_tensors(&trial, std::slice::from_ref(&c.labels_regex))?;
        let pn = regex_tensors(&trial, std::slice::from_ref(&c.predictions_regex))?;
        let (Some(y), Some(yhat)) = (
            concat_ints(&trial, &ln, step, false)?,
            concat_ints(&trial, &pn, step, c.argmax)?,
        ) else {
            return Ok(false);
        };
        if y.len() != yhat.len() || y.is_empty() {
            return Ok(false);
        }
        for (&l, &p) in y.iter().zip(&yhat) {
            let e = self.counts.entry(l).or_default();
            e.0 += 1;
            if l == p {
                e.1 += 1;
            }
        }
        self.total += y.len() as u64;
        if (self.total as i64) < c.samples {
            return Ok(false);
        }
        let max = self.counts.iter().max_by_key(|(_, v)| v.0);
        let min = self.counts.iter().min_by_key(|(_, v)| v.0);
        if let (Some((&cmax, &(nmax, _))), Some((&cmin, &(nmin, _)))) = (max, min) {
            let ratio = nmax as f64 / nmin as f64;
            if ratio > c.threshold_imbalance {
                let t = c.threshold_imbalance;
                self.base.note(
                    None,
                    format!("class {cmax} has {nmax} samples and class {cmin} {nmin}: ratio {ratio:.2} > {t} (after {} labels)", self.total),
                );
                return Ok(true);
            }
        }
        for (&class, &(n, correct)) in &self.counts {
            let miss = 1.0 - correct as f64 / n as f64;
            if miss > c.threshold_misprediction {
                let t = c.threshold_misprediction;
                self.base.note(
                    None,
                    format!("class {class}: {miss:.3} of its {n} samples are mispredicted (threshold {t})"),
                );
                return Ok(true);
            }
        }
        Ok(false)
    }
}
