//! `doctor`: the problems smdebug users hit and cannot read from its exceptions. Each
//! finding has a plain-language explanation and the command to look further; the report
//! also says whether the trial's payloads can be verified.

use crate::check::{BadRecord, RecordProblem};
use crate::error::DiagnoseError;
use crate::files::TrialFiles;
use crate::runs::step_runs;
use crate::verify::verify_files;
use serde::Serialize;
use smdebug_config::{CollectionManager, Mode};
use smdebug_index::{classify_key, TrialFile};
use smdebug_trial::{Trial, TrialOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The kind of a [`Finding`]; its serialized name (`missing-collections`, …) is the stable
/// identifier `smdebug doctor --json` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A collections file that does not parse or cannot be read.
    CorruptCollections,
    /// Workers without a collections file.
    MissingCollections,
    /// Steps some worker wrote and another did not.
    IncompleteSteps,
    /// No `training_job_end.ts`.
    NoEndMarker,
    /// An index file that does not parse.
    CorruptIndex,
    /// Records that cannot be read where the index says they are.
    CorruptRecord,
    /// Records whose payload CRC differs from the index's.
    CrcMismatch,
    /// Events files no index file names.
    OrphanEvents,
    /// Steps the save configs say are due, written by no worker.
    SkippedSteps,
    /// Weights unchanged between saved steps that both have gradients.
    GradientAccumulation,
}

impl FindingKind {
    /// The stable identifier (`missing-collections`, `corrupt-record`, …).
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::CorruptCollections => "corrupt-collections",
            FindingKind::MissingCollections => "missing-collections",
            FindingKind::IncompleteSteps => "incomplete-steps",
            FindingKind::NoEndMarker => "no-end-marker",
            FindingKind::CorruptIndex => "corrupt-index",
            FindingKind::CorruptRecord => "corrupt-record",
            FindingKind::CrcMismatch => "crc-mismatch",
            FindingKind::OrphanEvents => "orphan-events",
            FindingKind::SkippedSteps => "skipped-steps",
            FindingKind::GradientAccumulation => "gradient-accumulation",
        }
    }
}

/// A worker that lacks steps others wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaggingWorker {
    /// The worker.
    pub worker: String,
    /// The steps it lacks (every step of the trial when it wrote none).
    pub lacks: Vec<i64>,
    /// Its last step (`None`: it wrote no step at all).
    pub last_step: Option<i64>,
}

/// The names and numbers behind a finding, by kind; its `what` says the same in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Evidence {
    /// One file and why it cannot be used (`corrupt-collections`, `corrupt-index`).
    File {
        /// The file's key.
        file: String,
        /// The error.
        error: String,
    },
    /// Workers without a collections file (`missing-collections`).
    Collections {
        /// How many workers the trial has (`num_workers`, or the workers that wrote steps).
        expected_workers: usize,
        /// How many have a collections file.
        with_collections: usize,
        /// The workers that wrote steps without one.
        missing: Vec<String>,
    },
    /// Lagging workers (`incomplete-steps`).
    Workers {
        /// Each lagging worker.
        lagging: Vec<LaggingWorker>,
    },
    /// Records with their events file and offset (`corrupt-record`, `crc-mismatch`).
    Records {
        /// The records.
        records: Vec<BadRecord>,
    },
    /// Files (`orphan-events`: every such events file, not only the five `what` names).
    Files {
        /// Their keys.
        files: Vec<String>,
    },
    /// Mode steps due by the save configs but absent (`skipped-steps`).
    ModeSteps {
        /// Per mode, the missing mode steps.
        missing: BTreeMap<Mode, Vec<i64>>,
    },
    /// A weight unchanged at steps (`gradient-accumulation`).
    Unchanged {
        /// The weight tensor.
        tensor: String,
        /// The steps where it equals the previous saved step's value.
        steps: Vec<i64>,
    },
    /// Nothing beyond the kind (`no-end-marker`).
    None,
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// What was found, with names (files, offsets, workers, steps).
    pub what: String,
    /// What it means, in plain language.
    pub why: String,
    /// The command to look further.
    pub next: String,
    /// The names and numbers behind `what`.
    pub evidence: Evidence,
}

/// How many index entries carry a payload CRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PayloadsVerifiable {
    /// Index entries of the index files that parse.
    pub entries: usize,
    /// Those with a payload CRC.
    pub with_crc: usize,
    /// Every entry has one (and there is at least one).
    pub all: bool,
}

/// The whole diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DoctorReport {
    /// The trial location, as given.
    pub trial: String,
    /// The problems, in the order the checks run.
    pub findings: Vec<Finding>,
    /// Whether the payloads can be verified.
    pub payloads_verifiable: PayloadsVerifiable,
}

