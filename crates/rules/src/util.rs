//! Helpers the built-in rules share: tensor selection, values as float64, NumPy-style
//! comparisons and statistics.

use crate::error::{Result, RuleError};
use ndarray::ArrayD;
use smdebug_config::Mode;
use smdebug_record::TensorValue;
use smdebug_trial::{TensorFilter, Trial};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The value as float64 (bools as 0/1); `None` for complex numbers and strings.
pub fn to_f64(v: &TensorValue) -> Option<ArrayD<f64>> {
    Some(match v {
        TensorValue::Float16(a) => a.mapv(|x| x.to_f64()),
        TensorValue::Float32(a) => a.mapv(f64::from),
        TensorValue::Float64(a) => a.clone(),
        TensorValue::Int8(a) => a.mapv(f64::from),
        TensorValue::Int16(a) => a.mapv(f64::from),
        TensorValue::Int32(a) => a.mapv(f64::from),
        TensorValue::Int64(a) => a.mapv(|x| x as f64),
        TensorValue::UInt8(a) => a.mapv(f64::from),
        TensorValue::UInt16(a) => a.mapv(f64::from),
        TensorValue::UInt32(a) => a.mapv(f64::from),
        TensorValue::UInt64(a) => a.mapv(|x| x as f64),
        TensorValue::Bool(a) => a.mapv(|x| if x { 1.0 } else { 0.0 }),
        TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
            return None
        }
    })
}

/// Whether the collection exists in the trial (an absent collection selects nothing).
pub fn has_collection(trial: &Trial, name: &str) -> bool {
    trial.collections().contains_key(name)
}

/// Names of the tensors of a collection (empty when it does not exist).
pub fn collection_tensors(trial: &Trial, name: &str) -> Result<Vec<String>> {
    if !has_collection(trial, name) {
        return Ok(Vec::new());
    }
    Ok(trial.tensor_names_filtered(&TensorFilter {
        collection: Some(name.to_owned()),
        ..TensorFilter::default()
    })?)
}

/// Names matched (`re.search`) by any of the regexes.
pub fn regex_tensors(trial: &Trial, regexes: &[String]) -> Result<Vec<String>> {
    if regexes.is_empty() {
        return Ok(Vec::new());
    }
    Ok(trial.tensor_names_filtered(&TensorFilter {
        regex: Some(regexes.to_vec()),
        ..TensorFilter::default()
    })?)
}

/// The selection of docs/src/rules.md §0.1: the sorted union of the collections' tensors and the
/// regexes' matches; when both are empty, every tensor if `all_if_empty`, else nothing.
pub fn select(
    trial: &Trial,
    collections: &[String],
    regexes: &[String],
    all_if_empty: bool,
) -> Result<Vec<String>> {
    if collections.is_empty() && regexes.is_empty() {
        return if all_if_empty {
            Ok(trial.tensor_names()?)
        } else {
            Ok(Vec::new())
        };
    }
    let mut names = BTreeSet::new();
    for c in collections {
        names.extend(collection_tensors(trial, c)?);
    }
    names.extend(regex_tensors(trial, regexes)?);
    Ok(names.into_iter().collect())
}

