//! `health`: the first step, mode, worker and tensor holding a non-finite value, a
//! per-tensor timeline around it, and the tensors whose magnitudes first grew.
//!
//! One pass over the trial: every tensor's records are read once, step by step. For each
//! (tensor, step, worker) the sample is the health summary when the writer stored one
//! (`smdebug/health/counts|range/<tensor>`, docs/src/format.md §15), else the raw value
//! (summarized here by the same fused pass), else the saved reductions (`l2`,
//! `abs_max`/`max`: a NaN or infinite reduction says the tensor held a non-finite value).

use crate::error::DiagnoseError;
use serde::{Serialize, Serializer};
use smdebug_index::{health_tensor_name, reverse_health_tensor_name, HealthPart};
use smdebug_record::TensorValue;
use smdebug_reduce::{Flavor, Reduction, ReductionRequest};
use smdebug_trial::{Mode, Trial};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// What `health` shows around the first non-finite value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthOptions {
    /// Saved steps shown on each side of the first bad step in the timeline.
    pub context: usize,
    /// A tensor "grew" at the first step where its amax (else l2) exceeds this factor times
    /// the smallest value it had at earlier steps.
    pub growth: f64,
}

impl Default for HealthOptions {
    fn default() -> Self {
        HealthOptions {
            context: 5,
            growth: 10.0,
        }
    }
}

/// Where a sample's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Source {
    /// The health summary the writer stored (`smdebug/health/counts|range/<tensor>`).
    #[serde(rename = "health summary")]
    Summary,
    /// The raw value, summarized here.
    #[serde(rename = "raw value")]
    Raw,
    /// The saved reductions alone: counts unknown.
    #[serde(rename = "reductions")]
    Reductions,
}

impl Source {
    /// The name printed and serialized (`health summary`, `raw value`, `reductions`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Summary => "health summary",
            Source::Raw => "raw value",
            Source::Reductions => "reductions",
        }
    }
}

/// What one worker's records say about one tensor at one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// Where the numbers came from.
    pub source: Source,
    /// Elements of the tensor (unknown from reductions).
    pub elements: Option<u64>,
    /// NaN elements.
    pub nan: u64,
    /// +Inf elements.
    pub pos_inf: u64,
    /// -Inf elements.
    pub neg_inf: u64,
    /// A saved reduction was NaN or infinite (counts unknown).
    pub non_finite_reduction: bool,
    /// Largest absolute value (serialized as a string when not finite).
    #[serde(serialize_with = "number")]
    pub amax: Option<f64>,
    /// L2 norm (serialized as a string when not finite).
    #[serde(serialize_with = "number")]
    pub l2: Option<f64>,
}

impl Sample {
    /// Whether the sample shows a non-finite value.
    pub fn is_bad(&self) -> bool {
        self.nan + self.pos_inf + self.neg_inf > 0 || self.non_finite_reduction
    }

    /// amax when known, else l2: the magnitude the growth search follows.
    fn magnitude(&self) -> Option<f64> {
        self.amax.or(self.l2).filter(|v| v.is_finite())
    }
}

/// A finite number as a JSON number, NaN and infinities as their names (JSON has no
/// literal for them), none as null.
fn number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.is_finite() => s.serialize_f64(*x),
        Some(x) => s.serialize_str(&x.to_string()),
        None => s.serialize_none(),
    }
}

/// The first non-finite value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NonFinite {
    /// The global step.
    pub step: i64,
    /// Its mode (`GLOBAL` when the step has none).
    pub mode: Mode,
    /// Its mode step.
    pub mode_step: i64,
    /// The worker.
    pub worker: String,
    /// The tensor.
    pub tensor: String,
    /// What its records say at that step.
    pub summary: Sample,
    /// The other tensors non-finite at that step.
    pub also_non_finite_at_step: Vec<String>,
}

