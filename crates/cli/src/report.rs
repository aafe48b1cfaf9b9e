//! `smdebug report TRIAL`: one self-contained HTML page of a trial (smdebug-report).
//!
//! ```text
//! smdebug report /tmp/trial -o report.html --rules default --steps 0:1000
//! smdebug report s3://bucket/run --rules VanishingGradient 'ExplodingTensor:only_nan=True'
//! smdebug report s3://bucket/jobs/ -o reports/ -j 4
//! ```
//!
//! Several trials, or a prefix holding several, write one page per trial into a folder
//! (`-o` without its `.html`: `report.html` gives `report/`), named after the trial (`/`
//! becomes `__`), and an `index.html` linking each page, with the trials that could not be
//! read and why (`--strict`: the command fails instead).

use crate::fleet::Target;
use crate::progress::{bar, ReportBar};
use anyhow::{Context, Result};
use smdebug_report::{all_rules, report, ReportOptions, RuleChoice, StepRange};
use smdebug_rules::RuleArg;
use smdebug_trial::TrialOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `smdebug report`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required = true, value_name = "TRIAL")]
    pub trials: Vec<String>,
    /// The HTML file to write (default: `report.html` in the current directory); for a
    /// fleet, the folder of pages (without `.html`).
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
    /// Fleets: trials read at once, and whether a broken trial fails the command.
    #[command(flatten)]
    pub fleet: crate::fleet::FleetArgs,
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
                let RuleArg { name, params } = other.parse()?;
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
    let trials = match crate::fleet::target(&args.trials)? {
        Target::One(path) => {
            let size = write_report(&path, &args.out, &options, &trial_options, true)?;
            writeln!(out, "report: {} ({size} bytes)", args.out.display())?;
            return Ok(());
        }
        Target::Fleet(trials) => trials,
    };
    let dir = fleet_dir(&args.out);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let bar = bar(trials.len() as u64, "trials", true);
    let pages = args.fleet.runner().run(&trials, |t| {
        let file = page_name(&t.name);
        let size = write_report(
            &t.location,
            &dir.join(&file),
            &options,
            &trial_options,
            false,
        );
        bar.inc(1);
        size.map(|size| (file, size))
    })?;
    bar.finish_and_clear();
    let mut rows = String::new();
    let mut skipped = 0usize;
    for p in &pages {
        let name = escape(&p.trial.name);
        match &p.result {
            Ok((file, size)) => rows.push_str(&format!(
                "<tr><td><a href=\"{}\">{name}</a></td><td>{size} bytes</td></tr>\n",
                escape(file)
            )),
            Err(e) => {
                skipped += 1;
                eprintln!("warning: trial {} skipped: {e:#}", p.trial.name);
                rows.push_str(&format!(
                    "<tr><td>{name}</td><td>skipped: {}</td></tr>\n",
                    escape(&format!("{e:#}"))
                ));
            }
        }
    }
    let index = dir.join("index.html");
    let html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>smdebug reports</title>\
         </head>\n<body><h1>{} trial(s), {skipped} skipped</h1>\n<table>\n\
         <tr><th>trial</th><th>report</th></tr>\n{rows}</table></body></html>\n",
        pages.len()
    );
    std::fs::write(&index, html).with_context(|| format!("writing {}", index.display()))?;
    writeln!(
        out,
        "reports: {} ({} trial(s), {skipped} skipped)",
        index.display(),
        pages.len()
    )?;
    Ok(())
}

/// The folder of a fleet's pages: `-o` without its `.html` extension.
fn fleet_dir(out: &Path) -> PathBuf {
    match out.extension() {
        Some(e) if e.eq_ignore_ascii_case("html") => out.with_extension(""),
        _ => out.to_owned(),
    }
}

/// The page of a trial in a fleet's folder: its name with `/` as `__`.
pub fn page_name(trial: &str) -> String {
    format!("{}.html", trial.replace('/', "__"))
}

/// Text as HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_pages_go_into_a_folder() {
        assert_eq!(
            fleet_dir(Path::new("out/report.html")),
            Path::new("out/report")
        );
        assert_eq!(fleet_dir(Path::new("reports")), Path::new("reports"));
        assert_eq!(page_name("job-1/debug-output"), "job-1__debug-output.html");
        assert_eq!(escape("<a&\"b>"), "&lt;a&amp;&quot;b&gt;");
    }
}
