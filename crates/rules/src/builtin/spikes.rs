//! Rules on spikes against a rolling baseline: LossSpike, GradientNormSpike,
//! ActivationOutlier (docs/src/rules.md §21, §22, §27).
//!
//! The three share one test, OLMo-core's `StabilityMonitorCallback`: a value is a spike
//! when it is above the mean + k·σ (population σ) of the `window_size` values before it,
//! judged only once the window is full and when σ ≥ 1e-10; every value, spikes included,
//! then joins the window. A spike is a run of such values: the rule fires at its first
//! step only, follows its peak, and records a [`Remark`](crate::Remark) when a value falls
//! back to the line it crossed (it recovered).

use super::Finding;
use crate::error::Result;
use crate::rule::RuleBase;
use crate::util::{scalar, select, to_f64, value_at};
use smdebug_config::Mode;
use smdebug_trial::Trial;
use std::collections::{BTreeMap, VecDeque};

/// Below this σ the window is flat and OLMo-core declines to judge (a division by a zero
/// spread would call any change a spike).
const MIN_STD: f64 = 1e-10;

/// Which test found a spike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpikeCriterion {
    /// Above the rolling mean + k·σ (OLMo-core).
    Std,
    /// At least r × the rolling mean for more than `patience` values in a row
    /// (llm-foundry).
    Ratio,
}

/// One spike a rule saw: where it started, its peak, and whether it recovered.
#[derive(Debug, Clone, PartialEq)]
pub struct Spike {
    /// The series (a tensor name, or `global gradient norm`).
    pub series: String,
    /// The test that found it.
    pub criterion: SpikeCriterion,
    /// The global step of its first value over the line.
    pub start: i64,
    /// The global step of its largest value so far.
    pub peak_step: i64,
    /// Its largest value so far.
    pub peak: f64,
    /// The line it crossed (mean + k·σ, or r × mean, of the window before it started).
    pub line: f64,
    /// The first global step whose value was back at or below the line, if any.
    pub recovered_at: Option<i64>,
}

/// A rolling window of the last values of one series.
#[derive(Debug, Default, Clone)]
pub(crate) struct Window {
    values: VecDeque<f64>,
}

impl Window {
    /// Mean and population σ, once `size` values are in.
    pub(crate) fn baseline(&self, size: usize) -> Option<(f64, f64)> {
        if size == 0 || self.values.len() < size {
            return None;
        }
        let n = self.values.len() as f64;
        let mean = self.values.iter().sum::<f64>() / n;
        let var = self
            .values
            .iter()
            .map(|x| (x - mean) * (x - mean))
            .sum::<f64>()
            / n;
        Some((mean, var.sqrt()))
    }

    /// Adds a value, dropping the oldest beyond `size`.
    pub(crate) fn push(&mut self, v: f64, size: usize) {
        self.values.push_back(v);
        while self.values.len() > size {
            self.values.pop_front();
        }
    }
}

/// What a spike test says of a new value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Nothing new.
    Quiet,
    /// A spike starts here; the message says why.
    Started(String),
    /// The open spike recovered here; the message says so.
    Recovered(String),
}

/// OLMo-core's test on one series, with the spike it is in.
#[derive(Debug, Default, Clone)]
pub(crate) struct StdSpikes {
    window: Window,
    open: Option<Spike>,
    /// Every spike seen, the open one last.
    pub(crate) spikes: Vec<Spike>,
}

