//! `smdebug doctor TRIAL`: diagnoses the problems smdebug users hit and cannot read from
//! its exceptions (`smdebug_diagnose::doctor`). Each finding has a plain-language
//! explanation and the command to look further; the report also says whether the trial's
//! payloads can be verified. Several trials, or a prefix holding several, give one section
//! per trial (`--json`: one object per line carrying `"trial"`; `crate::fleet`).
//!
//! Exit status: 0 nothing found, 1 a problem found (in some trial), 2 the doctor itself
//! failed (with `--strict`, on some trial).
use crate::fleet::Target;
use anyhow::Result;
use serde_json::{json, Value};
use smdebug_diagnose::DoctorReport;
use std::io::Write;

/// Options of `smdebug doctor`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    fleet: crate::fleet::FleetArgs,
}

/// The `--json` document: the report without the findings' evidence.
fn to_json(d: &DoctorReport) -> Value {
    json!({
        "trial": d.trial,
        "findings": d.findings.iter().map(|f| json!({
            "kind": f.kind.name(), "what": f.what, "why": f.why, "next": f.next,
        })).collect::<Vec<_>>(),
        "payloads_verifiable": d.payloads_verifiable,
    })
}

/// Runs the command; `Ok(true)` when something was found (in some trial).
pub fn run(args: &Args, out: &mut dyn Write) -> Result<bool> {
    match crate::fleet::target(&args.paths)? {
        Target::One(path) => one(args, &path, out),
        Target::Fleet(trials) => {
            crate::fleet::sections(&trials, &args.fleet, args.json, out, |t, section| {
                if args.json {
                    let d = smdebug_diagnose::doctor(&t.location)?;
                    writeln!(section, "{}", crate::fleet::json_line(&t.name, to_json(&d)))?;
                    Ok(!d.findings.is_empty())
                } else {
                    one(args, &t.location, section)
                }
            })
        }
    }
}

/// The doctor's report of the trial at `path`, as a single trial prints it.
fn one(args: &Args, path: &str, out: &mut dyn Write) -> Result<bool> {
    let d = smdebug_diagnose::doctor(path)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&to_json(&d))?)?;
    } else {
        writeln!(out, "trial {path}")?;
        for f in &d.findings {
            writeln!(out, "\n[{}] {}", f.kind.name(), f.what)?;
            writeln!(out, "  why: {}", f.why)?;
            writeln!(out, "  look further: {}", f.next)?;
        }
        if d.findings.is_empty() {
            writeln!(out, "no problem found")?;
        }
        let p = d.payloads_verifiable;
        let v = if p.entries == 0 {
            "no records".to_owned()
        } else if p.with_crc == p.entries {
            format!(
                "payloads verifiable: all {} index entries carry a payload CRC",
                p.entries
            )
        } else {
            format!(
                "payloads NOT verifiable: {} of {} index entries carry a payload CRC \
                 (trials the original smdebug wrote have none; a flipped byte would read back as \
                 a wrong value without an error). Run: smdebug seal {}",
                p.with_crc, p.entries, path
            )
        };
        writeln!(out, "\n{v}")?;
    }
    Ok(!d.findings.is_empty())
}

/// `smdebug doctor`'s entry (exit status 0: nothing found, 1: found, 2: error).
pub fn main(args: &Args) -> ! {
    crate::fleet::exit(run(args, &mut std::io::stdout().lock()))
}
