//! Rules on attention and output logits: AttentionLogitGrowth, OutputLogitDivergence
//! (docs/src/rules.md §23, §24). The tensors are those the PyTorch hook's `attention` and
//! `output_logits` collections save (`smdebug_rs.pytorch.signals`).

use super::Finding;
use crate::error::Result;
use crate::util::{f64_at, regex_tensors, scalar};
use smdebug_trial::Trial;
use std::collections::BTreeMap;

rule_params! {
    /// Parameters of [`AttentionLogitGrowth`].
    AttentionLogitGrowthConfig for "AttentionLogitGrowth" {
        logit_regex: Vec<String> = "^attention_logit_max/"
            => "regexes of the per-layer tensors of each head's largest pre-softmax logit (shape `[heads]`)",
        max_logit: Option<f64> = "100"
            => "fires when a head's largest logit is above this (Kimi K2's QK-Clip τ); None turns this test off",
        entropy_regex: Vec<String> = "^attention_entropy/"
            => "regexes of the per-layer tensors of each head's softmax entropy in nats (shape `[heads]`)",
        entropy_collapse_ratio: Option<f64> = "0.1"
            => "fires when a head's entropy is below this fraction of its highest saved entropy; None turns this test off",
    }
    check |p, c| {
        if c.entropy_collapse_ratio.is_some_and(|r| !(0.0..1.0).contains(&r)) {
            return Err(p.config_error("entropy_collapse_ratio must be in [0, 1)"));
        }
    }
}

builtin_rule! {
    /// AttentionLogitGrowth (docs/src/rules.md §23): the attention-logit growth instability
    /// of Dehghani et al. (2023, ViT-22B) and Wortsman et al. (2023), and the attention
    /// entropy collapse of Zhai et al. (2023).
    ///
    /// Per layer tensor of shape `[heads]`: fires when a head's largest pre-softmax logit
    /// (`attention_logit_max/<n>`) is above `max_logit`, or when a head's entropy
    /// (`attention_entropy/<n>`) is below `entropy_collapse_ratio` × the highest entropy that
    /// head had at any saved step up to this one. Fires at every step where this holds, as
    /// threshold rules do. A tensor that is not one-dimensional is remarked and skipped;
    /// NaN heads are remarked and left out.
    AttentionLogitGrowth(AttentionLogitGrowthConfig) {
        highest_entropy: BTreeMap<(String, usize), f64>,
    }
}

impl AttentionLogitGrowth {
    /// The heads of a `[heads]` tensor at `step`, or `None` (remarked) for any other shape.
    fn heads(&mut self, trial: &Trial, name: &str, step: i64) -> Result<Option<Vec<f64>>> {
        let Some(a) = f64_at(trial, name, step)? else {
            return Ok(None);
        };
        if a.ndim() != 1 {
            let why = format!("shape {:?} is not [heads]: skipped", a.shape());
            self.base.remark(step, Some(name), why);
            return Ok(None);
        }
        let heads: Vec<f64> = a.iter().copied().collect();
        let nan = heads.iter().filter(|x| x.is_nan()).count();
        if nan > 0 {
            let why = format!("{nan} of {} heads are NaN: left out", heads.len());
            self.base.remark(step, Some(name), why);
        }
        Ok(Some(heads))
    }

    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let mut finding = None;
        if let Some(bound) = self.config.max_logit {
            for name in regex_tensors(trial, &self.config.logit_regex)? {
                let Some(heads) = self.heads(trial, &name, step)? else {
                    continue;
                };
                let top = heads
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| !x.is_nan())
                    .max_by(|a, b| a.1.total_cmp(b.1));
                if let Some((h, &x)) = top.filter(|(_, &x)| x > bound) {
                    let why = format!(
                        "head {h}: largest pre-softmax attention logit {x} > {bound} (of {} heads)",
                        heads.len()
                    );
                    finding.get_or_insert(Finding::on(name, why));
                }
            }
        }
        if let Some(ratio) = self.config.entropy_collapse_ratio {
            for name in regex_tensors(trial, &self.config.entropy_regex)? {
                let Some(heads) = self.heads(trial, &name, step)? else {
                    continue;
                };
                for (h, &e) in heads.iter().enumerate() {
                    if e.is_nan() {
                        continue;
                    }
                    // Every head's history is updated, also after another head fired.
                    let highest = self
                        .highest_entropy
                        .entry((name.clone(), h))
                        .and_modify(|m| *m = m.max(e))
                        .or_insert(e);
                    let line = ratio * *highest;
                    if e < line && finding.is_none() {
                        let why = format!(
                            "head {h}: attention entropy {e} nats < {ratio} × its highest saved entropy {highest} nats (line {line})"
                        );
                        finding = Some(Finding::on(name.clone(), why));
                    }
                }
            }
        }
        Ok(finding)
    }
}

rule_params! {
    /// Parameters of [`OutputLogitDivergence`].
    OutputLogitDivergenceConfig for "OutputLogitDivergence" {
        tensor_regex: Vec<String> = "^output_log_partition$"
            => "regexes of the scalar log-partition tensors (mean log Σ exp of the output logits)",
        threshold: f64 = "20"
            => "fires when |log Z| is above this many nats",
    }
    check |p, c| {
        if c.threshold.is_nan() || c.threshold < 0.0 {
            return Err(p.config_error("threshold must be a non-negative number"));
        }
    }
}

builtin_rule! {
    /// OutputLogitDivergence (docs/src/rules.md §24): the output-logit divergence of
    /// Wortsman et al. (2023) that PaLM's z-loss (1e-4 · log² Z) prevents: fires when the
    /// scalar `output_log_partition` (the mean over positions of log Σ exp of the output
    /// logits) is farther than `threshold` nats from 0. A value that is not a scalar, or is
    /// NaN, is remarked and skipped.
    OutputLogitDivergence(OutputLogitDivergenceConfig)
}

impl OutputLogitDivergence {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let bound = self.config.threshold;
        for name in regex_tensors(trial, &self.config.tensor_regex)? {
            let Some(a) = f64_at(trial, &name, step)? else {
                continue;
            };
            let Some(z) = scalar(&a) else {
                let why = format!("shape {:?} is not a scalar: skipped", a.shape());
                self.base.remark(step, Some(&name), why);
                continue;
            };
            if z.is_nan() {
                self.base.remark(step, Some(&name), "log Z is NaN: skipped");
                continue;
            }
            if z.abs() > bound {
                let why = format!(
                    "output log-partition log Z = {z} is {} nats from 0 (more than {bound})",
                    z.abs()
                );
                return Ok(Some(Finding::on(name, why)));
            }
        }
        Ok(None)
    }
}
