//! Rules on labels and predictions: Confusion, ClassImbalance. How both read values as
//! classes is documented on the `builtin` module (section "Labels and predictions as
//! classes").

use super::Finding;
use crate::error::{Result, RuleError};
use crate::util::{collection_tensors, f64_at, regex_tensors};
use ndarray::{ArrayD, Axis};
use smdebug_trial::Trial;
use std::collections::BTreeMap;

/// How a tensor's values are read as class ids.
#[derive(Debug, Clone, Copy)]
enum Read {
    Labels,
    Predictions { threshold: f64, argmax: bool },
}

/// The class ids of one tensor's values, or why they cannot be classes.
fn as_classes(a: &ArrayD<f64>, read: Read) -> std::result::Result<Vec<i64>, String> {
    if let Read::Predictions { threshold, argmax } = read {
        let columns = a.shape().last().copied().unwrap_or(1);
        if (argmax && a.ndim() >= 1) || (a.ndim() >= 2 && columns > 1) {
            return Ok(argmax_last(a));
        }
        if a.iter().all(|p| (0.0..=1.0).contains(p)) {
            return Ok(a.iter().map(|&p| i64::from(p > threshold)).collect());
        }
    }
    // Beyond 2^53 a float no longer holds every integer; no class id is that large.
    let not_id = |x: &f64| !x.is_finite() || x.fract() != 0.0 || x.abs() >= 9.0e15;
    if let Some(x) = a.iter().find(|x| not_id(x)) {
        return Err(match read {
            Read::Labels => format!("the value {x} is not a class id (an integer)"),
            Read::Predictions { .. } => format!(
                "the value {x} is neither a probability in [0, 1] nor a class id (an integer), and the tensor has one column"
            ),
        });
    }
    Ok(a.iter().map(|&x| x as i64).collect())
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

/// The class ids of several tensors at a step, flattened and concatenated in name order;
/// `None` if there are none or one has no numeric value there.
fn classes(
    rule: &str,
    trial: &Trial,
    names: &[String],
    step: i64,
    read: Read,
) -> Result<Option<Vec<i64>>> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for name in names {
        let Some(a) = f64_at(trial, name, step)? else {
            return Ok(None);
        };
        let ids = as_classes(&a, read).map_err(|reason| RuleError::NotClasses {
            rule: rule.to_owned(),
            step,
            tensor: name.clone(),
            reason,
        })?;
        out.extend(ids);
    }
    Ok(Some(out))
}

rule_params! {
    /// Parameters of [`Confusion`].
    ConfusionConfig for "Confusion" {
        category_no: Option<i64>
            => "number of classes (default: the largest class id seen + 1)",
        labels: String = "labels" => "name of the labels tensor",
        predictions: String = "predictions" => "name of the predictions tensor",
        labels_collection: String = "labels"
            => "collection of the labels (wins over `labels` when it has members)",
        predictions_collection: String = "predictions" => "collection of the predictions",
        min_diag: f64 = "0.9"
            => "minimum fraction of a predicted class's column on the diagonal",
        max_off_diag: f64 = "0.1"
            => "maximum fraction of a predicted class's column in any other cell",
        threshold_probability: f64 = "0.5"
            => "smdebug-rs extension: one-column predictions in [0, 1] are class 1 above this probability, else class 0",
    }
    check |p, c| {
        if c.category_no.is_some_and(|n| n < 2) {
            return Err(p.config_error("category_no must be at least 2"));
        }
        check_probability(p, c.threshold_probability)?;
    }
}

fn check_probability(p: &crate::params::ParamReader<'_>, t: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&t) {
        return Err(p.config_error(format!("threshold_probability must lie in [0, 1], got {t}")));
    }
    Ok(())
}

builtin_rule! {
    /// Confusion (docs/src/rules.md §8): builds the confusion matrix `M[label][prediction]` of the
    /// step's labels and predictions (no accumulation across steps) and fires if, for some
    /// predicted class `i` with a non-empty column, `M[i][i] / column < min_diag` or some
    /// `M[j][i] / column > max_off_diag`. Choice: **column**-normalised (the DG's diagonal
    /// formula, divided by the trace, would fire on a perfect classifier). Labels come from
    /// collection `labels_collection` if it has members, else tensor `labels`; likewise
    /// predictions. Values are read as classes as [the `builtin` docs](crate::builtin#labels-and-predictions-as-classes) say (probabilities
    /// are thresholded or argmax-ed; what cannot be classes is an error). Missing data or
    /// different lengths → no decision; class ids outside `0..category_no` are ignored.
    Confusion(ConfusionConfig)
}

