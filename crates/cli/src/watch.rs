//! `smdebug watch`: the rule service. Watches every trial under the prefixes while the
//! jobs write them, runs the rules live on each, takes their actions (`--stop-training`
//! writes the stop signal the hook obeys) and records each firing exactly once in a firing
//! log, resuming from its state file after a crash or restart (`smdebug_fleet::Watcher`).
//!
//! ```text
//! smdebug watch s3://bucket/jobs/ --rule VanishingGradient --rule ExplodingTensor \
//!     --stop-training --state watch.json -j 8
//! smdebug watch /data/jobs --config rules.json --state watch.json --until-idle
//! ```
//!
//! Standard output gets one line per trial found, per firing (`--json`: the firing log's
//! JSON line), per trial ended or failed, and a summary on exit. The firing log (`--log`,
//! default: the state file's name with `.firings.jsonl` added) is the record: every firing
//! exactly once, across restarts.
//!
//! SIGINT (Ctrl-C), SIGTERM and SIGHUP stop it cleanly: no trial starts after the signal,
//! the ones in progress finish, the state is saved and the summary printed. A second
//! signal ends it at once (the state file and the firing log are consistent at any
//! instant, as after a kill).
//!
//! `--webhook URL` posts each firing once, as `{"text": "smdebug: …"}` (what a Slack incoming
//! webhook takes), in log order, retried until delivered; with `--state`, a restart posts
//! the ones not delivered yet and none twice (the state counts the firings delivered).
//!
//! Exit status: 0 no firing recorded, 1 the log holds a firing, 2 an error.
use anyhow::{Context, Result};
use smdebug_fleet::{WatchEvent, WatchOptions, WatchRule, Watcher};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Options of `smdebug watch`.
#[derive(clap::Args)]
pub struct Args {
    /// Where the jobs write their trials: local folders or object-store prefixes.
    #[arg(required = true, value_name = "PREFIX")]
    prefixes: Vec<String>,
    /// A rule to run on every trial: `Name[:key=value,…]` (repeatable).
    #[arg(long = "rule", short = 'r', value_name = "NAME[:K=V,…]")]
    rules: Vec<String>,
    /// A SageMaker rule configuration file (`DebugRuleConfigurations` JSON).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Write the stop-training signal into a trial when a rule fires on it.
    #[arg(long)]
    stop_training: bool,
    /// The state file (local path), read at start and replaced after every pass; without
    /// it nothing survives a restart.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// The firing log (default: the state file with `.firings.jsonl` added).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// End once every trial found has ended (or is broken) and no new one appeared for
    /// `--idle` seconds.
    #[arg(long)]
    until_idle: bool,
    /// See `--until-idle`.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    idle: f64,
    /// Pause between two passes over the fleet, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    poll: f64,
    /// Trials evaluated at once (and kept open between passes).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 4)]
    jobs: usize,
    /// Failures in a row after which a trial is given up.
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_failures: u32,
    /// One JSON object per line instead of text.
    #[arg(long)]
    json: bool,
    /// Post each firing to this URL (a Slack incoming webhook, or anything taking
    /// `{"text": …}`), once, retried until delivered.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
}

/// Set by the first stop signal.
static STOP: AtomicBool = AtomicBool::new(false);

/// Runs the command and exits with its status.
pub fn main(args: &Args) -> ! {
    let handler = || {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!(
            "smdebug watch: stopping after the trials in progress (a second signal ends it now)"
        );
    };
    if let Err(e) = ctrlc::set_handler(handler) {
        eprintln!(
            "warning: no stop signal handler ({e}): a signal ends the watch without a summary"
        );
    }
    let code = match run(args, &mut std::io::stdout(), &STOP) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}

fn seconds(what: &str, s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("--{what} {s}"))
}

