//! `smdebug rules`: evaluates built-in rules over a finished or live trial, or a fleet.
//!
//! ```text
//! smdebug rules PATH --rule VanishingGradient --rule 'ExplodingTensor:collection_names=gradients,weights,only_nan=True'
//! smdebug rules PATH --config rules.json --json --stop-training
//! smdebug rules s3://bucket/jobs/ /data/other-job --rule LossNotDecreasing -j 8
//! smdebug rules --list
//! ```
//!
//! Each `--rule` is `Name[:key=value,…]`; a comma-separated item without `=` continues the
//! previous value, so list parameters need no quoting (`collection_names=a,b`). `--config`
//! reads SageMaker `DebugRuleConfigurations` (one object or a list). Rules run
//! concurrently, one thread and one trial reader each, until `--end-step` or the end of
//! training; each firing is printed as it happens (`--json`: one object per line with
//! `rule`, `step`, `tensor`, `message`, `trial`), then a summary.
//!
//! Several paths, or a prefix holding several trials (found by `smdebug_fleet::discover`),
//! make a fleet: at most `--jobs` trials are evaluated at once, each as it would be alone,
//! and a verdict table (trial × rule: fired or not, first step, mode, message) follows; a
//! trial that cannot be read is named and skipped (`--strict`: the command fails).
//!
//! Exit status: 0 no rule fired, 1 a rule fired, 2 an error.
use crate::fleet::{target, Target};
use anyhow::{bail, Context, Result};
use smdebug_config::Mode;
use smdebug_fleet::{
    RuleOutcome, RuleRunError, RuleSpec, Runner, Schedule, TrialOutcome, TrialRef, TrialRules,
};
use smdebug_rules::{builtin_rules, Firing, Message, MessageFormat, RuleArg, RuleConfiguration};
use smdebug_trial::{PollPolicy, TrialOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Options of `smdebug rules`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required_unless_present = "list", value_name = "PATH")]
    paths: Vec<String>,
    /// A rule to evaluate: `Name[:key=value,…]` (repeatable).
    #[arg(long = "rule", short = 'r', value_name = "NAME[:K=V,…]")]
    rules: Vec<String>,
    /// A SageMaker rule configuration file (`DebugRuleConfigurations` JSON).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// List every built-in rule with its parameters and defaults, and exit.
    #[arg(long)]
    list: bool,
    /// One JSON object per line instead of text (every firing).
    #[arg(long)]
    json: bool,
    /// Print every firing as it happens (default: each rule's first firing, then one
    /// summary line per rule with its count and first and last step).
    #[arg(long)]
    all_firings: bool,
    /// Write the stop-training signal into the trial when a rule fires (the hook's
    /// `should_stop()` then turns true).
    #[arg(long)]
    stop_training: bool,
    /// First global step evaluated.
    #[arg(long, default_value_t = 0)]
    start_step: i64,
    /// Stop before this global step (default: at the end of training).
    #[arg(long)]
    end_step: Option<i64>,
    /// Longest pause between two polls of a live trial, in milliseconds.
    #[arg(long, default_value_t = 20)]
    poll_ms: u64,
    /// Give up waiting for the collections files after this many seconds (0: no limit).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    #[command(flatten)]
    steps: crate::steps::StepArgs,
    /// Fleets: trials evaluated at once (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Fleets: a trial that cannot be read fails the command (default: it is named and
    /// skipped).
    #[arg(long)]
    strict: bool,
}

/// Runs the command and exits with its status (0 none fired, 1 fired, 2 error).
pub fn main(args: &Args) -> ! {
    crate::fleet::exit(run(args, &mut std::io::stdout()))
}

/// A rule to build: its label (configuration name), rule name and parameters.
pub type RuleSpecArg = (String, String, BTreeMap<String, String>);

/// The rules of `--rule` arguments and a `--config` file, in that order.
pub fn rule_specs(rules: &[String], config: Option<&Path>) -> Result<Vec<RuleSpecArg>> {
    let mut specs: Vec<RuleSpecArg> = Vec::new();
    for r in rules {
        let RuleArg { name, params } = r.parse()?;
        specs.push((name.clone(), name, params));
    }
    if let Some(file) = config {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        for c in RuleConfiguration::parse(&text)
            .with_context(|| format!("rule configuration {}", file.display()))?
        {
            specs.push((c.configuration_name, c.rule, c.parameters));
        }
    }
    if specs.is_empty() {
        bail!("no rule given: use --rule NAME[:key=value,…] or --config FILE (see --list)");
    }
    Ok(specs)
}

