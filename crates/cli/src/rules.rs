//! `smdebug rules`: evaluates built-in rules over a finished or live trial.
//!
//! ```text
//! smdebug rules PATH --rule VanishingGradient --rule 'ExplodingTensor:collection_names=gradients,weights,only_nan=True'
//! smdebug rules PATH --config rules.json --json --stop-training
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
//! Exit status: 0 no rule fired, 1 a rule fired, 2 an error.
use anyhow::{bail, Context, Result};
use smdebug_rules::{
    build_rule, builtin_rules, invoke_rule_with, EndReason, Firing, Message, MessageFormat, Rule,
    RuleConfiguration, StopTraining,
};
use smdebug_trial::{PollPolicy, Trial, TrialOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Options of `smdebug rules`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    #[arg(required_unless_present = "list")]
    path: Option<String>,
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
}

/// Runs the command and exits with its status (0 none fired, 1 fired, 2 error).
pub fn main(args: &Args) -> ! {
    let code = match run(args, &mut std::io::stdout()) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}

/// Parses `Name[:key=value,…]`.
pub fn parse_rule_arg(arg: &str) -> Result<(String, BTreeMap<String, String>)> {
    let (name, rest) = match arg.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (arg.trim(), None),
    };
    if name.is_empty() {
        bail!("--rule {arg:?}: no rule name");
    }
    let mut params: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for item in rest.unwrap_or("").split(',') {
        match item.split_once('=') {
            Some((k, v)) => {
                let k = k.trim().to_owned();
                if k.is_empty() {
                    bail!("--rule {arg:?}: empty parameter name in {item:?}");
                }
                params.insert(k.clone(), v.trim().to_owned());
                last = Some(k);
            }
            None if item.trim().is_empty() => {}
            None => match &last {
                // A list value: `collection_names=a,b` continues with `b`.
                Some(k) => {
                    let v = params.entry(k.clone()).or_default();
                    v.push(',');
                    v.push_str(item.trim());
                }
                None => bail!("--rule {arg:?}: expected key=value, got {item:?}"),
            },
        }
    }
    Ok((name.to_owned(), params))
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
    let Some(path) = args.path.as_deref() else {
        bail!("a trial path is required");
    };
    let mut specs: Vec<(String, String, BTreeMap<String, String>)> = Vec::new();
    for r in &args.rules {
        let (name, params) = parse_rule_arg(r)?;
        specs.push((name.clone(), name, params));
    }
    if let Some(file) = &args.config {
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
    let options = TrialOptions {
        poll: PollPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(args.poll_ms.max(1)),
        },
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    };
    // Each rule gets its own reader: rules switch refreshing on and off around their
    // evaluation, which must not interfere between threads.
    let mut rules: Vec<(String, Box<dyn Rule>)> = Vec::new();
    for (label, name, params) in specs {
        let trial = Arc::new(
            Trial::open(path, options.clone()).with_context(|| format!("opening trial {path}"))?,
        );
        let mut rule = build_rule(&name, &params, trial)?;
        if args.stop_training {
            rule.base_mut()
                .add_action(Box::new(StopTraining::with_default_key()?));
        }
        rules.push((label, rule));
    }

    let format = if args.json {
        MessageFormat::Json
    } else {
        MessageFormat::Text
    };
    let out = Mutex::new(out);
    let rules_count = rules.len();
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
    let results: Vec<Result<Outcome>> = std::thread::scope(|scope| {
        let handles: Vec<_> = rules
            .into_iter()
            .map(|(label, mut rule)| {
                let print = &print;
                scope.spawn(move || -> Result<Outcome> {
                    let mut seen = 0usize;
                    let eval = invoke_rule_with(
                        rule.as_mut(),
                        args.start_step,
                        args.end_step,
                        false,
                        &mut |f| {
                            seen += 1;
                            print(f, seen == 1);
                        },
                    )
                    .with_context(|| format!("rule {label}"))?;
                    let steps = eval.firings.iter().map(|f| f.step);
                    let span = steps.clone().min().zip(steps.max());
                    Ok(Outcome {
                        label,
                        firings: eval.firings.len(),
                        span,
                        remarks: eval.remarks,
                        evaluated: eval.steps_evaluated,
                        skipped: eval.steps_skipped,
                        end: match eval.end {
                            EndReason::EndStep => format!("end step {}", eval.next_step),
                            EndReason::EndOfRule => "rule ended".into(),
                            EndReason::EndOfTraining(_) => "end of training".into(),
                        },
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a rule thread panicked")))
            })
            .collect()
    });
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
        let items: Vec<serde_json::Value> = summary
            .iter()
            .map(|o| {
                let remarks: Vec<_> = o.remarks.iter().map(|r| r.to_json()).collect();
                serde_json::json!({"rule": o.label, "firings": o.firings,
                    "steps_evaluated": o.evaluated, "steps_skipped": o.skipped, "end": o.end,
                    "remarks": remarks})
            })
            .collect();
        writeln!(out, "{}", serde_json::json!({ "summary": items }))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_arguments() {
        let (n, p) = parse_rule_arg("VanishingGradient").unwrap();
        assert_eq!(n, "VanishingGradient");
        assert!(p.is_empty());
        let (n, p) =
            parse_rule_arg("ExplodingTensor:collection_names=gradients,weights,only_nan=True")
                .unwrap();
        assert_eq!(n, "ExplodingTensor");
        assert_eq!(p["collection_names"], "gradients,weights");
        assert_eq!(p["only_nan"], "True");
        assert!(parse_rule_arg(":a=1").is_err());
        assert!(parse_rule_arg("X:oops").is_err());
        assert!(parse_rule_arg("X:=1").is_err());
    }

    fn args(path: &str, rules: &[&str], json: bool) -> Args {
        Args {
            path: Some(path.to_owned()),
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
