//! `smdebug dump`: the `smdebug-trial-dump/v1` JSON document of a trial (what
//! `tests/peer/dump.py` prints for the Python smdebug), for comparison with
//! `tests/peer/compare_dumps.py`.
//!
//! Several trials, or a prefix holding several, print one line per trial,
//! `{"trial": NAME, "dump": DOCUMENT}` with the document compact, in trial order
//! (`crate::fleet`); a trial that cannot be dumped gives `{"trial", "error"}`.
use crate::fleet::Target;
use anyhow::{Context, Result};
use smdebug_dump::{write_dump, DumpOptions};
use smdebug_trial::TrialOptions;
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug dump`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// Values with at most this many elements are written out in full.
    #[arg(long, default_value_t = 64)]
    max_inline: usize,
    /// Leave out the 18 `reduction_value`s of every step.
    #[arg(long)]
    no_computed_reductions: bool,
    /// Leave out `value_via_global_step`.
    #[arg(long)]
    no_global_lookup: bool,
    /// One line instead of indented JSON.
    #[arg(long)]
    compact: bool,
    /// Give up waiting for the collections files after this many seconds (0: wait until the
    /// job ends, as smdebug does).
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    #[command(flatten)]
    steps: crate::steps::StepArgs,
    #[command(flatten)]
    fleet: crate::fleet::FleetArgs,
}

/// Runs the command, writing the document (of each trial) to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    match crate::fleet::target(&args.paths)? {
        Target::One(path) => one(args, &path, args.compact, out),
        Target::Fleet(trials) => {
            crate::fleet::sections(&trials, &args.fleet, true, out, |t, section| {
                let name = serde_json::Value::from(t.name.as_str());
                write!(section, "{{\"trial\":{name},\"dump\":")?;
                one(args, &t.location, true, section)?;
                // The compact document ends with a newline: the line closes after it.
                while section.last() == Some(&b'\n') {
                    section.pop();
                }
                writeln!(section, "}}")?;
                Ok(false)
            })?;
            Ok(())
        }
    }
}

/// Writes the document of the trial at `path`.
fn one(args: &Args, path: &str, compact: bool, out: &mut dyn Write) -> Result<()> {
    let options = DumpOptions {
        max_inline: args.max_inline,
        computed_reductions: !args.no_computed_reductions,
        global_lookup: !args.no_global_lookup,
    };
    let trial_options = args.steps.apply(TrialOptions {
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    });
    // Written as it goes: the document of a large trial is several times the size of
    // its text.
    let mut out = std::io::BufWriter::new(out);
    // The dump has no step count to show; a spinner says it is alive.
    let spinner = crate::progress::spinner(&format!("dumping {path}"), true);
    let written = write_dump(&mut out, path, &options, trial_options, compact)
        .and_then(|()| out.flush())
        .context("writing the dump");
    spinner.finish_and_clear();
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_trial_is_recorded_as_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nothing");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("training_job_end.ts"), b"").unwrap();
        let args = Args {
            paths: vec![path.to_str().unwrap().into()],
            max_inline: 64,
            no_computed_reductions: true,
            no_global_lookup: true,
            compact: true,
            timeout: 1,
            steps: Default::default(),
            fleet: Default::default(),
        };
        let mut out = Vec::new();
        run(&args, &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc["schema"], "smdebug-trial-dump/v1");
        assert_eq!(doc["trial"]["error"]["type"], "MissingCollectionFiles");
        assert_eq!(doc["options"]["computed_reductions"], false);
    }
}
