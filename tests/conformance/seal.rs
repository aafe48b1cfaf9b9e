//! `smdebug seal` on trials the real smdebug wrote (every preset but `large`): smdebug 1.0.34
//! dumps the sealed trial exactly as before, every index entry then carries the payload CRC,
//! and one byte flipped in a record's payload afterwards is named by our reader with its
//! events file and offset.

use smdebug_conformance::{
    check, conformance_presets, peer_dir, peer_python, smdebug_bin, tempdir, write_fixture,
};
use smdebug_index::{IndexFile, TensorEntry};
use std::path::{Path, PathBuf};
use std::process::Command;

fn dump(trial: &Path, dest: &Path) {
    let o = Command::new(peer_python())
        .arg(peer_dir().join("dump.py"))
        .arg(trial)
        .args(["--out", dest.to_str().unwrap(), "--timeout", "300"])
        .env("SMDEBUG_LOG_LEVEL", "error")
        .output()
        .expect("run dump.py");
    check(o, &format!("dump.py {}", trial.display()));
}

fn assert_dumps_equal(a: &Path, b: &Path, what: &str) {
    let o = Command::new(peer_python())
        .arg(peer_dir().join("compare_dumps.py"))
        .args([a, b])
        .output()
        .expect("run compare_dumps.py");
    assert!(
        o.status.success(),
        "{what}: smdebug reads the sealed trial differently\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every index file of a local trial, parsed.
pub(crate) fn index_files(trial: &Path) -> Vec<(PathBuf, IndexFile)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&trial.join("index"), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let key = p.strip_prefix(trial).unwrap().to_str().unwrap().to_owned();
            let index = IndexFile::parse(&key, &std::fs::read(&p).unwrap()).unwrap();
            (p, index)
        })
        .collect()
}

fn seal(trial: &Path) -> std::process::Output {
    Command::new(smdebug_bin())
        .arg("seal")
        .arg(trial)
        .output()
        .unwrap()
}

#[test]
fn sealed_peer_trials_read_as_before_and_name_a_flipped_byte() {
    for preset in conformance_presets() {
        let dir = tempdir();
        let trial = write_fixture(&preset, &dir.path().join("t"));
        let before_idx = index_files(&trial);
        assert!(
            before_idx
                .iter()
                .all(|(_, i)| i.tensors.iter().all(|t| t.payload_crc32c.is_none())),
            "{preset}: the real smdebug's index files carry no payload CRC"
        );
        let before = dir.path().join("before.json");
        dump(&trial, &before);
        check(seal(&trial), &format!("smdebug seal ({preset})"));
        let after_idx = index_files(&trial);
        assert_eq!(before_idx.len(), after_idx.len());
        for ((_, a), (p, b)) in before_idx.iter().zip(&after_idx) {
            assert!(
                b.tensors.iter().all(|t| t.payload_crc32c.is_some()),
                "{preset}: {} not sealed",
                p.display()
            );
            // The same index apart from the key.
            let strip = |i: &IndexFile| {
                let mut i = i.clone();
                i.tensors.iter_mut().for_each(|t| t.payload_crc32c = None);
                i
            };
            assert_eq!(strip(b), *a);
        }
        let after = dir.path().join("after.json");
        dump(&trial, &after);
        assert_dumps_equal(&before, &after, &preset);
        // Sealing again changes nothing.
        check(seal(&trial), "second seal");

        // One byte flipped in the middle of a record's payload.
        let (_, index) = after_idx
            .iter()
            .find(|(_, i)| !i.tensors.is_empty())
            .expect("a step with records");
        let entry: &TensorEntry = &index.tensors[index.tensors.len() / 2];
        let events_key = index.meta.event_file_name.clone().unwrap();
        let events = trial.join(&events_key);
        let mut bytes = std::fs::read(&events).unwrap();
        let at = (entry.start_idx + 12 + (entry.length - 16) / 2) as usize;
        bytes[at] ^= 0x20;
        std::fs::write(&events, bytes).unwrap();
        let t = smdebug_trial::create_trial(trial.to_str().unwrap()).unwrap();
        let tensor_name = smdebug_index::reverse_reduction_tensor_name(&entry.name)
            .map_or(entry.name.as_str(), |r| r.tensor);
        let (step, worker) = index_step(index, &trial, &after_idx);
        let w = Some(worker.as_str());
        let tensor = t.tensor(tensor_name).unwrap();
        let err = match smdebug_index::reverse_reduction_tensor_name(&entry.name) {
            Some(r) => tensor
                .reduction_value(step, r.op, smdebug_trial::Mode::Global, w, r.abs)
                .map(|_| ()),
            None => tensor
                .value(step, smdebug_trial::Mode::Global, w)
                .map(|_| ()),
        };
        let msg = format!("{:#}", err.expect_err("a flipped byte must not read back"));
        assert!(
            msg.contains(&events_key) && msg.contains(&format!("byte {}", entry.start_idx)),
            "{preset}: the error must name {events_key} and byte {}: {msg}",
            entry.start_idx
        );
        // Sealing a corrupted trial is refused, naming the record.
        let o = seal(&trial);
        assert!(!o.status.success(), "{preset}: sealed a corrupt trial");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&events_key) && stderr.contains(&format!("byte {}", entry.start_idx)),
            "{preset}: {stderr}"
        );
    }
}

/// The global step and worker of an index file (from its name).
fn index_step(index: &IndexFile, trial: &Path, all: &[(PathBuf, IndexFile)]) -> (i64, String) {
    let (p, _) = all.iter().find(|(_, i)| i == index).unwrap();
    let key = p.strip_prefix(trial).unwrap().to_str().unwrap();
    match smdebug_index::classify_key(key).unwrap() {
        smdebug_index::TrialFile::Index(f) => (f.step, f.worker().into_owned()),
        other => panic!("{other:?}"),
    }
}
