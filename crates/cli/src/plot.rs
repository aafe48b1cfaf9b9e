//! `smdebug plot TRIAL --tensor REGEX [--stat l2] [--mode TRAIN] -o out.png|out.svg`: one
//! chart of the matching tensors' statistic over steps (smdebug-report's plotters chart).

use anyhow::{Context, Result};
use smdebug_report::plot::{plot, PlotOptions};
use smdebug_report::StepRange;
use smdebug_trial::{Mode, TrialOptions};
use std::io::Write;
use std::path::PathBuf;

/// Options of `smdebug plot`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    trial: String,
    /// Tensors whose name this regex matches (at most 10 are drawn).
    #[arg(long)]
    tensor: String,
    /// `value` (of a one-element tensor) or a reduction: min, max, mean, std, variance, sum,
    /// prod, l1, l2.
    #[arg(long, default_value = "value")]
    stat: String,
    /// TRAIN, EVAL, PREDICT or GLOBAL (every step, the default).
    #[arg(long, default_value = "GLOBAL")]
    mode: String,
    /// Only these steps: `A:B` (B excluded) or `N`.
    #[arg(long)]
    steps: Option<String>,
    /// The output file: `.png` or `.svg`.
    #[arg(short, long)]
    out: PathBuf,
    /// Width and height in pixels.
    #[arg(long, default_value = "900x500")]
    size: String,
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let mode: Mode =
        args.mode.to_ascii_uppercase().parse().map_err(|_| {
            anyhow::anyhow!("--mode {:?}: TRAIN, EVAL, PREDICT or GLOBAL", args.mode)
        })?;
    let (w, h) = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .with_context(|| format!("--size {:?}: WIDTHxHEIGHT", args.size))?;
    let options = PlotOptions {
        tensor: regex::Regex::new(&args.tensor).context("--tensor")?,
        stat: args.stat.clone(),
        mode,
        steps: match &args.steps {
            Some(s) => s.parse::<StepRange>().map_err(anyhow::Error::msg)?,
            None => StepRange::default(),
        },
        size: (w, h),
    };
    let lines = plot(&args.trial, &TrialOptions::default(), &options, &args.out)
        .with_context(|| format!("plotting {}", args.trial))?;
    let points: usize = lines.iter().map(|l| l.points.len()).sum();
    writeln!(
        out,
        "plot: {} ({} tensor(s), {points} points)",
        args.out.display(),
        lines.len()
    )?;
    Ok(())
}