fn list(args: &Args, out: &mut dyn Write) -> Result<()> {
    if args.json {
        let rules: Vec<serde_json::Value> = builtin_rules()
            .iter()
            .map(|r| {
                serde_json::json!({
                    "rule": r.name,
                    "doc": r.doc,
                    "parameters": r.params.iter().map(|p| serde_json::json!({
                        "name": p.name,
                        "type": p.kind.describe(),
                        "default": p.default,
                        "required": p.required,
                        "doc": p.doc,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&rules)?)?;
        return Ok(());
    }
    for r in builtin_rules() {
        writeln!(out, "{}: {}", r.name, r.doc)?;
        for p in r.params {
            let default = match (p.required, p.default) {
                (true, _) => "required".to_owned(),
                (false, Some(d)) => format!("default {d:?}"),
                (false, None) => "default None".to_owned(),
            };
            writeln!(
                out,
                "    {} ({}, {default}): {}",
                p.name,
                p.kind.describe(),
                p.doc
            )?;
        }
    }
    Ok(())
}

/// How often one rule fired, and where first and last.
#[cfg(feature = "demo")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally<'a> {
    /// The rule.
    pub rule: &'a str,
    /// Firings.
    pub times: usize,
    /// First and last global step it fired at.
    pub first: i64,
    /// Last step.
    pub last: i64,
}

#[cfg(feature = "demo")]
impl std::fmt::Display for Tally<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.times == 1 {
            write!(f, "{}: fired 1 time, at step {}", self.rule, self.first)
        } else {
            write!(
                f,
                "{}: fired {} times, first at step {}, last at step {}",
                self.rule, self.times, self.first, self.last
            )
        }
    }
}

/// Per rule, in the order rules first fired: times fired, first and last step.
#[cfg(feature = "demo")]
pub fn tally<'a>(firings: impl Iterator<Item = (&'a str, i64)>) -> Vec<Tally<'a>> {
    let mut out: Vec<Tally<'a>> = Vec::new();
    for (rule, step) in firings {
        match out.iter_mut().find(|t| t.rule == rule) {
            Some(t) => {
                t.times += 1;
                t.first = t.first.min(step);
                t.last = t.last.max(step);
            }
            None => out.push(Tally {
                rule,
                times: 1,
                first: step,
                last: step,
            }),
        }
    }
    out
}

struct Outcome {
    label: String,
    firings: usize,
    /// First and last step fired at.
    span: Option<(i64, i64)>,
    /// The first firing and the mode and mode step of its step (for the fleet table).
    first: Option<(Firing, Option<(Mode, i64)>)>,
    /// What the rule set aside instead of judging (NaN activations, …).
    remarks: Vec<smdebug_rules::Remark>,
    evaluated: u64,
    skipped: u64,
    end: String,
}

/// Runs `smdebug rules`; `Ok(true)` when some rule fired.
pub fn run(args: &Args, out: &mut (dyn Write + Send)) -> Result<bool> {
    if args.list {
        list(args, out)?;
        return Ok(false);
    }
    if args.paths.is_empty() {
        bail!("a trial path is required");
    }
    let specs = rule_specs(&args.rules, args.config.as_deref())?;
    let options = args.steps.apply(TrialOptions {
        poll: PollPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(args.poll_ms.max(1)),
        },
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    });
    match target(&args.paths)? {
        Target::One(path) => single(args, &path, &specs, &options, out),
        Target::Fleet(trials) => fleet(args, &trials, &specs, &options, out),
    }
}

/// Builds every rule over readers of the trial at `path` and runs them (see
/// [`Schedule`]) until `--end-step` or the end of training, calling
/// `print(firing, first_of_its_rule)` as firings happen. `Err` when the trial cannot be
/// opened or a rule cannot be built (nothing runs then); each rule's own result otherwise.
/// A rule that is wrong whatever the trial is a [`RuleRunError::BadRule`], which a fleet
/// turns into the command's error.
fn evaluate(
    args: &Args,
    path: &str,
    specs: &[RuleSpecArg],
    options: &TrialOptions,
    schedule: Schedule,
    print: &(dyn Fn(&Firing, bool) + Sync),
) -> Result<Vec<Result<Outcome>>> {
    let specs: Vec<RuleSpec> = specs
        .iter()
        .map(|(label, name, params)| RuleSpec {
            label: label.clone(),
            name: name.clone(),
            params: params.clone(),
            stop_training: args.stop_training,
        })
        .collect();
    let rules = TrialRules::open(
        path,
        &specs,
        options,
        args.start_step,
        args.end_step,
        schedule,
    )?
    .check()?;
    Ok(rules
        .run(print)
        .into_iter()
        .map(|r| r.map(Outcome::from).map_err(anyhow::Error::from))
        .collect())
}

