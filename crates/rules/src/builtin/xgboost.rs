//! XGBoost rules: FeatureImportanceOverweight, TreeDepth.

use super::Finding;
use crate::error::Result;
use crate::util::{f64_at, regex_tensors, scalar};
use smdebug_trial::Trial;

rule_params! {
    /// Parameters of [`FeatureImportanceOverweight`].
    FeatureImportanceOverweightConfig for "FeatureImportanceOverweight" {
        threshold: f64 = "0.8"
            => "largest allowed sum of the nfeatures largest normalised importances",
        nfeatures: usize = "3" => "number of largest importances summed",
        tensor_regex: String = ".*feature_importance/weight"
            => "regex of the feature-importance tensors",
    }
}

builtin_rule! {
    /// FeatureImportanceOverweight (docs/src/rules.md §19): at a step, the scalar values of the tensors
    /// matching `tensor_regex` (the XGBoost hook's `feature_importance/<type>/<feature>`,
    /// normalised to sum 1) are sorted and the `nfeatures` largest summed; fires if the sum
    /// exceeds `threshold`. Kept quirk: with at most `nfeatures` features the sum is 1 and the
    /// rule fires.
    FeatureImportanceOverweight(FeatureImportanceOverweightConfig)
}

impl FeatureImportanceOverweight {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        let c = &self.config;
        let mut values = Vec::new();
        for name in regex_tensors(trial, std::slice::from_ref(&c.tensor_regex))? {
            if let Some(v) = f64_at(trial, &name, step)?.as_ref().and_then(scalar) {
                values.push((v, name));
            }
        }
        values.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top = &values[..values.len().min(c.nfeatures)];
        let sum: f64 = top.iter().map(|x| x.0).sum();
        if values.is_empty() || sum <= c.threshold {
            return Ok(None);
        }
        let names: Vec<&str> = top.iter().map(|x| x.1.as_str()).collect();
        Ok(Some(Finding::general(format!(
            "the {} largest feature importances ({}) sum to {sum:.4} > {}",
            names.len(),
            names.join(", "),
            c.threshold
        ))))
    }
}

rule_params! {
    /// Parameters of [`TreeDepth`].
    TreeDepthConfig for "TreeDepth" {
        depth: f64 = "4"
            => "fires when the estimated depth of the step's tree is greater than this",
    }
}

builtin_rule! {
    /// TreeDepth (docs/src/rules.md §20): the depth of the tree in `trees/Node` at the step is estimated
    /// as `floor(log2(max node id))` (a full tree of depth k has largest id 2^(k+1) − 2; for
    /// unbalanced trees this is a lower bound); fires if it is greater than `depth`. A single
    /// leaf (max id 0) never fires.
    TreeDepth(TreeDepthConfig)
}

impl TreeDepth {
    fn condition(&mut self, trial: &Trial, step: i64) -> Result<Option<Finding>> {
        const NODES: &str = "trees/Node";
        if !trial.has_tensor(NODES)? {
            return Ok(None);
        }
        let Some(a) = f64_at(trial, NODES, step)? else {
            return Ok(None);
        };
        let max = a
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        if max < 1.0 {
            return Ok(None);
        }
        let d = max.log2().floor();
        let depth = self.config.depth;
        Ok((d > depth).then(|| {
            Finding::on(
                NODES,
                format!("tree depth {d} (largest node id {max}) is greater than {depth}"),
            )
        }))
    }
}
