//! `seal`: every entry gets its CRC; a damaged trial is refused and left untouched.

use crate::support::{s, step_file, trial};
use smdebug_diagnose::{doctor, seal, DiagnoseError, SealOptions, SealProblem};
use smdebug_index::IndexFile;

/// Writes every index file as the original smdebug does: no payload CRC.
fn unseal(t: &std::path::Path) {
    for step in 0..8 {
        let p = step_file(t, "index", step);
        let i = IndexFile::parse("i", &std::fs::read(&p).unwrap()).unwrap();
        std::fs::write(&p, i.to_python_json()).unwrap();
    }
}

#[test]
fn sealing_adds_every_crc_once() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    unseal(&t);
    assert_eq!(doctor(s(&t)).unwrap().payloads_verifiable.with_crc, 0);
    let dry = seal(s(&t), &SealOptions { dry_run: true }).unwrap();
    assert_eq!((dry.files, dry.entries, dry.already), (0, 16, 0));
    assert_eq!(doctor(s(&t)).unwrap().payloads_verifiable.with_crc, 0);
    let done = seal(s(&t), &SealOptions::default()).unwrap();
    assert_eq!((done.files, done.entries, done.already), (8, 16, 0));
    assert!(doctor(s(&t)).unwrap().payloads_verifiable.all);
    let again = seal(s(&t), &SealOptions::default()).unwrap();
    assert_eq!((again.files, again.entries, again.already), (0, 0, 8));
}

#[test]
fn a_damaged_trial_is_refused_naming_the_record() {
    let d = tempfile::tempdir().unwrap();
    let t = trial(d.path(), None);
    unseal(&t);
    let ev = step_file(&t, "events", 6);
    let bytes = std::fs::read(&ev).unwrap();
    std::fs::write(&ev, &bytes[..bytes.len() - 3]).unwrap();
    let before = std::fs::read(step_file(&t, "index", 0)).unwrap();
    let e = seal(s(&t), &SealOptions::default()).unwrap_err();
    let DiagnoseError::NotSealed { problems } = &e else {
        panic!("{e}")
    };
    let [SealProblem::BadRecord { record }] = problems.as_slice() else {
        panic!("{problems:?}")
    };
    assert_eq!(record.step, Some(6));
    let text = e.to_string();
    assert!(
        text.starts_with("not sealed: 1 record(s)")
            && text.contains(&format!("at byte {}", record.offset)),
        "{text}"
    );
    // Nothing written, not even the index files of sound steps.
    assert_eq!(std::fs::read(step_file(&t, "index", 0)).unwrap(), before);
}