/// The raw value of `name` at `step` (of `mode`), or `None` when the tensor has no raw
/// value there (the rule then skips that tensor: docs/src/rules.md §0.1).
pub fn value_at(
    trial: &Trial,
    name: &str,
    step: i64,
    mode: Mode,
) -> Result<Option<Arc<TensorValue>>> {
    let t = match trial.tensor(name) {
        Ok(t) => t,
        Err(e) => {
            let e = RuleError::from(e);
            if matches!(
                e.analysis(),
                Some(smdebug_exceptions::AnalysisError::TensorUnavailable { .. })
            ) {
                return Ok(None);
            }
            return Err(e);
        }
    };
    match t.value(step, mode, None) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            let e = RuleError::from(e);
            if e.is_absent_at_step() {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// A weight's saved value at a step and at the earlier saved step it is compared with (the
/// update-ratio rules: WeightUpdateRatio, UpdateRatio).
pub(crate) struct WeightUpdate {
    /// The tensor.
    pub name: String,
    /// The mode whose steps `from` and `to` are.
    pub mode: Mode,
    /// The earlier step.
    pub from: i64,
    /// The step judged.
    pub to: i64,
    /// The value at `from`.
    pub before: ArrayD<f64>,
    /// The value at `to`.
    pub now: ArrayD<f64>,
}

/// Calls `judge` with the update of each tensor of collection `weights` saved at global
/// `step` and returns its first finding. When the trial has TRAIN steps only TRAIN steps are
/// judged, in TRAIN mode steps; otherwise global steps. `previous` picks the earlier step
/// among the tensor's saved steps before the judged one (`None`: the tensor is skipped);
/// tensors without a numeric value at either step are skipped.
pub(crate) fn first_weight_update<T>(
    trial: &Trial,
    step: i64,
    previous: impl Fn(&[i64], i64) -> Option<i64>,
    mut judge: impl FnMut(WeightUpdate) -> Result<Option<T>>,
) -> Result<Option<T>> {
    let (mode, t) = if trial.modes().contains(&Mode::Train) {
        match trial.mode_modestep(step)? {
            Some((Mode::Train, ms)) => (Mode::Train, ms),
            _ => return Ok(None),
        }
    } else {
        (Mode::Global, step)
    };
    for name in collection_tensors(trial, "weights")? {
        let steps = trial.tensor(&name)?.steps(mode, false)?;
        if steps.binary_search(&t).is_err() {
            continue;
        }
        let Some(p) = previous(&steps[..steps.partition_point(|&x| x < t)], t) else {
            continue;
        };
        let (Some(now), Some(before)) = (
            value_at(trial, &name, t, mode)?.and_then(|v| to_f64(&v)),
            value_at(trial, &name, p, mode)?.and_then(|v| to_f64(&v)),
        ) else {
            continue;
        };
        let update = WeightUpdate {
            name,
            mode,
            from: p,
            to: t,
            before,
            now,
        };
        if let Some(found) = judge(update)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `(‖now − before‖₂, ‖before‖₂)` of two arrays of one shape.
pub(crate) fn update_norms(now: &ArrayD<f64>, before: &ArrayD<f64>) -> (f64, f64) {
    let diff = now
        .iter()
        .zip(before.iter())
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    (diff, before.iter().map(|x| x * x).sum::<f64>().sqrt())
}

/// The value at a global step as float64 (`None` when absent or not numeric).
pub fn f64_at(trial: &Trial, name: &str, step: i64) -> Result<Option<ArrayD<f64>>> {
    Ok(value_at(trial, name, step, Mode::Global)?.and_then(|v| to_f64(&v)))
}

/// The value if it has exactly one element.
pub fn scalar(v: &ArrayD<f64>) -> Option<f64> {
    (v.len() == 1).then(|| v.iter().next().copied()).flatten()
}

/// Whether the tensor's value at its latest step is a scalar (exactly one element).
pub fn is_scalar_tensor(trial: &Trial, name: &str) -> Result<bool> {
    let t = trial.tensor(name)?;
    let steps = t.steps(Mode::Global, false)?;
    let Some(&last) = steps.last() else {
        return Ok(false);
    };
    match t.shape(last, Mode::Global, None) {
        Ok(shape) => Ok(shape.iter().product::<u64>() == 1),
        Err(_) => Ok(false),
    }
}

/// NumPy `isclose` of two elements.
pub fn isclose(a: f64, b: f64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    if a.is_nan() || b.is_nan() {
        return equal_nan && a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}

/// NumPy `allclose` (shapes must be equal here; the rules treat a shape change as a
/// difference).
pub fn allclose(a: &ArrayD<f64>, b: &ArrayD<f64>, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(&x, &y)| isclose(x, y, rtol, atol, equal_nan))
}

/// Population variance (ddof 0); NaN for an empty array.
pub fn variance(a: &ArrayD<f64>) -> f64 {
    let n = a.len() as f64;
    if a.is_empty() {
        return f64::NAN;
    }
    let mean = a.sum() / n;
    a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n
}

/// NumPy `percentile(a, q)` with linear interpolation (q in 0–100) over sorted data.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// The activity of a layer's units (see [`unit_activity`]).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitActivity {
    /// Per unit with at least one finite sample: the percentage of its finite samples that
    /// are active.
    pub percent: Vec<f64>,
    /// Units in the tensor (including those without a finite sample).
    pub units: usize,
    /// Non-finite samples left out.
    pub non_finite: usize,
}

/// Per-unit activity over axis 0 (the batch): for each position of the remaining axes, the
/// percentage of samples for which `active(x)` holds. A rank-0/1 tensor is one unit.
/// NaN and infinite samples are left out and counted: they tell nothing about whether a
/// unit is dead or saturated (ExplodingTensor reports them), and a unit with no finite
/// sample has no activity at all.
pub fn unit_activity(a: &ArrayD<f64>, active: impl Fn(f64) -> bool) -> UnitActivity {
    let units = match a.ndim() {
        _ if a.is_empty() => 0,
        0 | 1 => 1,
        _ => a.len() / a.shape()[0],
    };
    let mut counts = vec![(0usize, 0usize); units];
    let mut non_finite = 0;
    for (i, &x) in a.iter().enumerate() {
        if !x.is_finite() {
            non_finite += 1;
            continue;
        }
        let c = &mut counts[if a.ndim() <= 1 { 0 } else { i % units }];
        c.1 += 1;
        if active(x) {
            c.0 += 1;
        }
    }
    UnitActivity {
        percent: counts
            .into_iter()
            .filter(|&(_, finite)| finite > 0)
            .map(|(act, finite)| 100.0 * act as f64 / finite as f64)
            .collect(),
        units,
        non_finite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr1;

    #[test]
    fn numpy_helpers() {
        let lin: Vec<f64> = (0..=100).map(|i| -1e-4 + 2e-4 * i as f64 / 100.0).collect();
        let q = percentile_sorted(&lin, 95.0) - percentile_sorted(&lin, 5.0);
        assert!((q - 1.8e-4).abs() < 1e-12);
        assert_eq!(percentile_sorted(&[1.0, 2.0], 50.0), 1.5);
        assert_eq!(variance(&arr1(&[1.0, -1.0, 1.0, -1.0]).into_dyn()), 1.0);
        assert!(isclose(3.0, 3.00001, 1e-5, 1e-8, false));
        assert!(!isclose(3.0, 3.01, 1e-5, 1e-8, false));
        assert!(!isclose(f64::NAN, f64::NAN, 1e-5, 1e-8, false));
        assert!(isclose(f64::NAN, f64::NAN, 1e-5, 1e-8, true));
        assert!(isclose(f64::INFINITY, f64::INFINITY, 1e-5, 1e-8, false));
        let a = ndarray::Array2::from_shape_vec((2, 2), vec![0.0, 1.0, 0.0, 0.0])
            .unwrap()
            .into_dyn();
        let act = unit_activity(&a, |x| x > 0.0);
        assert_eq!(
            (act.percent, act.units, act.non_finite),
            (vec![0.0, 50.0], 2, 0)
        );
        let b = ndarray::Array2::from_shape_vec(
            (2, 3),
            vec![1.0, f64::NAN, f64::NAN, 0.0, f64::INFINITY, 2.0],
        )
        .unwrap()
        .into_dyn();
        let act = unit_activity(&b, |x| x > 0.0);
        assert_eq!(
            (act.percent, act.units, act.non_finite),
            (vec![50.0, 100.0], 3, 3)
        );
        let flat = unit_activity(&arr1(&[f64::NAN, 1.0, 0.0, 0.0]).into_dyn(), |x| x > 0.0);
        assert_eq!(
            (flat.percent, flat.units, flat.non_finite),
            (vec![100.0 / 3.0], 1, 1)
        );
        let empty = unit_activity(&arr1(&[]).into_dyn(), |x| x > 0.0);
        assert_eq!((empty.percent.len(), empty.units), (0, 0));
    }
}
