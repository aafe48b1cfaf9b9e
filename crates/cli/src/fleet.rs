//! What every command that reads a trial shares to read several: which trials the paths
//! name, the `-j/--jobs` and `--strict` flags, and the per-trial sections of the output.
//!
//! One path that is a trial (or holds exactly one) runs the command as it always ran, with
//! the same output. Several paths, or a prefix holding several trials, make a fleet: at
//! most `--jobs` trials are read at once, and the output names each trial (text: a
//! `== trial NAME ==` header before its section; `--json`: one object per line carrying
//! `"trial"`), in trial order. A trial that cannot be read is named and skipped, unless
//! `--strict`.
use anyhow::{bail, Result};
use smdebug_fleet::{discover, Runner, TrialOutcome, TrialRef};
use std::io::Write;

/// The fleet flags every trial-reading command takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FleetArgs {
    /// Fleets: trials read at once (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Fleets: a trial that cannot be read fails the command (default: it is named and
    /// skipped).
    #[arg(long)]
    pub strict: bool,
}

impl FleetArgs {
    /// The runner these flags describe.
    pub fn runner(&self) -> Runner {
        Runner::new(jobs(self.jobs)).strict(self.strict)
    }
}

/// `--jobs`, or the number of cores.
pub fn jobs(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    })
}

/// What a command runs on.
pub enum Target {
    /// One trial: the command's single-trial output.
    One(String),
    /// Several trials.
    Fleet(Vec<TrialRef>),
}

/// One path that is a trial (or holds exactly one, or none yet: a live job may not have
/// started) is one trial; otherwise the trials found at and below the paths.
pub fn target(paths: &[String]) -> Result<Target> {
    if let [path] = paths {
        return Ok(match discover(paths) {
            Ok(trials) if trials.len() > 1 => Target::Fleet(trials),
            Ok(mut trials) => match trials.pop() {
                Some(t) if t.name != path.trim().trim_end_matches('/') => Target::One(t.location),
                _ => Target::One(path.clone()),
            },
            // Opening the trial reports the problem as a single trial always did.
            Err(_) => Target::One(path.clone()),
        });
    }
    let mut trials = discover(paths)?;
    match trials.len() {
        0 => bail!("no trial found at or below {}", paths.join(", ")),
        1 => Ok(Target::One(trials.remove(0).location)),
        _ => Ok(Target::Fleet(trials)),
    }
}

/// `value` with `"trial": name` as one line of JSON (an object gets the key, replacing
/// any `trial` it had; anything else is wrapped as `{"trial", "result"}`).
pub fn json_line(name: &str, value: serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut line = serde_json::Map::new();
            line.insert("trial".into(), name.into());
            line.extend(map.into_iter().filter(|(k, _)| k != "trial"));
            serde_json::Value::Object(line).to_string()
        }
        other => serde_json::json!({"trial": name, "result": other}).to_string(),
    }
}

/// Runs `work(trial, section)` per trial on the runner of `fleet`; `work` writes the
/// trial's section (its text output, or its JSON lines made with [`json_line`]) and says
/// whether the trial found something. Writes the sections in trial order, each as soon as
/// it and those before it are done (all at the end under `--strict`), each text one after
/// a `== trial NAME ==` header; a trial that failed gets `skipped: ERROR` (text) or
/// `{"trial", "error"}` (JSON) and a warning on standard error; a text summary line ends
/// the output. Returns whether any trial found something; `Err` under `--strict` when a
/// trial failed.
pub fn sections<F>(
    trials: &[TrialRef],
    fleet: &FleetArgs,
    json: bool,
    out: &mut dyn Write,
    work: F,
) -> Result<bool>
where
    F: Fn(&TrialRef, &mut Vec<u8>) -> Result<bool> + Sync,
{
    let bar = crate::progress::bar(trials.len() as u64, "trials", !json);
    let work = |t: &TrialRef| {
        let mut section = Vec::new();
        let found = work(t, &mut section);
        bar.inc(1);
        found.map(|f| (f, section))
    };
    let mut found = false;
    let mut skipped = 0usize;
    let mut count = 0usize;
    let mut write = |o: TrialOutcome<(bool, Vec<u8>), anyhow::Error>| -> Result<()> {
        count += 1;
        let name = o.trial.name.as_str();
        bar.suspend(|| -> Result<()> {
            if !json {
                writeln!(out, "== trial {name} ==")?;
            }
            match &o.result {
                Ok((f, section)) => {
                    found |= f;
                    out.write_all(section)?;
                }
                Err(e) => {
                    skipped += 1;
                    eprintln!("warning: trial {name} skipped: {e:#}");
                    if json {
                        let line = serde_json::json!({"trial": name, "error": format!("{e:#}")});
                        writeln!(out, "{line}")?;
                    } else {
                        writeln!(out, "skipped: {e:#}")?;
                    }
                }
            }
            Ok(out.flush()?)
        })
    };
    if fleet.strict {
        // A strict run prints nothing when a trial fails: its sections wait for the end.
        for o in fleet.runner().run(trials, work)? {
            write(o)?;
        }
    } else {
        fleet.runner().run_each(trials, work, &mut write)?;
    }
    bar.finish_and_clear();
    if !json {
        writeln!(out, "== {count} trial(s), {skipped} skipped ==")?;
    }
    Ok(found)
}

/// A command's exit: status 1 when `Ok(true)` (something found), 0 when `Ok(false)`, 2 on
/// error (printed).
pub fn exit(result: Result<bool>) -> ! {
    let code = match result {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_the_trial() {
        let v = serde_json::json!({"trial": "/data/a", "findings": []});
        let line: serde_json::Value = serde_json::from_str(&json_line("a", v)).unwrap();
        assert_eq!(line, serde_json::json!({"trial": "a", "findings": []}));
        let line: serde_json::Value = serde_json::from_str(&json_line("b", 3.into())).unwrap();
        assert_eq!(line, serde_json::json!({"trial": "b", "result": 3}));
    }
}