/// One saved step of a timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineStep {
    /// What the records say.
    #[serde(flatten)]
    pub sample: Sample,
    /// The global step.
    pub step: i64,
}

/// One tensor's samples around the first bad step, of the culprit's worker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// The tensor.
    pub tensor: String,
    /// The worker.
    pub worker: String,
    /// The saved steps around the bad one that this tensor has.
    pub steps: Vec<TimelineStep>,
}

/// A tensor whose magnitude first grew.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Growth {
    /// The tensor.
    pub tensor: String,
    /// The first step where its magnitude exceeded the factor.
    pub step: i64,
    /// The smallest magnitude before it.
    pub from: f64,
    /// The magnitude reached.
    pub to: f64,
    /// `to / from`.
    pub factor: f64,
}

/// What [`health`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HealthReport {
    /// The trial's path.
    pub trial: String,
    /// The first non-finite value (`None`: every value is finite).
    pub first_non_finite: Option<NonFinite>,
    /// The culprit and up to four tensors that grew first, around the bad step (`None`
    /// when every value is finite).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<Timeline>>,
    /// Tensors whose magnitude grew, up to the bad step, by step (`None` when every value
    /// is finite).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_grew: Option<Vec<Growth>>,
    /// Tensors with samples.
    pub tensors: usize,
    /// Records read.
    pub records_read: u64,
}

/// A sample, and the offset of its first record in its events file: the order the tensors
/// were saved within the step.
type Placed = (Sample, u64);

/// Everything the pass found: samples by tensor, then (step, worker).
struct Scan {
    samples: BTreeMap<String, BTreeMap<(i64, String), Placed>>,
    records: u64,
}

/// The sample of one raw value: the health summary and the flattened l2, one fused pass.
fn from_raw(v: &TensorValue) -> Option<Sample> {
    let view = v.reduce_view()?;
    let l2 = ReductionRequest::new(Reduction::L2, false);
    let (out, h) = view.reduce_with_health(&[l2], Flavor::PyTorch, false);
    Some(Sample {
        source: Source::Raw,
        elements: Some(h.elements),
        nan: h.nan,
        pos_inf: h.pos_inf,
        neg_inf: h.neg_inf,
        non_finite_reduction: false,
        amax: Some(h.amax).filter(|a| !a.is_nan()),
        l2: out[0].as_ref().ok().map(|s| s.to_f64()),
    })
}