impl StdSpikes {
    /// Judges `v` at `step` (`what` names the value in messages: "loss", "global gradient
    /// norm") against the window, then adds it to the window.
    pub(crate) fn observe(
        &mut self,
        series: &str,
        what: &str,
        step: i64,
        v: f64,
        window_size: usize,
        threshold_std: f64,
    ) -> Verdict {
        let mut verdict = Verdict::Quiet;
        if let Some(open) = &mut self.open {
            if v > open.line {
                if v > open.peak {
                    (open.peak, open.peak_step) = (v, step);
                }
            } else {
                open.recovered_at = Some(step);
                verdict = Verdict::Recovered(format!(
                    "the spike of {what} from step {} (peak {} at step {}) recovered: {v} <= {}",
                    open.start, open.peak, open.peak_step, open.line
                ));
                if let Some(last) = self.spikes.last_mut() {
                    *last = open.clone();
                }
                self.open = None;
            }
        } else if let Some((mean, std)) = self.window.baseline(window_size) {
            let line = mean + threshold_std * std;
            if std >= MIN_STD && v > line {
                let spike = Spike {
                    series: series.to_owned(),
                    criterion: SpikeCriterion::Std,
                    start: step,
                    peak_step: step,
                    peak: v,
                    line,
                    recovered_at: None,
                };
                self.spikes.push(spike.clone());
                self.open = Some(spike);
                verdict = Verdict::Started(format!(
                    "{what} {v} > mean {mean} + {threshold_std}σ (σ = {std}, line {line}) over the last {window_size} saved steps: a spike starts at step {step}"
                ));
            }
        }
        if let (Some(open), Some(last)) = (&self.open, self.spikes.last_mut()) {
            *last = open.clone();
        }
        self.window.push(v, window_size);
        verdict
    }
}

/// llm-foundry's `KillLossSpike` test on one series: `v ≥ r × mean` of a full window
/// counts an outlier, anything else resets the count; more than `patience` outliers in a
/// row is a spike. Every value joins the window, as there.
#[derive(Debug, Default, Clone)]
pub(crate) struct RatioSpikes {
    window: Window,
    run: Option<Spike>,
    count: usize,
    fired: bool,
    pub(crate) spikes: Vec<Spike>,
}

impl RatioSpikes {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn observe(
        &mut self,
        series: &str,
        what: &str,
        step: i64,
        v: f64,
        window_size: usize,
        multiplier: f64,
        patience: usize,
    ) -> Verdict {
        let mut verdict = Verdict::Quiet;
        if let Some((mean, _)) = self.window.baseline(window_size) {
            let line = multiplier * mean;
            if v >= line {
                self.count += 1;
                let run = self.run.get_or_insert_with(|| Spike {
                    series: series.to_owned(),
                    criterion: SpikeCriterion::Ratio,
                    start: step,
                    peak_step: step,
                    peak: v,
                    line,
                    recovered_at: None,
                });
                if v > run.peak {
                    (run.peak, run.peak_step) = (v, step);
                }
                if self.fired {
                    if let Some(last) = self.spikes.last_mut() {
                        *last = run.clone();
                    }
                } else if self.count > patience {
                    self.fired = true;
                    self.spikes.push(run.clone());
                    verdict = Verdict::Started(format!(
                        "{what} {v} >= {multiplier} × mean {mean} (line {line}) of the last {window_size} saved steps for {} saved steps in a row (more than patience {patience}), since step {}; peak {} at step {}",
                        self.count, run.start, run.peak, run.peak_step
                    ));
                }
            } else {
                if let Some(mut run) = self.run.take() {
                    if self.fired {
                        run.recovered_at = Some(step);
                        verdict = Verdict::Recovered(format!(
                            "the run of {what} >= {multiplier} × the rolling mean from step {} (peak {} at step {}) recovered: {v} < {line}",
                            run.start, run.peak, run.peak_step
                        ));
                        if let Some(last) = self.spikes.last_mut() {
                            *last = run;
                        }
                    }
                }
                self.count = 0;
                self.fired = false;
            }
        }
        self.window.push(v, window_size);
        verdict
    }
}

/// Turns a verdict into a finding (a start) or a remark (a recovery).
fn settle(
    base: &mut RuleBase,
    step: i64,
    tensor: Option<&str>,
    verdict: Verdict,
    finding: &mut Option<Finding>,
) {
    match verdict {
        Verdict::Quiet => {}
        Verdict::Started(why) => {
            if finding.is_none() {
                *finding = Some(Finding {
                    tensor: tensor.map(str::to_owned),
                    message: why,
                });
            }
        }
        Verdict::Recovered(why) => base.remark(step, tensor, why),
    }
}

/// A window size read from an Int parameter, which must be positive.
fn positive(p: &crate::params::ParamReader<'_>, name: &str, v: usize) -> Result<()> {
    if v == 0 {
        return Err(p.config_error(format!("{name} must be positive")));
    }
    Ok(())
}

