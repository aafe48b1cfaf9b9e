//! `smdebug seal TRIAL`: adds the payload CRC key (`payload_crc32c`, docs/src/format.md) to
//! every tensor entry of every index file of an existing trial, so that copies of it can be
//! verified from then on. smdebug's reader ignores the key.
//!
//! Every record is checked first (framing, length CRC, footer, and a CRC already in the
//! index); if any fails, nothing is written and the command names each bad record by events
//! file and offset. Otherwise each index file is replaced by one put — a temporary file and
//! a rename on local disk, a single request on object stores — so a reader sees either the
//! old or the new file, never a mix.
use crate::verify::{check_index, TrialFiles};
use anyhow::{bail, Result};
use smdebug_storage::Bytes;
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

/// What sealing did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Sealed {
    /// Index files rewritten.
    pub files: usize,
    /// Index files that already carried every CRC.
    pub already: usize,
    /// Entries given a CRC.
    pub entries: usize,
}

/// Seals the trial at `path` (see the module docs).
pub fn seal(path: &str, dry_run: bool) -> Result<Sealed> {
    let files = TrialFiles::open(path)?;
    let mut problems = Vec::new();
    let mut rewrites = Vec::new();
    let mut done = Sealed::default();
    for (key, parsed) in &files.index {
        let index = match parsed {
            Ok(i) => i,
            Err(e) => {
                problems.push(format!("{key}: {e}"));
                continue;
            }
        };
        if index.tensors.is_empty() {
            continue;
        }
        let events = index
            .meta
            .event_file_name
            .as_deref()
            .and_then(|k| files.events_bytes(k));
        let (crcs, bad) = check_index(key, index, events.as_deref());
        problems.extend(bad.iter().map(|b| b.to_string()));
        if !bad.is_empty() {
            continue;
        }
        let missing = index
            .tensors
            .iter()
            .filter(|t| t.payload_crc32c.is_none())
            .count();
        if missing == 0 {
            done.already += 1;
            continue;
        }
        let mut sealed = index.clone();
        for (t, crc) in sealed.tensors.iter_mut().zip(crcs) {
            t.payload_crc32c = crc;
        }
        done.entries += missing;
        rewrites.push((key.clone(), sealed.to_json()));
    }
    if !problems.is_empty() {
        bail!(
            "not sealed: {} record(s) or index file(s) fail to parse; nothing was written:\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    if !dry_run {
        for (key, text) in rewrites {
            files.store.put(&key, Bytes::from(text))?;
            done.files += 1;
        }
    }
    Ok(done)
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let s = seal(&args.path, args.dry_run)?;
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
