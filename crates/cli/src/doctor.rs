//! `smdebug doctor TRIAL`: diagnoses the problems smdebug users hit and cannot read from
//! its exceptions. Each finding has a plain-language explanation and the command to look
//! further; the report also says whether the trial's payloads can be verified.
//!
//! Exit status: 0 nothing found, 1 a problem found, 2 the doctor itself failed.
use crate::steps::step_runs;
use crate::verify::{check_index, RecordProblem, TrialFiles};
use anyhow::Result;
use serde_json::{json, Value};
use smdebug_config::{CollectionManager, Mode};
use smdebug_index::{classify_key, TrialFile};
use smdebug_trial::{Trial, TrialOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug doctor`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    path: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

/// One problem found.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Stable identifier (`missing-collections`, `incomplete-steps`, `no-end-marker`,
    /// `skipped-steps`, `corrupt-record`, `crc-mismatch`, `corrupt-index`, `orphan-events`,
    /// `gradient-accumulation`).
    pub kind: &'static str,
    /// What was found, with names (files, offsets, workers, steps).
    pub what: String,
    /// What it means, in plain language.
    pub why: String,
    /// The command to look further.
    pub next: String,
}

/// The whole diagnosis.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    /// The problems.
    pub findings: Vec<Finding>,
    /// Index entries that carry a payload CRC, of all entries.
    pub verifiable: (usize, usize),
}

/// Diagnoses the trial at `path`.
pub fn diagnose(path: &str) -> Result<Diagnosis> {
    let files = TrialFiles::open(path)?;
    let mut findings = Vec::new();
    let mut add = |kind, what: String, why: &str, next: String| {
        findings.push(Finding {
            kind,
            what,
            why: why.to_owned(),
            next,
        })
    };

    // Steps per worker, and mode steps, from the index files' names and metas.
    let mut steps_of: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    let mut mode_steps: BTreeMap<Mode, BTreeSet<i64>> = BTreeMap::new();
    for (key, parsed) in &files.index {
        if let Ok(TrialFile::Index(f)) = classify_key(key) {
            steps_of
                .entry(f.worker().into_owned())
                .or_default()
                .insert(f.step);
        }
        if let Ok(i) = parsed {
            mode_steps
                .entry(i.meta.mode)
                .or_default()
                .insert(i.meta.mode_step);
        }
    }

    // Collections files.
    let mut cm: Option<CollectionManager> = None;
    let mut num_workers: Option<usize> = None;
    for key in files.collections.keys() {
        match files
            .store
            .get(key)
            .map(|b| CollectionManager::from_slice(&b))
        {
            Ok(Ok(m)) => {
                num_workers = num_workers.or(m.num_workers().map(|n| n.max(0) as usize));
                cm.get_or_insert(m);
            }
            Ok(Err(e)) => add(
                "corrupt-collections",
                format!("{key}: {e}"),
                "The collections file does not parse: smdebug's create_trial fails on it, \
                 and no reader knows which tensors belong to which collection.",
                format!("cat {path}/{key}"),
            ),
            Err(e) => add(
                "corrupt-collections",
                format!("{key}: cannot read: {e}"),
                "The collections file cannot be read.",
                format!("ls -l {path}/collections/000000000"),
            ),
        }
    }
    let with_collections: BTreeSet<&str> = files.collections.values().map(String::as_str).collect();
    let writers: BTreeSet<&str> = steps_of.keys().map(String::as_str).collect();
    let missing: Vec<&str> = writers.difference(&with_collections).copied().collect();
    let expected_workers = num_workers.unwrap_or(writers.len()).max(writers.len());
    if files.collections.is_empty() && !writers.is_empty() {
        add(
            "missing-collections",
            format!(
                "no collections file at all; workers {} wrote steps",
                writers.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            "Every worker's hook writes collections/000000000/<worker>_collections.json at its \
             first step. smdebug's create_trial waits for them and then raises \
             MissingCollectionFiles: the job died before its first step completed, or the files \
             were not copied with the trial.",
            format!("ls {path}/collections/000000000"),
        );
    } else if !missing.is_empty() || with_collections.len() < expected_workers {
        add(
            "missing-collections",
            format!(
                "{} of {expected_workers} workers have a collections file; missing for: {}",
                with_collections.len(),
                if missing.is_empty() {
                    "workers that wrote no step".to_owned()
                } else {
                    missing.join(", ")
                }
            ),
            "Each worker writes its own collections file at its first step, and the file says \
             how many workers there are (num_workers). smdebug's create_trial waits until all of \
             them exist and then raises MissingCollectionFiles: a worker never reached its first \
             step, or its files were lost.",
            format!("ls {path}/collections/000000000"),
        );
    }

    // Incomplete steps: a step some worker has and another lacks.
    if expected_workers > 1 {
        let all_steps: BTreeSet<i64> = steps_of.values().flatten().copied().collect();
        let mut lagging: Vec<String> = Vec::new();
        for (w, s) in &steps_of {
            let lacks: Vec<i64> = all_steps.difference(s).copied().collect();
            if !lacks.is_empty() {
                lagging.push(format!(
                    "{w} lacks steps {} (its last step is {}, the trial's {})",
                    step_runs(&lacks, 8),
                    s.iter().next_back().copied().unwrap_or(-1),
                    all_steps.iter().next_back().copied().unwrap_or(-1)
                ));
            }
        }
        for w in missing_workers(expected_workers, &steps_of) {
            lagging.push(format!("{w} wrote no step at all"));
        }
        if !lagging.is_empty() {
            add(
                "incomplete-steps",
                lagging.join("; "),
                "A step is complete when every worker has written it. smdebug's Trial lists \
                 incomplete steps only with show_incomplete_steps, rules wait for them \
                 (and end with StepUnavailable or NoMoreData), and last_complete_step stops \
                 before them: the named worker lags, stopped, or saves on other steps.",
                format!("smdebug inspect {path}"),
            );
        }
    }

    if !files.ended && !files.index.is_empty() {
        add(
            "no-end-marker",
            "training_job_end.ts is missing".into(),
            "The hook writes this empty marker when it closes. Without it readers assume the \
             job is still running: rules and Trial.steps() keep waiting for more steps. Either \
             the job is still running, or the writer stopped without closing (killed, crashed, \
             or hook.close() never called).",
            format!("ls -l {path}"),
        );
    }

    // Records: every index entry against its events file.
    let mut referenced: BTreeSet<String> = BTreeSet::new();
    let (mut with_crc, mut entries) = (0usize, 0usize);
    let mut corrupt = Vec::new();
    let mut crc = Vec::new();
    for (key, parsed) in &files.index {
        let index = match parsed {
            Ok(i) => i,
            Err(e) => {
                add(
                    "corrupt-index",
                    format!("{key}: {e}"),
                    "The index file does not parse: smdebug's reader stops at it, and the step's \
                     tensors are invisible.",
                    format!("cat {path}/{key}"),
                );
                continue;
            }
        };
        entries += index.tensors.len();
        with_crc += index
            .tensors
            .iter()
            .filter(|t| t.payload_crc32c.is_some())
            .count();
        let Some(ev) = index.meta.event_file_name.as_deref() else {
            continue;
        };
        referenced.insert(ev.to_owned());
        if index.tensors.is_empty() {
            continue;
        }
        let bytes = files.events_bytes(ev);
        let (_, bad) = check_index(key, index, bytes.as_deref());
        for b in bad {
            match b.problem {
                RecordProblem::CrcMismatch { .. } => crc.push(b.to_string()),
                _ => corrupt.push(b.to_string()),
            }
        }
    }
    if !corrupt.is_empty() {
        add(
            "corrupt-record",
            corrupt.join("\n    "),
            "These records cannot be read where the index says they are: the events file was \
             truncated (a copy or upload cut short, a full disk) or overwritten. smdebug raises \
             an exception for these tensors at these steps.",
            format!("smdebug dump {path}"),
        );
    }
    if !crc.is_empty() {
        add(
            "crc-mismatch",
            crc.join("\n    "),
            "The record's bytes differ from what was written: the payload CRC stored in the \
             index does not match. The values read back would be wrong without any error from \
             smdebug, whose own record CRC is a constant.",
            format!("smdebug dump {path}"),
        );
    }
    let orphans: Vec<&String> = files
        .events
        .keys()
        .filter(|k| !referenced.contains(*k))
        .collect();
    if !orphans.is_empty() {
        add(
            "orphan-events",
            format!(
                "{} events file(s) without an index file: {}",
                orphans.len(),
                orphans
                    .iter()
                    .take(5)
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "The writer publishes a step's events file before its index file; an events file \
             without one is a step whose writer stopped in between. Readers never see it.",
            format!("ls -l {path}/events"),
        );
    }

    // Steps skipped against the save configs in the collections file.
    if let Some(cm) = &cm {
        let mut skipped = Vec::new();
        for (mode, seen) in &mode_steps {
            let (Some(&first), Some(&last)) = (seen.iter().next(), seen.iter().next_back()) else {
                continue;
            };
            let configs: Vec<_> = cm
                .collections()
                .filter(|c| !c.tensor_names.is_empty())
                .filter_map(|c| c.save_config.as_ref()?.get(*mode).cloned())
                .collect();
            if configs.is_empty() || last - first > 10_000_000 {
                continue;
            }
            let missing: Vec<i64> = (first..=last)
                .filter(|s| !seen.contains(s))
                .filter(|&s| configs.iter().any(|c| c.should_save(s).unwrap_or(false)))
                .collect();
            if !missing.is_empty() {
                skipped.push(format!(
                    "{} mode steps {} are due by the save config but absent",
                    mode.name(),
                    step_runs(&missing, 8)
                ));
            }
        }
        if !skipped.is_empty() {
            add(
                "skipped-steps",
                skipped.join("; "),
                "The collections file's save configs say these steps should have been saved, \
                 yet no worker wrote them: the hook's queue dropped them (queue policy drop), the \
                 writer failed, the steps were never run (the mode changed, training resumed at a \
                 later step), or tensors were offered under names no collection matched.",
                format!("smdebug inspect {path}"),
            );
        }
        gradient_accumulation(path, cm, &mut add);
    }

    Ok(Diagnosis {
        findings,
        verifiable: (with_crc, entries),
    })
}

fn missing_workers(expected: usize, steps_of: &BTreeMap<String, BTreeSet<i64>>) -> Vec<String> {
    // Only nameable for the usual worker_<i> names.
    if !steps_of.keys().all(|w| w.starts_with("worker_")) {
        return Vec::new();
    }
    (0..expected)
        .map(|i| format!("worker_{i}"))
        .filter(|w| !steps_of.contains_key(w))
        .collect()
}

/// Weights that did not change between two consecutive saved steps while gradients were
/// saved at both: the hook's step counts forward passes (micro-batches), not optimizer
/// updates (smdebug #426).
fn gradient_accumulation(
    path: &str,
    cm: &CollectionManager,
    add: &mut impl FnMut(&'static str, String, &str, String),
) {
    let (Some(weights), Some(grads)) = (cm.get("weights"), cm.get("gradients")) else {
        return;
    };
    if weights.tensor_names.is_empty() || grads.tensor_names.is_empty() {
        return;
    }
    let options = TrialOptions {
        collections_timeout: Some(Duration::from_secs(5)),
        ..TrialOptions::default()
    };
    let Ok(trial) = Trial::open(path, options) else {
        return;
    };
    let Some(w_name) = weights.tensor_names.iter().next() else {
        return;
    };
    let Ok(w) = trial.tensor(w_name) else { return };
    let Ok(steps) = w.steps(Mode::Global, false) else {
        return;
    };
    let grad_steps: BTreeSet<i64> = grads
        .tensor_names
        .iter()
        .filter_map(|g| trial.tensor(g).ok()?.steps(Mode::Global, false).ok())
        .flatten()
        .collect();
    let mut unchanged = Vec::new();
    for pair in steps.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if !(grad_steps.contains(&a) && grad_steps.contains(&b)) {
            continue;
        }
        let (Ok(va), Ok(vb)) = (
            w.value(a, Mode::Global, None),
            w.value(b, Mode::Global, None),
        ) else {
            continue;
        };
        if va == vb {
            unchanged.push(b);
        }
    }
    // One unchanged pair can be a zero learning rate; a pattern is accumulation.
    if unchanged.len() >= 2 {
        add(
            "gradient-accumulation",
            format!(
                "{w_name} is unchanged from the previous saved step at steps {} although gradients were saved at both",
                step_runs(&unchanged, 8)
            ),
            "The weights did not move between saved steps that both have gradients: the \
             optimizer did not step in between, so the hook's step counts forward/backward \
             passes (micro-batches), not optimizer updates — the gradient-accumulation \
             semantics of smdebug issue #426. Gradients saved at such steps are partial sums, \
             save_interval counts micro-batches, and rules comparing steps compare \
             micro-batches. Call hook.step() once per optimizer update, or read only the steps \
             where the weights change.",
            format!("smdebug dump {path}"),
        );
    }
}

fn to_json(path: &str, d: &Diagnosis) -> Value {
    json!({
        "trial": path,
        "findings": d.findings.iter().map(|f| json!({
            "kind": f.kind, "what": f.what, "why": f.why, "next": f.next,
        })).collect::<Vec<_>>(),
        "payloads_verifiable": {
            "entries": d.verifiable.1,
            "with_crc": d.verifiable.0,
            "all": d.verifiable.1 > 0 && d.verifiable.0 == d.verifiable.1,
        },
    })
}

/// Runs the command; `Ok(true)` when something was found.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<bool> {
    let d = diagnose(&args.path)?;
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&to_json(&args.path, &d))?
        )?;
    } else {
        writeln!(out, "trial {}", args.path)?;
        for f in &d.findings {
            writeln!(out, "\n[{}] {}", f.kind, f.what)?;
            writeln!(out, "  why: {}", f.why)?;
            writeln!(out, "  look further: {}", f.next)?;
        }
        if d.findings.is_empty() {
            writeln!(out, "no problem found")?;
        }
        let (with, all) = d.verifiable;
        let v = if all == 0 {
            "no records".to_owned()
        } else if with == all {
            format!("payloads verifiable: all {all} index entries carry a payload CRC")
        } else {
            format!(
                "payloads NOT verifiable: {with} of {all} index entries carry a payload CRC \
                 (trials the original smdebug wrote have none; a flipped byte would read back as \
                 a wrong value without an error). Run: smdebug seal {}",
                args.path
            )
        };
        writeln!(out, "\n{v}")?;
    }
    Ok(!d.findings.is_empty())
}

/// `smdebug doctor`'s entry (exit status 0: nothing found, 1: found, 2: error).
pub fn main(args: &Args) -> ! {
    let code = match run(args, &mut std::io::stdout().lock()) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code)
}