impl From<RuleOutcome> for Outcome {
    fn from(o: RuleOutcome) -> Self {
        let span = o.span();
        let end = o.end();
        let eval = o.evaluation;
        Outcome {
            label: o.label,
            firings: eval.firings.len(),
            span,
            first: eval.firings.into_iter().next().map(|f| (f, o.first_mode)),
            remarks: eval.remarks,
            evaluated: eval.steps_evaluated,
            skipped: eval.steps_skipped,
            end,
        }
    }
}

/// One trial: firings as they happen, then a summary per rule.
fn single(
    args: &Args,
    path: &str,
    specs: &[RuleSpecArg],
    options: &TrialOptions,
    out: &mut (dyn Write + Send),
) -> Result<bool> {
    let format = if args.json {
        MessageFormat::Json
    } else {
        MessageFormat::Text
    };
    let out = Mutex::new(out);
    let rules_count = specs.len();
    // Rules report firings, not steps: a spinner with the number of firings so far.
    let bar = crate::progress::spinner(&format!("evaluating {rules_count} rule(s)"), !args.json);
    let fired_so_far = std::sync::atomic::AtomicUsize::new(0);
    let print = |f: &Firing, first: bool| {
        let n = fired_so_far.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        bar.set_message(format!("evaluating {rules_count} rule(s), {n} firing(s)"));
        if !(args.json || args.all_firings || first) {
            return;
        }
        let mut line = Message::line(format, f);
        if !args.json && !args.all_firings {
            line.push_str(" (first firing; later ones are counted in the summary)");
        }
        let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
        bar.suspend(|| {
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        });
    };
    let results = evaluate(args, path, specs, options, Schedule::Concurrent, &print)?;
    bar.finish_and_clear();
    let out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut fired = false;
    let mut summary = Vec::new();
    let mut first_error = None;
    for r in results {
        match r {
            Ok(o) => {
                fired |= o.firings > 0;
                summary.push(o);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({ "summary": summary_json(&summary) })
        )?;
    } else {
        writeln!(out, "summary:")?;
        for o in &summary {
            writeln!(
                out,
                "  {}: {} ({} steps evaluated, {} skipped; {})",
                o.label,
                if let Some((first, last)) = o.span.filter(|_| o.firings > 0) {
                    format!(
                        "fired {} time(s), first at step {first}, last at step {last}",
                        o.firings
                    )
                } else {
                    "did not fire".to_owned()
                },
                o.evaluated,
                o.skipped,
                o.end
            )?;
            // Without --all-firings: each tensor's first remark and how many followed.
            let mut shown: Vec<(Option<&str>, usize, i64)> = Vec::new();
            for r in &o.remarks {
                let tensor = r.tensor.as_deref();
                if !args.all_firings {
                    if let Some(e) = shown.iter_mut().find(|e| e.0 == tensor) {
                        e.1 += 1;
                        e.2 = e.2.max(r.step);
                        continue;
                    }
                    shown.push((tensor, 0, r.step));
                }
                writeln!(
                    out,
                    "    remark at step {} on {}: {}",
                    r.step,
                    tensor.unwrap_or("-"),
                    r.message
                )?;
            }
            for (tensor, more, last) in shown.iter().filter(|e| e.1 > 0) {
                writeln!(
                    out,
                    "    … and {more} more remark(s) on {} up to step {last} (--all-firings lists them)",
                    tensor.unwrap_or("-")
                )?;
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(fired)
}

/// The `summary` array of the JSON output: per rule, its counts, end and remarks.
fn summary_json(summary: &[Outcome]) -> Vec<serde_json::Value> {
    summary
        .iter()
        .map(|o| {
            let remarks: Vec<_> = o.remarks.iter().map(|r| r.to_json()).collect();
            serde_json::json!({"rule": o.label, "firings": o.firings,
                "steps_evaluated": o.evaluated, "steps_skipped": o.skipped, "end": o.end,
                "remarks": remarks})
        })
        .collect()
}

/// The error when it says a rule cannot be built whatever the trial: over a fleet it fails
/// the command rather than every trial.
fn bad_rule(e: &anyhow::Error) -> Option<&RuleRunError> {
    e.downcast_ref::<RuleRunError>().filter(|e| e.is_bad_rule())
}

/// What one trial of a fleet gave: per rule its outcome, and every firing in step order.
struct TrialVerdicts {
    rules: Vec<Outcome>,
    firings: Vec<Firing>,
}

/// Several trials, at most `--jobs` at once, each evaluated as it would be alone; then a
/// verdict table, or JSON lines carrying the trial, written in trial order as the trials
/// are done (at the end under `--strict`).
fn fleet(
    args: &Args,
    trials: &[TrialRef],
    specs: &[RuleSpecArg],
    options: &TrialOptions,
    out: &mut (dyn Write + Send),
) -> Result<bool> {
    let jobs = crate::fleet::jobs(args.jobs);
    let bar = crate::progress::bar(trials.len() as u64, "trials", !args.json);
    bar.set_message(format!("{} rule(s)", specs.len()));
    let runner = Runner::new(jobs).strict(args.strict);
    let work = |t: &TrialRef| -> Result<TrialVerdicts> {
        let firings = Mutex::new(Vec::new());
        let collect = |f: &Firing, _first: bool| {
            firings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(f.clone());
        };
        let results = evaluate(
            args,
            &t.location,
            specs,
            options,
            Schedule::OneByOne,
            &collect,
        );
        bar.inc(1);
        let rules = results?.into_iter().collect::<Result<Vec<_>>>()?;
        let mut firings = firings.into_inner().unwrap_or_else(|p| p.into_inner());
        firings.sort_by(|a, b| (a.step, &a.rule).cmp(&(b.step, &b.rule)));
        Ok(TrialVerdicts { rules, firings })
    };
    let mut fired = false;
    let mut trials_done = 0usize;
    let mut with_firing = 0usize;
    let mut broken: Vec<(String, String)> = Vec::new();
    let mut rows: Vec<[String; 6]> = Vec::new();
    let mut take = |o: TrialOutcome<TrialVerdicts, anyhow::Error>| -> Result<()> {
        trials_done += 1;
        let name = o.trial.name.as_str();
        let v = match &o.result {
            Ok(v) => v,
            Err(e) => {
                if let Some(bad) = bad_rule(e) {
                    bail!("{bad}");
                }
                eprintln!("warning: trial {name} skipped: {e:#}");
                if args.json {
                    writeln!(
                        out,
                        "{}",
                        serde_json::json!({"trial": name, "error": format!("{e:#}")})
                    )?;
                }
                broken.push((name.to_owned(), format!("{e:#}")));
                return Ok(());
            }
        };
        let any = v.rules.iter().any(|r| r.firings > 0);
        fired |= any;
        with_firing += usize::from(any);
        if args.json {
            for f in &v.firings {
                let mut line = f.to_json();
                line["trial"] = name.into();
                writeln!(out, "{line}")?;
            }
            writeln!(
                out,
                "{}",
                serde_json::json!({"trial": name, "summary": summary_json(&v.rules)})
            )?;
            out.flush()?;
            return Ok(());
        }
        for r in &v.rules {
            let (step, mode, message) = match &r.first {
                Some((f, m)) => (
                    f.step.to_string(),
                    m.map_or("-".to_owned(), |(mode, s)| format!("{} {s}", mode.name())),
                    f.message.clone(),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            let verdict = match r.firings {
                0 => "did not fire".to_owned(),
                n => format!("fired {n} time(s)"),
            };
            rows.push([
                name.to_owned(),
                r.label.clone(),
                verdict,
                step,
                mode,
                message,
            ]);
        }
        Ok(())
    };
    if args.json && !args.strict {
        // JSON lines follow the trials (in trial order); a rule that cannot be built ends
        // the command at the first trial that reports it.
        runner.run_each(trials, work, &mut take)?;
    } else {
        // The table needs every row, and a strict run prints nothing when a trial fails.
        let outcomes = runner.run(trials, work)?;
        if let Some(e) = outcomes
            .iter()
            .find_map(|o| o.result.as_ref().err().and_then(bad_rule))
        {
            bail!("{e}");
        }
        for o in outcomes {
            take(o)?;
        }
    }
    bar.finish_and_clear();
    if !args.json {
        write_table(out, &rows)?;
        writeln!(
            out,
            "{trials_done} trial(s): {with_firing} with a firing, {} skipped",
            broken.len()
        )?;
        for (name, e) in &broken {
            writeln!(out, "  skipped {name}: {e}")?;
        }
    }
    Ok(fired)
}

/// The verdict table: a header and one row per trial and rule, columns padded (the
/// message last, unpadded).
fn write_table(out: &mut dyn Write, rows: &[[String; 6]]) -> Result<()> {
    let header = ["trial", "rule", "verdict", "first step", "mode", "message"].map(String::from);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (w, cell) in widths.iter().zip(row) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        line.push_str(&row[5]);
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(path: &str, rules: &[&str], json: bool) -> Args {
        Args {
            paths: vec![path.to_owned()],
            rules: rules.iter().map(|s| s.to_string()).collect(),
            config: None,
            list: false,
            json,
            all_firings: false,
            stop_training: true,
            start_step: 0,
            end_step: None,
            poll_ms: 5,
            timeout: 10,
            steps: Default::default(),
            jobs: None,
            strict: false,
        }
    }

    /// A trial the hook writes into `dir/trial`, saving every step: at each of `steps` steps,
    /// the tensor `tensor(step)` gives.
    fn hook_trial(
        dir: &std::path::Path,
        include: impl FnOnce(smdebug_hook::HookBuilder) -> smdebug_hook::HookBuilder,
        steps: i64,
        tensor: impl Fn(i64) -> (&'static str, smdebug_record::TensorValue),
    ) -> String {
        use smdebug_hook::{HookBuilder, SaveConfig, SaveConfigMode};
        let out = dir.join("trial").to_str().unwrap().to_owned();
        let mut hook = include(HookBuilder::new(&out))
            .save_config(SaveConfig::new(SaveConfigMode::every(1)))
            .build()
            .unwrap();
        for step in 0..steps {
            hook.step().unwrap();
            let (name, value) = tensor(step);
            hook.save(name, value).unwrap();
        }
        hook.close().unwrap();
        out
    }

    #[test]
    fn runs_rules_over_a_hook_trial() {
        let dir = tempfile::tempdir().unwrap();
        let out_s = &hook_trial(
            dir.path(),
            |b| b.include_collections(["gradients"]),
            3,
            |step| {
                let m = if step == 2 { 1e-9f32 } else { 1e-2 };
                let g = ndarray::arr1(&[m, -m]).into_dyn();
                ("gradient/w", smdebug_record::TensorValue::from(g))
            },
        );
        let out = std::path::Path::new(out_s);

        let mut buf: Vec<u8> = Vec::new();
        let fired = run(
            &args(out_s, &["VanishingGradient", "ExplodingTensor"], true),
            &mut buf,
        )
        .unwrap();
        assert!(fired);
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["rule"], "VanishingGradient");
        assert_eq!(lines[0]["step"], 2);
        assert_eq!(lines[0]["tensor"], "gradient/w");
        assert!(lines[0]["message"].as_str().unwrap().contains("threshold"));
        assert_eq!(lines[1]["summary"].as_array().unwrap().len(), 2);
        assert!(out.join(smdebug_index::DEFAULT_STOP_SIGNAL_FILE).exists());

        let mut buf: Vec<u8> = Vec::new();
        let fired = run(&args(out_s, &["ExplodingTensor"], false), &mut buf).unwrap();
        assert!(!fired);
        assert!(String::from_utf8(buf).unwrap().contains("did not fire"));

        let mut buf: Vec<u8> = Vec::new();
        let e = run(
            &args(out_s, &["VanishingGradient:treshold=1"], false),
            &mut buf,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("treshold"));
    }

    #[test]
    fn prints_what_a_rule_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let out_s = &hook_trial(
            dir.path(),
            |b| b.include_regex(["relu_output"]),
            1,
            |_| {
                let nan = ndarray::Array2::from_elem((4, 2), f32::NAN).into_dyn();
                (
                    "dense0_relu_output_0",
                    smdebug_record::TensorValue::from(nan),
                )
            },
        );

        let mut buf: Vec<u8> = Vec::new();
        assert!(!run(&args(out_s, &["DeadRelu"], false), &mut buf).unwrap());
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("DeadRelu: did not fire"), "{text}");
        assert!(
            text.contains("remark at step 0 on dense0_relu_output_0: 8 of 8 values are NaN"),
            "{text}"
        );
        let mut buf: Vec<u8> = Vec::new();
        run(&args(out_s, &["DeadRelu"], true), &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let remarks = &summary["summary"][0]["remarks"];
        assert_eq!(remarks.as_array().map(Vec::len), Some(1), "{text}");
        assert_eq!(remarks[0]["tensor"], "dense0_relu_output_0");
    }
}