rule_params! {
    /// Parameters of [`LossSpike`].
    LossSpikeConfig for "LossSpike" {
        tensor_regex: Vec<String>
            => "regexes of the loss tensors (default: collection `losses`, else every scalar)",
        window_size: usize = "128"
            => "OLMo-core: number of preceding saved values whose mean and σ are the baseline",
        threshold_std: Option<f64> = "6.0"
            => "OLMo-core: a spike is above mean + threshold_std·σ; None turns this test off",
        outlier_multiplier: Option<f64> = "2"
            => "llm-foundry: an outlier is >= outlier_multiplier × the rolling mean; None turns this test off",
        outlier_window: usize = "100"
            => "llm-foundry: number of preceding saved values whose mean is the baseline",
        patience: usize = "4"
            => "llm-foundry: fires after more than this many outliers in a row",
    }
    check |p, c| {
        positive(p, "window_size", c.window_size)?;
        positive(p, "outlier_window", c.outlier_window)?;
    }
}

builtin_rule! {
    /// LossSpike (docs/src/rules.md §21): two published tests on each scalar loss tensor
    /// (`tensor_regex`, else collection `losses`, else every scalar), per mode of the step,
    /// so evaluation losses never sit in a training loss's window:
    ///
    /// * OLMo-core's `StabilityMonitorCallback`: the loss is above the mean + `threshold_std`·σ
    ///   of the last `window_size` saved values (window full, σ ≥ 1e-10);
    /// * llm-foundry's `KillLossSpike`: the loss is ≥ `outlier_multiplier` × the mean of the
    ///   last `outlier_window` saved values for more than `patience` saved values in a row.
    ///
    /// Each fires once per spike, at its start (OLMo-core's) or when the run outlasts the
    /// patience (llm-foundry's); the recovery is a [`Remark`](crate::Remark) naming the
    /// start and the peak, and [`LossSpike::spikes`] lists every spike seen. Non-finite losses
    /// are left out of the windows and remarked (ExplodingTensor reports them).
    LossSpike(LossSpikeConfig) {
        std_tests: BTreeMap<(String, Mode), StdSpikes>,
        ratio_tests: BTreeMap<(String, Mode), RatioSpikes>,
    }
}

impl LossSpike {
    /// Every spike seen so far, per test, in the order they started.
    pub fn spikes(&self) -> Vec<Spike> {
        let mut out: Vec<Spike> = self
            .std_tests
            .values()
            .flat_map(|t| t.spikes.clone())
            .collect();
        out.extend(self.ratio_tests.values().flat_map(|t| t.spikes.clone()));
        out.sort_by_key(|s| s.start);
        out
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let mode = trial.mode(step)?.unwrap_or(Mode::Global);
        let mut finding = None;
        for name in super::loss::loss_tensors(trial, &c.tensor_regex)? {
            let Some(v) = crate::util::f64_at(trial, &name, step)?
                .as_ref()
                .and_then(scalar)
            else {
                continue;
            };
            if !v.is_finite() {
                let why = format!("loss {v} is not finite: left out of the rolling window");
                self.base.remark(step, Some(&name), why);
                continue;
            }
            let key = (name.clone(), mode);
            if let Some(k) = c.threshold_std {
                let test = self.std_tests.entry(key.clone()).or_default();
                let verdict = test.observe(&name, "loss", step, v, c.window_size, k);
                settle(&mut self.base, step, Some(&name), verdict, &mut finding);
            }
            if let Some(r) = c.outlier_multiplier {
                let test = self.ratio_tests.entry(key).or_default();
                let verdict = test.observe(&name, "loss", step, v, c.outlier_window, r, c.patience);
                settle(&mut self.base, step, Some(&name), verdict, &mut finding);
            }
        }
        Ok(finding)
    }
}

/// The global norm of a set of tensors from their own L2 norms: ‖(g₁, …, gₙ)‖₂ =
/// √(Σ ‖gᵢ‖₂²), the norm gradient clipping uses (`torch.nn.utils.clip_grad_norm_`); not
/// the sum, nor the mean, of the norms.
pub fn global_norm(per_tensor: impl IntoIterator<Item = f64>) -> f64 {
    // Scaled by the largest norm so that squares of large norms do not overflow.
    let norms: Vec<f64> = per_tensor.into_iter().collect();
    let scale = norms.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return if norms.iter().any(|x| x.is_nan()) {
            f64::NAN
        } else {
            scale
        };
    }
    scale
        * norms
            .iter()
            .map(|x| (x / scale) * (x / scale))
            .sum::<f64>()
            .sqrt()
}