/// Diagnoses the trial at `location` (a local folder, `s3://bucket/prefix`, …): missing
/// collections files, lagging workers, a writer stopped without its end marker, corrupt
/// index files and records, CRC mismatches, orphan events files, skipped steps and
/// gradient-accumulation step semantics.
pub fn doctor(location: &str) -> Result<DoctorReport, DiagnoseError> {
    let path = location;
    let files = TrialFiles::open(path)?;
    let mut findings = Vec::new();
    let mut add = |kind, what: String, why: &str, next: String, evidence| {
        findings.push(Finding {
            kind,
            what,
            why: why.to_owned(),
            next,
            evidence,
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
        let file_error = |error: String| Evidence::File {
            file: key.clone(),
            error,
        };
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
                FindingKind::CorruptCollections,
                format!("{key}: {e}"),
                "The collections file does not parse: smdebug's create_trial fails on it, \
                 and no reader knows which tensors belong to which collection.",
                format!("cat {path}/{key}"),
                file_error(e.to_string()),
            ),
            Err(e) => add(
                FindingKind::CorruptCollections,
                format!("{key}: cannot read: {e}"),
                "The collections file cannot be read.",
                format!("ls -l {path}/collections/000000000"),
                file_error(e.to_string()),
            ),
        }
    }
    let with_collections: BTreeSet<&str> = files.collections.values().map(String::as_str).collect();
    let writers: BTreeSet<&str> = steps_of.keys().map(String::as_str).collect();
    let missing: Vec<&str> = writers.difference(&with_collections).copied().collect();
    let expected_workers = num_workers.unwrap_or(writers.len()).max(writers.len());
    let collections_evidence = || Evidence::Collections {
        expected_workers,
        with_collections: with_collections.len(),
        missing: missing.iter().map(|w| (*w).to_owned()).collect(),
    };
    if files.collections.is_empty() && !writers.is_empty() {
        add(
            FindingKind::MissingCollections,
            format!(
                "no collections file at all; workers {} wrote steps",
                writers.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            "Every worker's hook writes collections/000000000/<worker>_collections.json at its \
             first step. smdebug's create_trial waits for them and then raises \
             MissingCollectionFiles: the job died before its first step completed, or the files \
             were not copied with the trial.",
            format!("ls {path}/collections/000000000"),
            collections_evidence(),
        );
    } else if !missing.is_empty() || with_collections.len() < expected_workers {
        add(
            FindingKind::MissingCollections,
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
            collections_evidence(),
        );
    }

    // Incomplete steps: a step some worker has and another lacks.
    if expected_workers > 1 {
        let all_steps: BTreeSet<i64> = steps_of.values().flatten().copied().collect();
        let trial_last = all_steps.iter().next_back().copied().unwrap_or(-1);
        let mut lagging: Vec<LaggingWorker> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        for (w, s) in &steps_of {
            let lacks: Vec<i64> = all_steps.difference(s).copied().collect();
            if !lacks.is_empty() {
                let last = s.iter().next_back().copied();
                texts.push(format!(
                    "{w} lacks steps {} (its last step is {}, the trial's {trial_last})",
                    step_runs(&lacks, 8),
                    last.unwrap_or(-1),
                ));
                lagging.push(LaggingWorker {
                    worker: w.clone(),
                    lacks,
                    last_step: last,
                });
            }
        }
        for w in missing_workers(expected_workers, &steps_of) {
            texts.push(format!("{w} wrote no step at all"));
            lagging.push(LaggingWorker {
                worker: w,
                lacks: all_steps.iter().copied().collect(),
                last_step: None,
            });
        }
        if !lagging.is_empty() {
            add(
                FindingKind::IncompleteSteps,
                texts.join("; "),
                "A step is complete when every worker has written it. smdebug's Trial lists \
                 incomplete steps only with show_incomplete_steps, rules wait for them \
                 (and end with StepUnavailable or NoMoreData), and last_complete_step stops \
                 before them: the named worker lags, stopped, or saves on other steps.",
                format!("smdebug inspect {path}"),
                Evidence::Workers { lagging },
            );
        }
    }

    if !files.ended && !files.index.is_empty() {
        add(
            FindingKind::NoEndMarker,
            "training_job_end.ts is missing".into(),
            "The hook writes this empty marker when it closes. Without it readers assume the \
             job is still running: rules and Trial.steps() keep waiting for more steps. Either \
             the job is still running, or the writer stopped without closing (killed, crashed, \
             or hook.close() never called).",
            format!("ls -l {path}"),
            Evidence::None,
        );
    }

    // Records: every index entry against its events file.
    let verified = verify_files(path, &files);
    for c in &verified.corrupt_index {
        add(
            FindingKind::CorruptIndex,
            format!("{}: {}", c.file, c.error),
            "The index file does not parse: smdebug's reader stops at it, and the step's \
             tensors are invisible.",
            format!("cat {path}/{}", c.file),
            Evidence::File {
                file: c.file.clone(),
                error: c.error.clone(),
            },
        );
    }
    let (crc, corrupt): (Vec<BadRecord>, Vec<BadRecord>) = verified
        .bad_records
        .into_iter()
        .partition(|b| matches!(b.problem, RecordProblem::CrcMismatch { .. }));
    let lines = |records: &[BadRecord]| {
        records
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n    ")
    };
    if !corrupt.is_empty() {
        add(
            FindingKind::CorruptRecord,
            lines(&corrupt),
            "These records cannot be read where the index says they are: the events file was \
             truncated (a copy or upload cut short, a full disk) or overwritten. smdebug raises \
             an exception for these tensors at these steps.",
            format!("smdebug dump {path}"),
            Evidence::Records { records: corrupt },
        );
    }
    if !crc.is_empty() {
        add(
            FindingKind::CrcMismatch,
            lines(&crc),
            "The record's bytes differ from what was written: the payload CRC stored in the \
             index does not match. The values read back would be wrong without any error from \
             smdebug, whose own record CRC is a constant.",
            format!("smdebug dump {path}"),
            Evidence::Records { records: crc },
        );
    }
    let orphans = verified.orphan_events;
    if !orphans.is_empty() {
        add(
            FindingKind::OrphanEvents,
            format!(
                "{} events file(s) without an index file: {}",
                orphans.len(),
                orphans
                    .iter()
                    .take(5)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "The writer publishes a step's events file before its index file; an events file \
             without one is a step whose writer stopped in between. Readers never see it.",
            format!("ls -l {path}/events"),
            Evidence::Files { files: orphans },
        );
    }

    // Steps skipped against the save configs in the collections file.
    if let Some(cm) = &cm {
        let skipped = skipped_steps(cm, &mode_steps);
        if !skipped.is_empty() {
            add(
                FindingKind::SkippedSteps,
                skipped
                    .iter()
                    .map(|(mode, missing)| {
                        format!(
                            "{} mode steps {} are due by the save config but absent",
                            mode.name(),
                            step_runs(missing, 8)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                "The collections file's save configs say these steps should have been saved, \
                 yet no worker wrote them: the hook's queue dropped them (queue policy drop), the \
                 writer failed, the steps were never run (the mode changed, training resumed at a \
                 later step), or tensors were offered under names no collection matched.",
                format!("smdebug inspect {path}"),
                Evidence::ModeSteps { missing: skipped },
            );
        }
        if let Some((tensor, steps)) = gradient_accumulation(path, cm) {
            add(
                FindingKind::GradientAccumulation,
                format!(
                    "{tensor} is unchanged from the previous saved step at steps {} although gradients were saved at both",
                    step_runs(&steps, 8)
                ),
                "The weights did not move between saved steps that both have gradients: the \
                 optimizer did not step in between, so the hook's step counts forward/backward \
                 passes (micro-batches), not optimizer updates — the gradient-accumulation \
                 semantics of smdebug issue #426. Gradients saved at such steps are partial sums, \
                 save_interval counts micro-batches, and rules comparing steps compare \
                 micro-batches. Call hook.step() once per optimizer update, or read only the steps \
                 where the weights change.",
                format!("smdebug dump {path}"),
                Evidence::Unchanged { tensor, steps },
            );
        }
    }

    let (with_crc, entries) = (verified.with_crc, verified.entries);
    Ok(DoctorReport {
        trial: path.to_owned(),
        findings,
        payloads_verifiable: PayloadsVerifiable {
            entries,
            with_crc,
            all: entries > 0 && with_crc == entries,
        },
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

/// Per mode, the mode steps between the first and last seen that a save config of a
/// collection with tensors says are due, yet no index file has.
fn skipped_steps(
    cm: &CollectionManager,
    mode_steps: &BTreeMap<Mode, BTreeSet<i64>>,
) -> BTreeMap<Mode, Vec<i64>> {
    let mut skipped = BTreeMap::new();
    for (mode, seen) in mode_steps {
        let (Some(&first), Some(&last)) = (seen.iter().next(), seen.iter().next_back()) else {
            continue;
        };
        let configs: Vec<_> = cm
            .collections()
            .filter(|c| !c.tensor_names.is_empty())
            .filter_map(|c| c.save_config.as_ref()?.get(*mode).cloned())
            .collect();
        // Bounds the step-by-step walk below.
        if configs.is_empty() || last - first > 10_000_000 {
            continue;
        }
        let missing: Vec<i64> = (first..=last)
            .filter(|s| !seen.contains(s))
            .filter(|&s| configs.iter().any(|c| c.should_save(s).unwrap_or(false)))
            .collect();
        if !missing.is_empty() {
            skipped.insert(*mode, missing);
        }
    }
    skipped
}

/// A weight that did not change between two consecutive saved steps while gradients were
/// saved at both, and the steps where it did not: the hook's step counts forward passes
/// (micro-batches), not optimizer updates (smdebug #426).
fn gradient_accumulation(path: &str, cm: &CollectionManager) -> Option<(String, Vec<i64>)> {
    let (weights, grads) = (cm.get("weights")?, cm.get("gradients")?);
    if weights.tensor_names.is_empty() || grads.tensor_names.is_empty() {
        return None;
    }
    let options = TrialOptions {
        collections_timeout: Some(Duration::from_secs(5)),
        ..TrialOptions::default()
    };
    let trial = Trial::open(path, options).ok()?;
    let w_name = weights.tensor_names.iter().next()?;
    let w = trial.tensor(w_name).ok()?;
    let steps = w.steps(Mode::Global, false).ok()?;
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
    (unchanged.len() >= 2).then(|| (w_name.clone(), unchanged))
}
