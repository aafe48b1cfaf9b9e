//! `smdebug health TRIAL`: the first step, mode, worker and tensor holding a non-finite
//! value, a per-tensor timeline around it, and the tensors whose magnitudes first grew.
//!
//! One pass over the trial: every tensor's records are read once, step by step. For each
//! (tensor, step, worker) the command takes the health summary when the writer stored one
//! (`smdebug/health/counts|range/<tensor>`, docs/src/format.md "Health summaries"), else the
//! raw value (summarized here by the same fused pass), else the saved reductions (`l2`,
//! `abs_max`/`max`: a NaN or infinite reduction says the tensor held a non-finite value).
use anyhow::{Context, Result};
use serde_json::{json, Value};
use smdebug_index::{health_tensor_name, reverse_health_tensor_name, HealthPart};
use smdebug_record::TensorValue;
use smdebug_reduce::{Flavor, Reduction, ReductionRequest};
use smdebug_trial::{Mode, Trial, TrialOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug health`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    path: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Saved steps shown on each side of the first bad step in the timeline.
    #[arg(long, default_value_t = 5)]
    context: usize,
    /// A tensor "grew" at the first step where its amax (else l2) exceeds this factor times
    /// the smallest value it had at earlier steps.
    #[arg(long, default_value_t = 10.0)]
    growth: f64,
    /// Give up waiting for the collections files after this many seconds (0: no limit).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// Where a sample's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Summary,
    Raw,
    Reductions,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Summary => "health summary",
            Source::Raw => "raw value",
            Source::Reductions => "reductions",
        }
    }
}

/// What one worker's records say about one tensor at one step.
#[derive(Debug, Clone)]
struct Sample {
    source: Source,
    elements: Option<u64>,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    /// A saved reduction was NaN or infinite (counts unknown).
    non_finite_reduction: bool,
    amax: Option<f64>,
    l2: Option<f64>,
    /// Offset of the sample's first record in its events file: the order the tensors were
    /// saved within the step.
    offset: u64,
}

impl Sample {
    fn bad(&self) -> bool {
        self.nan + self.pos_inf + self.neg_inf > 0 || self.non_finite_reduction
    }

    /// amax when known, else l2: the magnitude the growth search follows.
    fn magnitude(&self) -> Option<f64> {
        self.amax.or(self.l2).filter(|v| v.is_finite())
    }
}

/// Everything the pass found: samples by tensor, then (step, worker).
struct Scan {
    samples: BTreeMap<String, BTreeMap<(i64, String), Sample>>,
    records: u64,
}

/// The sample of one raw value: the health summary and the flattened l2, one fused pass.
fn from_raw(v: &TensorValue, offset: u64) -> Option<Sample> {
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
        offset,
    })
}

fn scan(trial: &Trial) -> Result<Scan> {
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
                            sample = Some(Sample {
                                source: Source::Summary,
                                elements: Some(c[0] as u64),
                                nan: c[1] as u64,
                                pos_inf: c[2] as u64,
                                neg_inf: c[3] as u64,
                                non_finite_reduction: false,
                                amax: r.get(2).copied().filter(|a| !a.is_nan()),
                                l2: None,
                                offset,
                            });
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
                        sample = from_raw(&v, locs.first().map_or(u64::MAX, |l| l.start));
                    }
                }
                let mut sample = match sample {
                    Some(s) => s,
                    None if !reductions.is_empty() => Sample {
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
                        offset: locs.first().map_or(u64::MAX, |l| l.start),
                    },
                    None => continue,
                };
                if sample.l2.is_none() {
                    sample.l2 = red("l2", false).or_else(|| red("l2", true));
                }
                if sample.amax.is_none() {
                    sample.amax = red("max", true);
                }
                samples.insert((step, worker.clone()), sample);
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
                .filter(|(_, s)| s.bad())
                .map(move |((step, w), s)| (*step, w.clone(), s.offset, t.clone()))
        })
        .min()
        .map(|(step, w, _, t)| (step, w, t))
}

/// Per tensor: the first step where its magnitude exceeds `factor` × the smallest finite
/// magnitude before it, up to and including `until`; with that smallest value and the one
/// reached.
fn growth(scan: &Scan, until: i64, factor: f64) -> Vec<(String, i64, f64, f64)> {
    let mut out = Vec::new();
    for (t, m) in &scan.samples {
        let mut lowest: Option<f64> = None;
        for ((step, _), s) in m.iter().filter(|((step, _), _)| *step <= until) {
            let Some(v) = s.magnitude() else { continue };
            if let Some(lo) = lowest {
                if lo > 0.0 && v > factor * lo {
                    out.push((t.clone(), *step, lo, v));
                    break;
                }
            }
            lowest = Some(lowest.map_or(v, |lo: f64| lo.min(v)));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1).then(b.3.total_cmp(&a.3)));
    out
}

fn num(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!(x),
        Some(x) => json!(x.to_string()),
        None => Value::Null,
    }
}

fn sample_json(s: &Sample) -> Value {
    json!({
        "source": s.source.name(),
        "elements": s.elements,
        "nan": s.nan,
        "pos_inf": s.pos_inf,
        "neg_inf": s.neg_inf,
        "non_finite_reduction": s.non_finite_reduction,
        "amax": num(s.amax),
        "l2": num(s.l2),
    })
}

/// The report as JSON (the text form prints the same facts).
fn report(trial: &Trial, scan: &Scan, args: &Args) -> Result<Value> {
    let Some((step, worker, tensor)) = first_bad(scan) else {
        return Ok(json!({
            "trial": trial.path(),
            "first_non_finite": null,
            "tensors": scan.samples.len(),
            "records_read": scan.records,
        }));
    };
    let (mode, mode_step) = trial
        .mode_modestep(step)?
        .map_or(("GLOBAL".to_owned(), step), |(m, s)| {
            (m.name().to_owned(), s)
        });
    let culprit = &scan.samples[&tensor][&(step, worker.clone())];
    let also: Vec<&String> = scan
        .samples
        .iter()
        .filter(|(t, m)| *t != &tensor && m.iter().any(|((s, _), x)| *s == step && x.bad()))
        .map(|(t, _)| t)
        .collect();
    // The timeline: saved steps around the bad one, for the culprit and the tensors that
    // grew first.
    let grew = growth(scan, step, args.growth);
    let mut shown: Vec<&String> = vec![&tensor];
    for g in grew.iter().take(4) {
        if !shown.contains(&&g.0) {
            shown.push(&g.0);
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
        .take(args.context)
        .copied()
        .collect();
    let after: Vec<i64> = all_steps
        .range(step + 1..)
        .take(args.context)
        .copied()
        .collect();
    let window: Vec<i64> = before
        .into_iter()
        .rev()
        .chain([step])
        .chain(after)
        .collect();
    let mut timeline = Vec::new();
    for t in &shown {
        let mut rows = Vec::new();
        for &s in &window {
            if let Some(x) = scan.samples[*t].get(&(s, worker.clone())) {
                let mut row = sample_json(x);
                row["step"] = json!(s);
                rows.push(row);
            }
        }
        timeline.push(json!({"tensor": t, "worker": worker, "steps": rows}));
    }
    Ok(json!({
        "trial": trial.path(),
        "first_non_finite": {
            "step": step,
            "mode": mode,
            "mode_step": mode_step,
            "worker": worker,
            "tensor": tensor,
            "summary": sample_json(culprit),
            "also_non_finite_at_step": also,
        },
        "timeline": timeline,
        "first_grew": grew.iter().map(|(t, s, lo, v)| json!({
            "tensor": t, "step": s, "from": lo, "to": v, "factor": v / lo,
        })).collect::<Vec<_>>(),
        "tensors": scan.samples.len(),
        "records_read": scan.records,
    }))
}

fn text(r: &Value, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "trial {}", r["trial"].as_str().unwrap_or(""))?;
    let f = &r["first_non_finite"];
    if f.is_null() {
        writeln!(
            out,
            "no non-finite value in {} tensors ({} records read)",
            r["tensors"], r["records_read"]
        )?;
        return Ok(());
    }
    let s = &f["summary"];
    let counts = if s["source"] == "reductions" {
        "a saved reduction is NaN or infinite".to_owned()
    } else {
        format!(
            "{} NaN, {} +Inf, {} -Inf of {} elements",
            s["nan"], s["pos_inf"], s["neg_inf"], s["elements"]
        )
    };
    writeln!(
        out,
        "first non-finite value: step {} ({} step {}), worker {}, tensor {}: {counts} (from the {})",
        f["step"],
        f["mode"].as_str().unwrap_or(""),
        f["mode_step"],
        f["worker"].as_str().unwrap_or(""),
        f["tensor"].as_str().unwrap_or(""),
        s["source"].as_str().unwrap_or(""),
    )?;
    let also = f["also_non_finite_at_step"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !also.is_empty() {
        let names: Vec<&str> = also.iter().filter_map(|v| v.as_str()).collect();
        writeln!(out, "also non-finite at that step: {}", names.join(", "))?;
    }
    let grew = r["first_grew"].as_array().cloned().unwrap_or_default();
    if grew.is_empty() {
        writeln!(out, "no tensor's magnitude grew before it")?;
    } else {
        writeln!(out, "values first grew (amax, else l2):")?;
        for g in grew.iter().take(10) {
            writeln!(
                out,
                "  step {:>8}  {:<40} {:.4e} -> {:.4e} (x{:.1})",
                g["step"],
                g["tensor"].as_str().unwrap_or(""),
                g["from"].as_f64().unwrap_or(f64::NAN),
                g["to"].as_f64().unwrap_or(f64::NAN),
                g["factor"].as_f64().unwrap_or(f64::NAN),
            )?;
        }
    }
    writeln!(out, "timeline:")?;
    for t in r["timeline"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "  {} ({})",
            t["tensor"].as_str().unwrap_or(""),
            t["worker"].as_str().unwrap_or("")
        )?;
        writeln!(
            out,
            "    {:>8} {:>12} {:>12} {:>8} {:>8} {:>8}",
            "step", "amax", "l2", "nan", "+inf", "-inf"
        )?;
        for row in t["steps"].as_array().into_iter().flatten() {
            let n = |k: &str| match &row[k] {
                Value::Number(x) => format!("{:.4e}", x.as_f64().unwrap_or(f64::NAN)),
                Value::String(s) => s.clone(),
                _ => "-".into(),
            };
            writeln!(
                out,
                "    {:>8} {:>12} {:>12} {:>8} {:>8} {:>8}",
                row["step"].to_string(),
                n("amax"),
                n("l2"),
                row["nan"].to_string(),
                row["pos_inf"].to_string(),
                row["neg_inf"].to_string()
            )?;
        }
    }
    let trial = r["trial"].as_str().unwrap_or("");
    writeln!(
        out,
        "look further: smdebug doctor {trial} (is the trial sound?); smdebug dump {trial} \
         (every value); the flight recorder's manifest, if any: {trial}/flight_recorder/"
    )?;
    Ok(())
}

/// Runs the command; `Ok(true)` when a non-finite value was found.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<bool> {
    let options = TrialOptions {
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    };
    let trial = Trial::open(&args.path, options)
        .with_context(|| format!("cannot open trial {}", args.path))?;
    let scan = scan(&trial)?;
    let r = report(&trial, &scan, args)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&r)?)?;
    } else {
        text(&r, out)?;
    }
    Ok(!r["first_non_finite"].is_null())
}

/// `smdebug health`'s entry: exit status 0 when every value is finite, 1 when a non-finite
/// value was found, 2 on error.
pub fn main(args: &Args) -> ! {
    let code = match run(args, &mut std::io::stdout().lock()) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}