/// Runs `smdebug watch` until `stop` is set (or, with `--until-idle`, the fleet is done);
/// `Ok(true)` when the firing log holds a firing.
pub fn run(args: &Args, out: &mut (dyn Write + Send), stop: &AtomicBool) -> Result<bool> {
    let specs = crate::rules::rule_specs(&args.rules, args.config.as_deref())?;
    let rules = specs
        .into_iter()
        .map(|(label, name, params)| WatchRule {
            label,
            name,
            params,
            stop_training: args.stop_training,
        })
        .collect();
    let mut options = WatchOptions::new(args.prefixes.clone(), rules);
    options.log = args.log.clone().or_else(|| {
        args.state.as_ref().map(|s| {
            let mut name = s.as_os_str().to_owned();
            name.push(".firings.jsonl");
            PathBuf::from(name)
        })
    });
    options.state = args.state.clone();
    options.jobs = args.jobs.max(1);
    options.poll = seconds("poll", args.poll)?;
    options.idle = seconds("idle", args.idle)?;
    options.until_idle = args.until_idle;
    options.max_failures = args.max_failures.max(1);
    options.webhook = args
        .webhook
        .as_deref()
        .map(smdebug_fleet::WebhookOptions::new);
    let mut watcher = Watcher::new(options).context("starting the watcher")?;
    let out = Mutex::new(out);
    let json = args.json;
    let emit = |e: &WatchEvent<'_>| {
        let line = match (e, json) {
            (WatchEvent::Found(t), false) => format!("found {} ({})", t.name, t.location),
            (WatchEvent::Found(t), true) => {
                serde_json::json!({"event": "found", "trial": t.name, "location": t.location})
                    .to_string()
            }
            (WatchEvent::Fired(f), false) => format!("FIRED {}", f.describe()),
            (WatchEvent::Fired(f), true) => f.to_line(),
            (WatchEvent::Ended { trial, firings }, false) => {
                format!("ended {trial}: {firings} firing(s)")
            }
            (WatchEvent::Ended { trial, firings }, true) => {
                serde_json::json!({"event": "ended", "trial": trial, "firings": firings})
                    .to_string()
            }
            (
                WatchEvent::Failed {
                    trial,
                    error,
                    broken,
                },
                false,
            ) => format!(
                "failed {trial}: {error}{}",
                if *broken {
                    " (given up)"
                } else {
                    " (will try again)"
                }
            ),
            (
                WatchEvent::Failed {
                    trial,
                    error,
                    broken,
                },
                true,
            ) => serde_json::json!({
                "event": "failed", "trial": trial, "error": error, "broken": broken
            })
            .to_string(),
            (WatchEvent::WebhookFailed { error, pending }, false) => {
                format!("webhook: {error} ({pending} firing(s) waiting, tried again next pass)")
            }
            (WatchEvent::WebhookFailed { error, pending }, true) => serde_json::json!({
                "event": "webhook_failed", "error": error, "pending": pending
            })
            .to_string(),
            (WatchEvent::Delivered(f), true) => serde_json::json!({
                "event": "posted", "trial": f.trial, "rule": f.rule, "step": f.step
            })
            .to_string(),
            (_, _) => return,
        };
        let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    };
    let summary = watcher.run(&emit, stop)?;
    let out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({"summary": {
                "trials": summary.trials, "ended": summary.ended, "broken": summary.broken,
                "live": summary.live, "firings_new": summary.firings_new,
                "firings_total": summary.firings_total, "passes": summary.passes,
                "steps_evaluated": summary.steps_evaluated,
                "webhook_pending": summary.webhook_pending,
            }})
        )?;
    } else {
        writeln!(
            out,
            "summary: {} trial(s): {} ended, {} broken, {} live; {} firing(s) recorded now, {} in the log",
            summary.trials,
            summary.ended,
            summary.broken,
            summary.live,
            summary.firings_new,
            summary.firings_total
        )?;
        if summary.webhook_pending > 0 {
            writeln!(
                out,
                "webhook: {} firing(s) not posted yet (posted after a restart with the same --state)",
                summary.webhook_pending
            )?;
        }
    }
    Ok(summary.firings_total > 0)
}