fn scan(trial: &Trial) -> Result<Scan, DiagnoseError> {
    let names = trial.tensor_names()?;
    let mut with_summary: BTreeSet<&str> = BTreeSet::new();
    for n in &names {
        if let Some((base, HealthPart::Counts)) = reverse_health_tensor_name(n) {
            with_summary.insert(base);
        }
    }
    let mut out = Scan {
        samples: BTreeMap::new(),
        records: 0,
    };
    // Every tensor that has records of its own or a health summary.
    let bases: BTreeSet<&str> = names
        .iter()
        .filter(|n| reverse_health_tensor_name(n).is_none())
        .map(String::as_str)
        .chain(with_summary.iter().copied())
        .collect();
    for &name in &bases {
        let tensor = if trial.has_tensor(name)? {
            Some(trial.tensor(name)?)
        } else {
            None
        };
        let summary = if with_summary.contains(name) {
            Some((
                trial.tensor(&health_tensor_name(name, HealthPart::Counts))?,
                trial.tensor(&health_tensor_name(name, HealthPart::Range))?,
            ))
        } else {
            None
        };
        // Steps and workers from the records the samples come from.
        let Some(stepper) = summary.as_ref().map(|(c, _)| c).or(tensor.as_ref()) else {
            continue;
        };
        let mut samples = BTreeMap::new();
        for step in stepper.steps(Mode::Global, true)? {
            for worker in stepper.workers(step, Mode::Global)? {
                let w = Some(worker.as_str());
                let locs = match &tensor {
                    Some(t) => t
                        .step_record_locations(step, Mode::Global, w)
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                let first_offset = locs.first().map_or(u64::MAX, |l| l.start);
                let mut sample = None;
                if let Some((counts, range)) = &summary {
                    if let Ok(c) = counts.value(step, Mode::Global, w) {
                        let c = c.to_f64_vec().unwrap_or_default();
                        let r = range
                            .value(step, Mode::Global, w)
                            .map(|r| r.to_f64_vec().unwrap_or_default())
                            .unwrap_or_default();
                        let offset = counts
                            .step_record_locations(step, Mode::Global, w)?
                            .first()
                            .map_or(u64::MAX, |l| l.start);
                        out.records += 2;
                        if c.len() == 5 {
                            sample = Some((
                                Sample {
                                    source: Source::Summary,
                                    elements: Some(c[0] as u64),
                                    nan: c[1] as u64,
                                    pos_inf: c[2] as u64,
                                    neg_inf: c[3] as u64,
                                    non_finite_reduction: false,
                                    amax: r.get(2).copied().filter(|a| !a.is_nan()),
                                    l2: None,
                                },
                                offset,
                            ));
                        }
                    }
                }
                let reductions = tensor
                    .as_ref()
                    .and_then(|t| t.reduction_values(step, Mode::Global, w).ok())
                    .unwrap_or_default();
                out.records += reductions.len() as u64;
                let red = |op: &str, abs: bool| {
                    reductions
                        .get(&(op.to_owned(), abs))
                        .and_then(|v| v.to_f64_vec().unwrap_or_default().first().copied())
                };
                if let (None, Some(tensor)) = (&sample, &tensor) {
                    if let Ok(v) = tensor.value(step, Mode::Global, w) {
                        out.records += 1;
                        sample = from_raw(&v).map(|s| (s, first_offset));
                    }
                }
                let (mut sample, offset) = match sample {
                    Some(s) => s,
                    None if !reductions.is_empty() => (
                        Sample {
                            source: Source::Reductions,
                            elements: None,
                            nan: 0,
                            pos_inf: 0,
                            neg_inf: 0,
                            non_finite_reduction: reductions.values().any(|v| {
                                v.to_f64_vec()
                                    .unwrap_or_default()
                                    .iter()
                                    .any(|x| !x.is_finite())
                            }),
                            amax: red("max", true),
                            l2: None,
                        },
                        first_offset,
                    ),
                    None => continue,
                };
                if sample.l2.is_none() {
                    sample.l2 = red("l2", false).or_else(|| red("l2", true));
                }
                if sample.amax.is_none() {
                    sample.amax = red("max", true);
                }
                samples.insert((step, worker.clone()), (sample, offset));
            }
        }
        if !samples.is_empty() {
            out.samples.insert(name.to_owned(), samples);
        }
    }
    Ok(out)
}

/// The first non-finite sample: smallest step, then worker, then save order in the step.
fn first_bad(scan: &Scan) -> Option<(i64, String, String)> {
    scan.samples
        .iter()
        .flat_map(|(t, m)| {
            m.iter()
                .filter(|(_, (s, _))| s.is_bad())
                .map(move |((step, w), (_, offset))| (*step, w.clone(), *offset, t.clone()))
        })
        .min()
        .map(|(step, w, _, t)| (step, w, t))
}

/// Per tensor: the first step where its magnitude exceeds `factor` × the smallest finite
/// magnitude before it, up to and including `until`; sorted by step, then by the value
/// reached, largest first.
fn growth(scan: &Scan, until: i64, factor: f64) -> Vec<Growth> {
    let mut out = Vec::new();
    for (t, m) in &scan.samples {
        let mut lowest: Option<f64> = None;
        for ((step, _), (s, _)) in m.iter().filter(|((step, _), _)| *step <= until) {
            let Some(v) = s.magnitude() else { continue };
            if let Some(lo) = lowest {
                if lo > 0.0 && v > factor * lo {
                    out.push(Growth {
                        tensor: t.clone(),
                        step: *step,
                        from: lo,
                        to: v,
                        factor: v / lo,
                    });
                    break;
                }
            }
            lowest = Some(lowest.map_or(v, |lo: f64| lo.min(v)));
        }
    }
    out.sort_by(|a, b| a.step.cmp(&b.step).then(b.to.total_cmp(&a.to)));
    out
}

/// Reads every tensor of `trial` once and finds the first non-finite value, with a timeline
/// around it and the tensors that grew first.
///
/// ```
/// use smdebug_diagnose::{health, HealthOptions};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().to_str().unwrap();
/// let mut hook = smdebug_hook::HookBuilder::new(path)
///     .save_all(true)
///     .build()?;
/// hook.step()?;
/// let x = ndarray::arr1(&[1.0f32, f32::NAN]).into_dyn();
/// hook.save("x", smdebug_hook::TensorValue::from(x))?;
/// hook.close()?;
///
/// let trial = smdebug_trial::create_trial(path)?;
/// let report = health(&trial, &HealthOptions::default())?;
/// let bad = report.first_non_finite.expect("a NaN was saved");
/// assert_eq!((bad.step, bad.tensor.as_str(), bad.summary.nan), (0, "x", 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn health(trial: &Trial, options: &HealthOptions) -> Result<HealthReport, DiagnoseError> {
    let scan = scan(trial)?;
    let Some((step, worker, tensor)) = first_bad(&scan) else {
        return Ok(HealthReport {
            trial: trial.path().to_owned(),
            first_non_finite: None,
            timeline: None,
            first_grew: None,
            tensors: scan.samples.len(),
            records_read: scan.records,
        });
    };
    let (mode, mode_step) = trial.mode_modestep(step)?.unwrap_or((Mode::Global, step));
    let culprit = scan.samples[&tensor][&(step, worker.clone())].0.clone();
    let also: Vec<String> = scan
        .samples
        .iter()
        .filter(|(t, m)| *t != &tensor && m.iter().any(|((s, _), (x, _))| *s == step && x.is_bad()))
        .map(|(t, _)| t.clone())
        .collect();
    // The timeline: saved steps around the bad one, for the culprit and the tensors that
    // grew first.
    let grew = growth(&scan, step, options.growth);
    let mut shown: Vec<&String> = vec![&tensor];
    for g in grew.iter().take(4) {
        if !shown.contains(&&g.tensor) {
            shown.push(&g.tensor);
        }
    }
    let all_steps: BTreeSet<i64> = scan
        .samples
        .values()
        .flat_map(|m| m.keys().map(|(s, _)| *s))
        .collect();
    let before: Vec<i64> = all_steps
        .range(..step)
        .rev()
        .take(options.context)
        .copied()
        .collect();
    let after: Vec<i64> = all_steps
        .range((Bound::Excluded(step), Bound::Unbounded))
        .take(options.context)
        .copied()
        .collect();
    let window: Vec<i64> = before
        .into_iter()
        .rev()
        .chain([step])
        .chain(after)
        .collect();
    let timeline = shown
        .iter()
        .map(|t| Timeline {
            tensor: (*t).clone(),
            worker: worker.clone(),
            steps: window
                .iter()
                .filter_map(|&s| {
                    let (x, _) = scan.samples[*t].get(&(s, worker.clone()))?;
                    Some(TimelineStep {
                        sample: x.clone(),
                        step: s,
                    })
                })
                .collect(),
        })
        .collect();
    Ok(HealthReport {
        trial: trial.path().to_owned(),
        first_non_finite: Some(NonFinite {
            step,
            mode,
            mode_step,
            worker,
            tensor,
            summary: culprit,
            also_non_finite_at_step: also,
        }),
        timeline: Some(timeline),
        first_grew: Some(grew),
        tensors: scan.samples.len(),
        records_read: scan.records,
    })
}
