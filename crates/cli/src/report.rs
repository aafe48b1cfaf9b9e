//! `smdebug report TRIAL`: one self-contained HTML page of a trial (smdebug-report).
//!
//! ```text
//! smdebug report /tmp/trial -o report.html --rules default --steps 0:1000
//! smdebug report s3://bucket/run --rules VanishingGradient 'ExplodingTensor:only_nan=True'
//! ```

use crate::progress::{bar, ReportBar};
use crate::rules::parse_rule_arg;
use anyhow::{Context, Result};
use smdebug_report::{all_rules, report, ReportOptions, RuleChoice, StepRange};
use smdebug_trial::TrialOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `smdebug report`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    pub trial: String,
    /// The HTML file to write (default: `report.html` in the current directory).
    #[arg(short, long, default_value = "report.html")]
    pub out: PathBuf,
    /// Rules to run and mark on the charts: `default`, `all` (every rule without a required
    /// parameter), `none`, or rule names `Name[:key=value,…]`.
    #[arg(long, num_args = 1.., default_values_t = vec!["default".to_string()])]
    pub rules: Vec<String>,
    /// Only these global steps: `A:B` (B excluded; either end may be left out) or `N`.
    #[arg(long)]
    pub steps: Option<String>,
    /// Draw histograms of the tensors this regex matches (default: a few weights,
    /// gradients and activations).
    #[arg(long)]
    pub histograms: Option<String>,
    /// Give up waiting for the collections files after this many seconds (0: no limit).
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// The rules `--rules` names, and whether it names `default` (resolved by the report on
/// the open trial: see [`ReportOptions::default_rules`]).
pub fn rule_choices(names: &[String]) -> Result<(Vec<RuleChoice>, bool)> {
    let mut out = Vec::new();
    let mut default = false;
    for n in names {
        match n.as_str() {
            "default" => default = true,
            "all" => out.extend(all_rules()),
            "none" => {}
            other => {
                let (name, params) = parse_rule_arg(other)?;
                out.push(RuleChoice {
                    label: name.clone(),
                    name,
                    params,
                });
            }
        }
    }
    Ok((out, default))
}

/// Writes the report of `trial` to `out_file`, with a progress bar when `visible`; returns
/// the page's size.
pub fn write_report(
    trial: &str,
    out_file: &Path,
    options: &ReportOptions,
    trial_options: &TrialOptions,
    visible: bool,
) -> Result<u64> {
    let progress = ReportBar(bar(0, "", visible));
    let page = report(trial, trial_options, options, &progress)
        .with_context(|| format!("building the report of {trial}"))?;
    progress.0.finish_and_clear();
    std::fs::write(out_file, &page.html)
        .with_context(|| format!("writing {}", out_file.display()))?;
    Ok(page.html.len() as u64)
}

/// Runs the command; prints where the page is.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let trial_options = TrialOptions {
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    };
    let (rules, default_rules) = rule_choices(&args.rules)?;
    let options = ReportOptions {
        rules,
        default_rules,
        steps: match &args.steps {
            Some(s) => s.parse::<StepRange>().map_err(anyhow::Error::msg)?,
            None => StepRange::default(),
        },
        histogram_tensors: args
            .histograms
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .context("--histograms")?,
        ..ReportOptions::default()
    };
    let size = write_report(&args.trial, &args.out, &options, &trial_options, true)?;
    writeln!(out, "report: {} ({size} bytes)", args.out.display())?;
    Ok(())
}
