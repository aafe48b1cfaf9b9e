//! `doctor` and `verify`: findings with their evidence, and no panic on arbitrary bytes.

use crate::support::{s, step_file, trial, trial_with, worker_file};
use proptest::prelude::*;
use smdebug_diagnose::{doctor, verify, Evidence, FindingKind, LaggingWorker, RecordProblem};

#[test]
fn a_good_trial_has_no_finding() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    let r = doctor(s(&t)).unwrap();
    assert_eq!(r.findings, []);
    assert_eq!(r.payloads_verifiable.entries, 16);
    assert!(r.payloads_verifiable.all);
    assert!(verify(s(&t)).unwrap().is_sound());
}

#[test]
fn a_truncated_events_file_is_named_with_offset_step_and_worker() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    let ev = step_file(&t, "events", 5);
    let bytes = std::fs::read(&ev).unwrap();
    std::fs::write(&ev, &bytes[..bytes.len() - 10]).unwrap();
    let r = doctor(s(&t)).unwrap();
    assert_eq!(r.findings.len(), 1, "{r:?}");
    let f = &r.findings[0];
    assert_eq!(f.kind, FindingKind::CorruptRecord);
    let Evidence::Records { records } = &f.evidence else {
        panic!("{f:?}")
    };
    assert_eq!(records.len(), 1);
    let b = &records[0];
    assert_eq!(
        (b.step, b.worker.as_deref(), b.events_file.as_str()),
        (
            Some(5),
            Some("worker_0"),
            "events/000000000005/000000000005_worker_0.tfevents"
        )
    );
    assert!(matches!(b.problem, RecordProblem::Corrupt { .. }));
    assert!(
        f.what.contains(&format!("at byte {}", b.offset)),
        "{}",
        f.what
    );
    assert_eq!(verify(s(&t)).unwrap().bad_records, *records);
}

#[test]
fn a_flipped_byte_is_a_crc_mismatch() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    let ev = step_file(&t, "events", 2);
    let mut bytes = std::fs::read(&ev).unwrap();
    let n = bytes.len();
    // The last record's payload ends 4 bytes before the file's end (its footer).
    bytes[n - 6] ^= 1;
    std::fs::write(&ev, bytes).unwrap();
    let r = verify(s(&t)).unwrap();
    assert_eq!(r.bad_records.len(), 1, "{r:?}");
    assert!(matches!(
        r.bad_records[0].problem,
        RecordProblem::CrcMismatch { .. }
    ));
    let kinds: Vec<_> = doctor(s(&t))
        .unwrap()
        .findings
        .iter()
        .map(|f| f.kind)
        .collect();
    assert_eq!(kinds, [FindingKind::CrcMismatch]);
}

#[test]
fn a_missing_collections_file_names_the_worker() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    std::fs::remove_file(t.join("collections/000000000/worker_0_collections.json")).unwrap();
    let r = doctor(s(&t)).unwrap();
    assert_eq!(r.findings.len(), 1, "{r:?}");
    assert_eq!(r.findings[0].kind, FindingKind::MissingCollections);
    assert_eq!(
        r.findings[0].evidence,
        Evidence::Collections {
            expected_workers: 1,
            with_collections: 0,
            missing: vec!["worker_0".into()],
        }
    );
}

#[test]
fn skipped_steps_and_orphans_are_listed_in_full() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    for step in [3, 4] {
        std::fs::remove_file(step_file(&t, "index", step)).unwrap();
    }
    let r = doctor(s(&t)).unwrap();
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind.name()).collect();
    assert_eq!(kinds, ["orphan-events", "skipped-steps"], "{r:?}");
    assert_eq!(
        r.findings[0].evidence,
        Evidence::Files {
            files: [3, 4]
                .map(|i| smdebug_index::event_file_key(i, "worker_0").unwrap())
                .to_vec()
        }
    );
    let Evidence::ModeSteps { missing } = &r.findings[1].evidence else {
        panic!("{r:?}")
    };
    assert_eq!(missing[&smdebug_config::Mode::Global], [3, 4]);
}

#[test]
fn incomplete_steps_name_the_lagging_worker() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    // A second worker: worker_0's files copied under worker_1, its last two steps missing.
    let coll = t.join("collections/000000000/worker_0_collections.json");
    let text = std::fs::read_to_string(&coll)
        .unwrap()
        .replace(r#""num_workers": 1"#, r#""num_workers": 2"#);
    std::fs::write(&coll, &text).unwrap();
    std::fs::write(
        t.join("collections/000000000/worker_1_collections.json"),
        &text,
    )
    .unwrap();
    for step in 0..6 {
        let idx = std::fs::read_to_string(worker_file(&t, "index", step, "worker_0"))
            .unwrap()
            .replace("_worker_0.tfevents", "_worker_1.tfevents");
        std::fs::write(worker_file(&t, "index", step, "worker_1"), idx).unwrap();
        std::fs::copy(
            worker_file(&t, "events", step, "worker_0"),
            worker_file(&t, "events", step, "worker_1"),
        )
        .unwrap();
    }
    let r = doctor(s(&t)).unwrap();
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::IncompleteSteps], "{r:?}");
    assert!(
        r.findings[0].what.contains("worker_1 lacks steps 6-7"),
        "{r:?}"
    );
    assert_eq!(
        r.findings[0].evidence,
        Evidence::Workers {
            lagging: vec![LaggingWorker {
                worker: "worker_1".into(),
                lacks: vec![6, 7],
                last_step: Some(5),
            }]
        }
    );
}

#[test]
fn a_writer_stopped_without_its_end_marker_is_named() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    std::fs::remove_file(t.join("training_job_end.ts")).unwrap();
    let r = doctor(s(&t)).unwrap();
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::NoEndMarker], "{r:?}");
}

#[test]
fn gradient_accumulation_names_the_weight_and_its_steps() {
    let d = tempfile::tempdir().unwrap();
    let t = trial_with(d.path(), None, true);
    let r = doctor(s(&t)).unwrap();
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::GradientAccumulation], "{r:?}");
    let what = &r.findings[0].what;
    assert!(
        what.contains("fc.weight") && what.contains("1,3,5,7"),
        "{what}"
    );
}

#[test]
fn a_bad_location_is_an_error_naming_it() {
    let e = doctor("nosuchscheme://x/y").unwrap_err();
    assert!(e.to_string().contains("nosuchscheme://x/y"), "{e}");
}

/// Which file of a good trial a property test overwrites.
const TARGETS: [&str; 3] = ["events", "index", "collections"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any bytes in place of an events, index or collections file: a report, never a
    /// panic, and damage to a file the trial needs is a finding.
    #[test]
    fn doctor_on_arbitrary_bytes_never_panics(
        target in 0..TARGETS.len(),
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let d = tempfile::tempdir().unwrap();
        let t = trial(d.path(), None);
        let file = match TARGETS[target] {
            "collections" => t.join("collections/000000000/worker_0_collections.json"),
            kind => step_file(&t, kind, 1),
        };
        let before = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        let r = doctor(s(&t)).unwrap();
        let _ = verify(s(&t)).unwrap();
        if bytes != before && TARGETS[target] != "collections" {
            prop_assert!(!r.findings.is_empty(), "{:?}", r);
        }
    }
}