impl Confusion {
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

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let ln = Self::source(trial, &c.labels_collection, &c.labels)?;
        let pn = Self::source(trial, &c.predictions_collection, &c.predictions)?;
        let rule = self.base.name();
        let predictions = Read::Predictions {
            threshold: c.threshold_probability,
            argmax: false,
        };
        let (Some(y), Some(yhat)) = (
            classes(rule, trial, &ln, step, Read::Labels)?,
            classes(rule, trial, &pn, step, predictions)?,
        ) else {
            return Ok(None);
        };
        if y.len() != yhat.len() || y.is_empty() {
            return Ok(None);
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
                return Ok(Some(Finding::general(format!(
                    "predicted class {i}: {diag:.4} of its predictions are correct (min_diag {})",
                    c.min_diag
                ))));
            }
            let off = cells
                .iter()
                .filter(|(&(j, p), _)| p == i && j != i)
                .map(|(&(j, _), &count)| (j, count as f64 / col as f64))
                .find(|&(_, off)| off > c.max_off_diag);
            if let Some((j, off)) = off {
                return Ok(Some(Finding::general(format!(
                    "predicted class {i}: {off:.4} of its predictions have label {j} (max_off_diag {})",
                    c.max_off_diag
                ))));
            }
        }
        Ok(None)
    }
}

rule_params! {
    /// Parameters of [`ClassImbalance`].
    ClassImbalanceConfig for "ClassImbalance" {
        threshold_imbalance: f64 = "10"
            => "maximum ratio between the most and the least frequent class",
        threshold_misprediction: f64 = "0.7"
            => "maximum fraction of mispredicted samples of a class",
        samples: i64 = "500" => "number of labels to see before deciding",
        argmax: bool = "False"
            => "take the argmax of the predictions over their last axis (predictions with several columns always are)",
        labels_regex: String = ".*labels" => "regex of the labels tensors",
        predictions_regex: String = ".*predictions" => "regex of the predictions tensors",
        threshold_probability: f64 = "0.5"
            => "smdebug-rs extension: one-column predictions in [0, 1] are class 1 above this probability, else class 0",
    }
    check |p, c| {
        check_probability(p, c.threshold_probability)?;
    }
}

builtin_rule! {
    /// ClassImbalance (docs/src/rules.md §9): accumulates, over every step seen, per class the number
    /// of labels and of correct predictions (labels and predictions of a step: the tensors
    /// matching the regexes, in name order, read as classes as [the `builtin` docs](crate::builtin#labels-and-predictions-as-classes) say;
    /// lengths must agree). Once at least `samples` labels were seen, fires if
    /// `max count / min count > threshold_imbalance` over the classes that occur, or a class's
    /// misprediction fraction exceeds `threshold_misprediction`.
    ClassImbalance(ClassImbalanceConfig) {
        counts: BTreeMap<i64, (u64, u64)>,
        total: u64,
    }
}

impl ClassImbalance {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let ln = regex_tensors(trial, std::slice::from_ref(&c.labels_regex))?;
        let pn = regex_tensors(trial, std::slice::from_ref(&c.predictions_regex))?;
        let rule = self.base.name();
        let predictions = Read::Predictions {
            threshold: c.threshold_probability,
            argmax: c.argmax,
        };
        let (Some(y), Some(yhat)) = (
            classes(rule, trial, &ln, step, Read::Labels)?,
            classes(rule, trial, &pn, step, predictions)?,
        ) else {
            return Ok(None);
        };
        if y.len() != yhat.len() || y.is_empty() {
            return Ok(None);
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
            return Ok(None);
        }
        let max = self.counts.iter().max_by_key(|(_, v)| v.0);
        let min = self.counts.iter().min_by_key(|(_, v)| v.0);
        if let (Some((&cmax, &(nmax, _))), Some((&cmin, &(nmin, _)))) = (max, min) {
            let ratio = nmax as f64 / nmin as f64;
            let t = c.threshold_imbalance;
            if ratio > t {
                return Ok(Some(Finding::general(format!(
                    "class {cmax} has {nmax} samples and class {cmin} {nmin}: ratio {ratio:.2} > {t} (after {} labels)",
                    self.total
                ))));
            }
        }
        let t = c.threshold_misprediction;
        let missed = self
            .counts
            .iter()
            .map(|(&class, &(n, correct))| (class, n, 1.0 - correct as f64 / n as f64))
            .find(|&(_, _, miss)| miss > t);
        Ok(missed.map(|(class, n, miss)| {
            Finding::general(format!(
                "class {class}: {miss:.3} of its {n} samples are mispredicted (threshold {t})"
            ))
        }))
    }
}