/// A reduction of `name` at `step`: the saved one if there is one, else computed from the
/// raw value; `None` when neither is there.
pub(crate) fn reduction_at(
    trial: &Trial,
    name: &str,
    step: i64,
    op: &str,
    abs: bool,
) -> Result<Option<f64>> {
    let t = trial.tensor(name)?;
    match t.reduction_value(step, op, Mode::Global, None, abs) {
        Ok(v) => Ok(to_f64(&v).as_ref().and_then(scalar)),
        Err(e) => {
            let e = crate::error::RuleError::from(e);
            if e.is_absent_at_step() {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// The L2 norm of every element of `name` at `step` (a matrix's Frobenius norm, what
/// `clip_grad_norm_` takes of each parameter): from the raw value when the step has one, else
/// a saved `l2` (or `abs_l2`) reduction; `None` when neither is there. The raw value comes
/// first because numpy's `l2` of a matrix, which the reader computes and the TensorFlow and
/// XGBoost writers save, is its spectral norm, and of a 3-d tensor an error.
fn elementwise_l2(trial: &Trial, name: &str, step: i64) -> Result<Option<f64>> {
    if let Some(v) = value_at(trial, name, step, Mode::Global)? {
        return Ok(to_f64(&v).map(|a| global_norm(a.iter().copied())));
    }
    match reduction_at(trial, name, step, "l2", false)? {
        Some(n) => Ok(Some(n)),
        None => reduction_at(trial, name, step, "l2", true),
    }
}

rule_params! {
    /// Parameters of [`GradientNormSpike`].
    GradientNormSpikeConfig for "GradientNormSpike" {
        window_size: usize = "128"
            => "OLMo-core: number of preceding saved norms whose mean and σ are the baseline",
        threshold_std: f64 = "6.0" => "OLMo-core: a spike is above mean + threshold_std·σ",
    }
    check |p, c| {
        positive(p, "window_size", c.window_size)?;
    }
}

builtin_rule! {
    /// GradientNormSpike (docs/src/rules.md §22): the global gradient norm of the step, from
    /// the per-tensor L2 norms of collection `gradients` ([`global_norm`]; each the norm of
    /// every element of the raw tensor, else a saved `l2` reduction), judged by OLMo-core's test as
    /// [`LossSpike`] does (OLMo-core's `StabilityMonitorCallback` watches its
    /// `optim/total grad norm` with the same defaults).
    ///
    /// A step where fewer gradient tensors have a norm than at the fullest step so far is
    /// skipped with a remark (a partial norm is not comparable); so is a non-finite norm.
    GradientNormSpike(GradientNormSpikeConfig) {
        test: StdSpikes,
        most_tensors: usize,
    }
}

impl GradientNormSpike {
    /// Every spike seen so far.
    pub fn spikes(&self) -> &[Spike] {
        &self.test.spikes
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let mut norms = Vec::new();
        for name in crate::util::collection_tensors(trial, "gradients")? {
            norms.extend(elementwise_l2(trial, &name, step)?);
        }
        if norms.is_empty() {
            return Ok(None);
        }
        if norms.len() < self.most_tensors {
            let why = format!(
                "only {} of {} gradient tensors have a norm at this step: no global norm",
                norms.len(),
                self.most_tensors
            );
            self.base.remark(step, None, why);
            return Ok(None);
        }
        self.most_tensors = norms.len();
        let norm = global_norm(norms.iter().copied());
        if !norm.is_finite() {
            let why = format!("the global gradient norm is {norm}: left out of the window");
            self.base.remark(step, None, why);
            return Ok(None);
        }
        let c = &self.config;
        let what = format!("global gradient norm (over {} tensors)", norms.len());
        let verdict = self.test.observe(
            "global gradient norm",
            &what,
            step,
            norm,
            c.window_size,
            c.threshold_std,
        );
        let mut finding = None;
        settle(&mut self.base, step, None, verdict, &mut finding);
        Ok(finding)
    }
}

rule_params! {
    /// Parameters of [`ActivationOutlier`].
    ActivationOutlierConfig for "ActivationOutlier" {
        collection_names: Vec<String> = "outputs"
            => "collections of the layers' outputs, one tensor per layer",
        tensor_regex: Vec<String> => "regexes of further layer outputs",
        window_size: usize = "128"
            => "number of preceding saved values of the layer whose mean and σ are its baseline",
        threshold_std: f64 = "6.0"
            => "fires when the layer's max |activation| is above mean + threshold_std·σ",
    }
    check |p, c| {
        positive(p, "window_size", c.window_size)?;
    }
}

builtin_rule! {
    /// ActivationOutlier (docs/src/rules.md §27): per layer output (the selection, default
    /// collection `outputs`), its largest magnitude at the step — a saved `(max, abs)`
    /// reduction, else the larger of |max| and |min| from saved `max`/`min` reductions, else
    /// computed from the raw value — judged against the layer's own window by OLMo-core's
    /// test, as [`LossSpike`] does. Large activations are normal in transformers: only a
    /// jump over the layer's own history fires. Non-finite magnitudes are remarked and left
    /// out.
    ActivationOutlier(ActivationOutlierConfig) {
        tests: BTreeMap<String, StdSpikes>,
    }
}

impl ActivationOutlier {
    /// Every spike seen so far, in the order they started.
    pub fn spikes(&self) -> Vec<Spike> {
        let mut out: Vec<Spike> = self.tests.values().flat_map(|t| t.spikes.clone()).collect();
        out.sort_by_key(|s| s.start);
        out
    }

    fn max_magnitude(trial: &Trial, name: &str, step: i64) -> Result<Option<f64>> {
        if let Some(m) = reduction_at(trial, name, step, "max", true)? {
            return Ok(Some(m));
        }
        let (max, min) = (
            reduction_at(trial, name, step, "max", false)?,
            reduction_at(trial, name, step, "min", false)?,
        );
        Ok(match (max, min) {
            (Some(a), Some(b)) => Some(a.abs().max(b.abs())),
            (Some(a), None) | (None, Some(a)) => Some(a.abs()),
            (None, None) => None,
        })
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let mut finding = None;
        for name in select(trial, &c.collection_names, &c.tensor_regex, false)? {
            let Some(m) = Self::max_magnitude(trial, &name, step)? else {
                continue;
            };
            if !m.is_finite() {
                let why = format!("max |activation| is {m}: left out of the layer's window");
                self.base.remark(step, Some(&name), why);
                continue;
            }
            let test = self.tests.entry(name.clone()).or_default();
            let verdict = test.observe(
                &name,
                "max |activation|",
                step,
                m,
                c.window_size,
                c.threshold_std,
            );
            settle(&mut self.base, step, Some(&name), verdict, &mut finding);
        }
        Ok(finding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The window's baseline is the mean and population σ of exactly the last `size`
        /// values pushed.
        #[test]
        fn window_keeps_the_last_values(
            values in prop::collection::vec(-1e6f64..1e6, 1..60),
            size in 1usize..20,
        ) {
            let mut w = Window::default();
            for &v in &values {
                w.push(v, size);
            }
            let tail = &values[values.len().saturating_sub(size)..];
            match w.baseline(size) {
                None => prop_assert!(values.len() < size),
                Some((mean, std)) => {
                    prop_assert_eq!(tail.len(), size);
                    let m = tail.iter().sum::<f64>() / size as f64;
                    let s = (tail.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / size as f64).sqrt();
                    prop_assert!((mean - m).abs() <= 1e-9 * m.abs().max(1.0));
                    prop_assert!((std - s).abs() <= 1e-9 * s.max(1.0));
                }
            }
        }
    }

    #[test]
    fn std_spike_starts_once_and_recovers() {
        let mut t = StdSpikes::default();
        let mut verdicts = Vec::new();
        for (i, v) in [1.0, 1.1, 0.9, 1.0, 9.0, 12.0, 8.0, 1.0, 1.05]
            .into_iter()
            .enumerate()
        {
            verdicts.push(t.observe("l", "loss", i as i64, v, 4, 3.0));
        }
        assert!(matches!(verdicts[4], Verdict::Started(_)));
        assert_eq!(verdicts[5], Verdict::Quiet);
        assert!(matches!(verdicts[7], Verdict::Recovered(_)));
        let s = &t.spikes[0];
        assert_eq!(
            (s.start, s.peak_step, s.peak, s.recovered_at),
            (4, 5, 12.0, Some(7))
        );
    }
}
