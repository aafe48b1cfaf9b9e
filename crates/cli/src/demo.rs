//! `smdebug demo`: trains the candle demo network (`smdebug_candle::demo`) in one of its
//! scenarios with the hook writing a trial, while the built-in rules watch that trial live
//! on a background thread; prints each rule firing as it happens and a summary at the end.
//! TensorBoard summaries go to `<out>/tensorboard`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smdebug_candle::demo::{Demo, Scenario, EVAL_EVERY};

use smdebug_rules::{build_rule, invoke_rule_with, EndReason, Firing, Rule, StopTraining};

/// Options of `smdebug demo`.
#[derive(clap::Args)]
pub struct Args {
    /// The training setup: healthy, vanishing-gradient, exploding, dead-relu, stalled-loss,
    /// overfit, poor-initialization, saturated-activation or nan-at-step.
    #[arg(long, default_value = "healthy", value_parser = parse_scenario)]
    scenario: Scenario,
    /// Where to write the trial: a local directory or an `s3://` URL (default: a new
    /// folder under the system's temporary directory).
    #[arg(long)]
    out: Option<String>,
    /// Training steps (an evaluation step follows every 25).
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// Seed of the synthetic data and the initial weights.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Print each rule firing as one JSON object per line (rule, step, tensor, message) and
    /// nothing else on stdout.
    #[arg(long)]
    json: bool,
    /// Stop training when a rule fires (the rule creates the trial's stop signal, the
    /// training loop sees it through the hook).
    #[arg(long)]
    stop_on_fire: bool,
    /// Print every firing as it happens (default: each rule's first firing, then one
    /// summary line per rule).
    #[arg(long)]
    all_firings: bool,
    /// Do not write the trial's HTML report.
    #[arg(long)]
    no_report: bool,
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    Scenario::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        format!("unknown scenario {s:?}; one of: {}", names.join(", "))
    })
}

fn default_out(scenario: Scenario) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    std::env::temp_dir()
        .join("smdebug-demo")
        .join(format!("{}-{secs}-{}", scenario.name(), std::process::id()))
        .to_string_lossy()
        .into_owned()
}

/// What the demo saw, for the summary and for tests.
#[derive(Debug)]
pub struct Outcome {
    /// Where the trial is.
    pub out: String,
    /// Training steps run.
    pub train_steps: u64,
    /// The last training loss.
    pub final_loss: f32,
    /// Every firing, in the order seen.
    pub firings: Vec<Firing>,
}

/// Where the demo writes the report of the trial at `out`: beside a local trial
/// (`<out>.html`), under the temporary directory for an object-store trial.
pub fn report_path(out: &str) -> std::path::PathBuf {
    if out.contains("://") {
        let name = out
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("trial");
        std::env::temp_dir()
            .join("smdebug-demo")
            .join(format!("{name}.html"))
    } else {
        std::path::PathBuf::from(format!("{}.html", out.trim_end_matches('/')))
    }
}

/// Runs the command, writing progress to stderr and firings/summary to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let outcome = train(args, out)?;
    let page = (!args.no_report)
        .then(|| write_report(&outcome.out, !args.json))
        .transpose()?;
    if args.json {
        // Standard output holds only the firings.
        if let Some(page) = &page {
            eprintln!("report: {}", page.display());
        }
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "scenario {} ({}): {} training steps, final loss {:.4}",
        args.scenario,
        args.scenario.description(),
        outcome.train_steps,
        outcome.final_loss
    )?;
    writeln!(out, "trial: {}", outcome.out)?;
    writeln!(out, "tensorboard: {}/tensorboard", outcome.out)?;
    if let Some(page) = &page {
        writeln!(out, "report: {}", page.display())?;
    }
    let rules = crate::rules::tally(outcome.firings.iter().map(|f| (f.rule.as_str(), f.step)));
    if rules.is_empty() {
        writeln!(out, "no rule fired")?;
    } else {
        for t in &rules {
            writeln!(out, "{t}")?;
        }
    }
    if let Some(expected) = args.scenario.expected_rule() {
        let seen = rules.iter().any(|t| t.rule == expected);
        writeln!(
            out,
            "expected {expected}: {}",
            if seen { "detected" } else { "NOT detected" }
        )?;
    }
    Ok(())
}

/// Writes the report of the demo's trial beside it (the demo's rules marked on it).
fn write_report(trial: &str, progress: bool) -> Result<std::path::PathBuf> {
    let page = report_path(trial);
    if let Some(dir) = page.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let options = smdebug_report::ReportOptions {
        default_rules: true,
        ..Default::default()
    };
    crate::report::write_report(
        trial,
        &page,
        &options,
        &smdebug_trial::TrialOptions::default(),
        progress,
    )?;
    Ok(page)
}

