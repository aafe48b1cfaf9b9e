//! `smdebug serve`: a live, read-only web view of trials and fleets (`smdebug_serve`).
//!
//! ```text
//! smdebug serve /data/jobs                      # http://127.0.0.1:6007/
//! smdebug serve s3://bucket/jobs/ --port 8080 --rule VanishingGradient
//! smdebug serve /data/jobs --host 0.0.0.0       # prints the URL with a generated token
//! ```
//!
//! The first line of standard output is the URL to open (with `?token=…` when a token is
//! required). SIGINT, SIGTERM and SIGHUP stop the server.
use anyhow::{Context, Result};
use smdebug_fleet::RuleSpec;
use smdebug_serve::{ServeOptions, Server};
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Trials, folders of trials, or `s3://`, `gs://`, `az://` prefixes.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// The address to bind. Anything but a loopback address requires a token.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port (0 picks a free one).
    #[arg(long, default_value_t = smdebug_serve::DEFAULT_PORT)]
    port: u16,
    /// The token every request must carry (`?token=`, `X-Smdebug-Token` or
    /// `Authorization: Bearer`); generated when binding off loopback without one.
    #[arg(long, env = "SMDEBUG_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A rule whose verdicts the runs page shows: `Name[:key=value,…]` (repeatable;
    /// default: the report's default rules).
    #[arg(long = "rule", short = 'r', value_name = "NAME[:K=V,…]")]
    rules: Vec<String>,
    /// Show no rule verdicts (no rule service).
    #[arg(long, conflicts_with = "rules")]
    no_rules: bool,
    /// Post each rule firing to this URL (a Slack incoming webhook), as `smdebug watch
    /// --webhook` does.
    #[arg(long, value_name = "URL", conflicts_with = "no_rules")]
    webhook: Option<String>,
    /// Pause between two refreshes of a run a page shows, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 0.25)]
    poll: f64,
}

/// Starts the server, prints its URL and serves until a stop signal.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let mut options = ServeOptions::new(args.paths.clone());
    options.host = args.host.clone();
    options.port = args.port;
    options.token = args.token.clone();
    options.webhook = args.webhook.clone();
    options.poll =
        Duration::try_from_secs_f64(args.poll).with_context(|| format!("--poll {}", args.poll))?;
    if args.no_rules {
        options.rules.clear();
    } else if !args.rules.is_empty() {
        options.rules = crate::rules::rule_specs(&args.rules, None)?
            .into_iter()
            .map(|(label, name, params)| RuleSpec {
                label,
                name,
                params,
                stop_training: false,
            })
            .collect();
    }
    let server = Server::start(options).context("starting the server")?;
    writeln!(out, "{}", server.url())?;
    writeln!(
        out,
        "serving {} run(s) under {} (Ctrl-C stops)",
        server.runs(),
        args.paths.join(", ")
    )?;
    out.flush()?;
    let stopper = server.stopper();
    if let Err(e) = ctrlc::set_handler(move || stopper.stop()) {
        eprintln!("warning: no stop signal handler ({e}): a signal ends the server at once");
    }
    server.wait();
    server.stop();
    Ok(())
}
