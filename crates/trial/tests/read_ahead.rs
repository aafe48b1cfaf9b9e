//! Reading ahead (`TrialOptions::read_ahead`): a walk over one tensor's steps gives the same
//! values and the same errors with the background thread as without it, also with a damaged
//! record in the walk and with several threads walking at once.

use ndarray::{ArrayD, IxDyn};
use smdebug_config::Mode;
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::write_train_trial;
use smdebug_trial::{TensorValue, Trial, TrialOptions};
use std::path::Path;

const STEPS: i64 = 48;
const NAMES: [&str; 3] = ["a", "b", "c"];
/// 120 × 120 f32: 57.6 KB a record, three to a step's events file, so that files are read
/// record by record (a file of at most 128 KiB is read whole instead).
const SIDE: usize = 120;

fn write_trial(dir: &Path) {
    let store = BlockingStore::open(&Location::Local(dir.to_path_buf())).unwrap();
    write_train_trial(&store, STEPS, |step| {
        NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = ArrayD::from_shape_fn(IxDyn(&[SIDE, SIDE]), |ix| {
                    (step * 1000 + i as i64 * 100) as f32 + (ix[0] * SIDE + ix[1]) as f32
                });
                (*n, TensorValue::Float32(v))
            })
            .collect()
    })
    .unwrap();
}

fn open(dir: &Path, read_ahead: bool) -> Trial {
    Trial::open(
        dir.to_str().unwrap(),
        TrialOptions {
            read_ahead,
            ..TrialOptions::default()
        },
    )
    .unwrap()
}

/// Every step of `name`, in order, one `value` call each: the value's bytes or the error's
/// text.
fn walk(t: &Trial, name: &str) -> Vec<Result<Vec<u8>, String>> {
    let tensor = t.tensor(name).unwrap();
    (0..STEPS)
        .map(|s| {
            tensor
                .value(s, Mode::Global, None)
                .map(|v| v.to_le_bytes())
                .map_err(|e| e.to_string())
        })
        .collect()
}

#[test]
fn a_walk_gives_the_same_values_and_errors_with_and_without_reading_ahead() {
    let dir = tempfile::tempdir().unwrap();
    write_trial(dir.path());
    let (ahead, alone) = (open(dir.path(), true), open(dir.path(), false));
    for name in NAMES {
        let got = walk(&ahead, name);
        assert!(got.iter().all(Result::is_ok), "{name}");
        assert_eq!(got, walk(&alone, name), "{name}");
    }
    // One byte of tensor "b"'s record at step 20 flipped (its payload CRC in the index
    // catches it): the walk fails there, with the same error, and nowhere else.
    let file = dir
        .path()
        .join(smdebug_index::event_file_key(20, "worker_0").unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let (ahead, alone) = (open(dir.path(), true), open(dir.path(), false));
    for name in NAMES {
        let got = walk(&ahead, name);
        let failed: Vec<usize> = (0..got.len()).filter(|&s| got[s].is_err()).collect();
        let expect: Vec<usize> = if name == "b" { vec![20] } else { vec![] };
        assert_eq!(failed, expect, "{name}: {got:?}");
        assert_eq!(got, walk(&alone, name), "{name}");
    }
}

#[test]
fn threads_walking_different_tensors_at_once_read_their_own_values() {
    let dir = tempfile::tempdir().unwrap();
    write_trial(dir.path());
    let alone = open(dir.path(), false);
    let expect: Vec<_> = NAMES.iter().map(|n| walk(&alone, n)).collect();
    let ahead = open(dir.path(), true);
    for _ in 0..3 {
        std::thread::scope(|s| {
            let walks: Vec<_> = NAMES.iter().map(|n| s.spawn(|| walk(&ahead, n))).collect();
            for (w, e) in walks.into_iter().zip(&expect) {
                assert_eq!(&w.join().unwrap(), e);
            }
        });
    }
}