/// Trains, with the rules watching; prints firings to `out` as they come.
pub fn train(args: &Args, out: &mut dyn Write) -> Result<Outcome> {
    let trial = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(args.scenario));
    let mut demo = Demo::new(args.scenario, args.seed).context("building the demo network")?;
    let hook = Demo::hook_builder(&trial)?
        .export_tensorboard(true)
        // On by default: a NaN keeps the steps that led to it (flight_recorder/ in the trial).
        // Not the ReLU outputs: a diverging run's last finite steps would add DeadRelu
        // findings on units the explosion killed, which ExplodingTensor already explains.
        .flight_recorder(smdebug_hook::FlightRecorder {
            collections: ["weights", "biases", "gradients", "losses", "relu_input"]
                .map(String::from)
                .to_vec(),
            ..Default::default()
        })
        .build()
        .with_context(|| format!("creating the hook at {trial}"))?;
    let mut hook = demo.register(hook)?;

    let (tx, rx) = mpsc::channel::<Firing>();
    let watcher = {
        let trial = trial.clone();
        let stop = args.stop_on_fire;
        thread::Builder::new()
            .name("smdebug-demo-rules".into())
            .spawn(move || watch(&trial, stop, &tx))
            .context("starting the rules thread")?
    };

    let bar = if args.json {
        ProgressBar::with_draw_target(Some(args.steps), ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(args.steps)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} steps  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );

    let mut firings = Vec::new();
    let mut report = |f: Firing, out: &mut dyn Write, bar: &ProgressBar| -> Result<()> {
        if args.json {
            writeln!(out, "{}", f.to_json())?;
            out.flush()?;
        } else if args.all_firings || !firings.iter().any(|s: &Firing| s.rule == f.rule) {
            let line = format!(
                "rule {} fired at step {}{}: {}",
                f.rule,
                f.step,
                f.tensor
                    .as_deref()
                    .map(|t| format!(" on {t}"))
                    .unwrap_or_default(),
                f.message
            );
            let line = if args.all_firings {
                line
            } else {
                format!("{line} (first firing; later ones are counted below)")
            };
            bar.suspend(|| writeln!(out, "{line}"))?;
        }
        firings.push(f);
        Ok(())
    };

    let started = Instant::now();
    let mut final_loss = f32::NAN;
    let mut train_steps = 0;
    for step in 0..args.steps {
        let r = demo.train_step(Some(&mut hook))?;
        final_loss = r.loss;
        train_steps += 1;
        if (step + 1) % EVAL_EVERY == 0 {
            let e = demo.eval_step(Some(&mut hook))?;
            bar.set_message(format!("loss {:.4}  val loss {:.4}", r.loss, e.loss));
        } else if step % 5 == 0 {
            bar.set_message(format!("loss {:.4}", r.loss));
        }
        bar.inc(1);
        while let Ok(f) = rx.try_recv() {
            report(f, out, &bar)?;
        }
        if hook.should_stop() {
            bar.suspend(|| writeln!(out, "a rule asked to stop: training ends at step {step}"))?;
            break;
        }
    }
    hook.close().context("closing the hook")?;
    bar.finish_and_clear();
    // The watcher ends once it has read the last step of the finished trial.
    for f in rx.iter() {
        report(f, out, &bar)?;
    }
    let watched = watcher
        .join()
        .map_err(|_| anyhow::anyhow!("the rules thread panicked"))?;
    watched.context("watching the trial with the rules")?;
    if !args.json {
        writeln!(
            out,
            "trained in {:.1} s",
            started.elapsed().max(Duration::ZERO).as_secs_f64()
        )?;
    }
    Ok(Outcome {
        out: trial,
        train_steps,
        final_loss,
        firings,
    })
}

/// The built-in rules the demo runs, with their parameters: one detector per scenario, all
/// on SageMaker's defaults except LossNotDecreasing, which looks at the TRAIN series only
/// (its default GLOBAL series would compare evaluation losses with training losses).
pub const RULES: &[(&str, &[(&str, &str)])] = &[
    ("VanishingGradient", &[]),
    ("ExplodingTensor", &[]),
    ("DeadRelu", &[]),
    ("LossNotDecreasing", &[("mode", "TRAIN")]),
    ("Overfit", &[]),
    ("PoorWeightInitialization", &[]),
    ("SaturatedActivation", &[]),
];

/// Runs [`RULES`] over the live trial at `path`, step by step on this thread, sending each
/// firing as it happens; returns once training has ended and the last step was evaluated.
fn watch(path: &str, stop_on_fire: bool, tx: &mpsc::Sender<Firing>) -> Result<()> {
    // Waits for the collections file, which the hook writes at the first step.
    let trial = Arc::new(
        smdebug_trial::create_trial(path).with_context(|| format!("opening the trial {path}"))?,
    );
    let mut rules: Vec<Box<dyn Rule>> = Vec::new();
    for (name, params) in RULES {
        let params: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut rule = build_rule(name, &params, Arc::clone(&trial))
            .with_context(|| format!("building rule {name}"))?;
        if stop_on_fire {
            rule.base_mut()
                .add_action(Box::new(StopTraining::with_default_key()?));
        }
        rules.push(rule);
    }
    let mut step = 0;
    loop {
        let mut ended = false;
        for rule in &mut rules {
            let eval = invoke_rule_with(rule.as_mut(), step, Some(step + 1), false, &mut |f| {
                // The receiver only goes away if training failed; nothing left to tell.
                let _ = tx.send(f.clone());
            })
            .with_context(|| format!("rule {} at step {step}", rule.base().name()))?;
            ended |= matches!(eval.end, EndReason::EndOfTraining(_));
        }
        if ended {
            return Ok(());
        }
        step += 1;
    }
}
