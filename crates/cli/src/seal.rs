//! `smdebug seal TRIAL`: adds the payload CRC key to every index entry of an existing
//! trial (`smdebug_diagnose::seal`: every record is checked first; a trial with a bad
//! record is refused, naming each, and nothing is written).
use anyhow::Result;
use smdebug_diagnose::SealOptions;
use std::io::Write;

/// Options of `smdebug seal`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    path: String,
    /// Check and report, write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let options = SealOptions {
        dry_run: args.dry_run,
    };
    let s = smdebug_diagnose::seal(&args.path, &options)?;
    if args.dry_run {
        writeln!(
            out,
            "{}: every record parses; sealing would add {} payload CRCs ({} index files already sealed)",
            args.path, s.entries, s.already
        )?;
    } else {
        writeln!(
            out,
            "{}: sealed {} index files ({} payload CRCs added, {} files already sealed)",
            args.path, s.files, s.entries, s.already
        )?;
    }
    Ok(())
}
