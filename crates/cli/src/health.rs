//! `smdebug health TRIAL`: the first step, mode, worker and tensor holding a non-finite
//! value, a per-tensor timeline around it, and the tensors whose magnitudes first grew
//! (`smdebug_diagnose::health`, which says where the numbers come from). Several trials, or
//! a prefix holding several, give one section per trial (`--json`: one object per line
//! carrying `"trial"`; `crate::fleet`).
//!
//! Exit status: 0 every value finite (in every trial read), 1 a non-finite value found in
//! some trial, 2 an error (with `--strict`, a trial that cannot be read).
use crate::fleet::Target;
use anyhow::{Context, Result};
use smdebug_diagnose::{HealthOptions, HealthReport, Sample, Source};
use smdebug_trial::{Trial, TrialOptions};
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug health`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
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
    #[command(flatten)]
    fleet: crate::fleet::FleetArgs,
}

/// A number of the timeline: `-` when unknown, its name when not finite.
fn cell(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.4e}"),
        Some(x) => x.to_string(),
        None => "-".into(),
    }
}

fn counts(s: &Sample) -> String {
    if s.source == Source::Reductions {
        return "a saved reduction is NaN or infinite".to_owned();
    }
    let elements = s.elements.map_or("null".to_owned(), |n| n.to_string());
    format!(
        "{} NaN, {} +Inf, {} -Inf of {elements} elements",
        s.nan, s.pos_inf, s.neg_inf
    )
}

fn text(r: &HealthReport, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "trial {}", r.trial)?;
    let Some(f) = &r.first_non_finite else {
        writeln!(
            out,
            "no non-finite value in {} tensors ({} records read)",
            r.tensors, r.records_read
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "first non-finite value: step {} ({} step {}), worker {}, tensor {}: {} (from the {})",
        f.step,
        f.mode.name(),
        f.mode_step,
        f.worker,
        f.tensor,
        counts(&f.summary),
        f.summary.source.name(),
    )?;
    if !f.also_non_finite_at_step.is_empty() {
        writeln!(
            out,
            "also non-finite at that step: {}",
            f.also_non_finite_at_step.join(", ")
        )?;
    }
    let grew = r.first_grew.as_deref().unwrap_or_default();
    if grew.is_empty() {
        writeln!(out, "no tensor's magnitude grew before it")?;
    } else {
        writeln!(out, "values first grew (amax, else l2):")?;
        // A factor that overflowed prints as NaN, as JSON (which has no infinity) carries it.
        let finite = |x: f64| if x.is_finite() { x } else { f64::NAN };
        for g in grew.iter().take(10) {
            writeln!(
                out,
                "  step {}  {:<40} {:.4e} -> {:.4e} (x{:.1})",
                g.step,
                g.tensor,
                finite(g.from),
                finite(g.to),
                finite(g.factor),
            )?;
        }
    }
    writeln!(out, "timeline:")?;
    for t in r.timeline.as_deref().unwrap_or_default() {
        writeln!(out, "  {} ({})", t.tensor, t.worker)?;
        writeln!(
            out,
            "    {:>8} {:>12} {:>12} {:>8} {:>8} {:>8}",
            "step", "amax", "l2", "nan", "+inf", "-inf"
        )?;
        for row in &t.steps {
            let s = &row.sample;
            writeln!(
                out,
                "    {:>8} {:>12} {:>12} {:>8} {:>8} {:>8}",
                row.step,
                cell(s.amax),
                cell(s.l2),
                s.nan,
                s.pos_inf,
                s.neg_inf
            )?;
        }
    }
    let trial = &r.trial;
    writeln!(
        out,
        "look further: smdebug doctor {trial} (is the trial sound?); smdebug dump {trial} \
         (every value); the flight recorder's manifest, if any: {trial}/flight_recorder/"
    )?;
    Ok(())
}

/// Runs the command; `Ok(true)` when a non-finite value was found (in some trial).
pub fn run(args: &Args, out: &mut dyn Write) -> Result<bool> {
    match crate::fleet::target(&args.paths)? {
        Target::One(path) => {
            let r = report(args, &path)?;
            write(args, &r, out)?;
            Ok(r.first_non_finite.is_some())
        }
        Target::Fleet(trials) => {
            crate::fleet::sections(&trials, &args.fleet, args.json, out, |t, section| {
                let r = report(args, &t.location)?;
                if args.json {
                    let line = crate::fleet::json_line(&t.name, serde_json::to_value(&r)?);
                    writeln!(section, "{line}")?;
                } else {
                    text(&r, section)?;
                }
                Ok(r.first_non_finite.is_some())
            })
        }
    }
}

/// The health report of the trial at `path`.
fn report(args: &Args, path: &str) -> Result<HealthReport> {
    let options = TrialOptions {
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    };
    let trial = Trial::open(path, options).with_context(|| format!("cannot open trial {path}"))?;
    let health = HealthOptions {
        context: args.context,
        growth: args.growth,
    };
    Ok(smdebug_diagnose::health(&trial, &health)?)
}

/// One trial's report as a single trial prints it.
fn write(args: &Args, r: &HealthReport, out: &mut dyn Write) -> Result<()> {
    if args.json {
        // Through a `Value`, whose map orders the keys.
        let v = serde_json::to_value(r)?;
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        text(r, out)?;
    }
    Ok(())
}

/// `smdebug health`'s entry: exit status 0 when every value is finite, 1 when a non-finite
/// value was found, 2 on error.
pub fn main(args: &Args) -> ! {
    crate::fleet::exit(run(args, &mut std::io::stdout().lock()))
}
