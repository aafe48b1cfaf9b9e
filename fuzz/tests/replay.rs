//! Every fuzz target on its committed seeds (`fuzz/seeds/<target>/`), on the local corpus
//! that `cargo xtask fuzz` grew (`fuzz/corpus/<target>/`, absent on a fresh clone), and on
//! proptest's mutations of the seeds: bit flips, overwritten, inserted and removed bytes,
//! truncations and splices of two seeds. A panic in any target fails the test and names the
//! input. Each test prints how many inputs it ran.
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Mutations per target (`PROPTEST_CASES` overrides it).
const MUTATIONS: u32 = 2_000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The files of `dir`, sorted by name; none when it does not exist.
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

fn target(name: &str) -> fn(&[u8]) {
    smdebug_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fuzz target {name}"))
        .1
}

/// Runs `run` on `data`; a panic is re-raised with the input's name.
fn run_named(run: fn(&[u8]), what: &str, data: &[u8]) {
    if let Err(panic) = std::panic::catch_unwind(|| run(data)) {
        let msg = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "{what} ({} bytes) panicked: {msg}\ninput: {data:?}",
            data.len()
        );
    }
}

/// One edit of a mutation.
#[derive(Debug, Clone)]
enum Edit {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Remove {
        at: usize,
        len: usize,
    },
    Truncate {
        at: usize,
    },
    Splice {
        other: usize,
        from: usize,
        at: usize,
    },
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        (
            at,
            prop_oneof![Just(0u8), Just(0xff), Just(b'"'), Just(b'{'), any::<u8>()]
        )
            .prop_map(|(at, byte)| Edit::Set { at, byte }),
        (at, prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        (at, 1usize..64).prop_map(|(at, len)| Edit::Remove { at, len }),
        at.prop_map(|at| Edit::Truncate { at }),
        (any::<usize>(), any::<usize>(), at).prop_map(|(other, from, at)| Edit::Splice {
            other,
            from,
            at
        }),
    ]
}

fn apply(mut data: Vec<u8>, edits: &[Edit], seeds: &[Vec<u8>]) -> Vec<u8> {
    for e in edits {
        let pos = |at: usize, len: usize| if len == 0 { 0 } else { at % (len + 1) };
        match e {
            Edit::Flip { at, bit } if !data.is_empty() => {
                let i = at % data.len();
                data[i] ^= 1 << bit;
            }
            Edit::Set { at, byte } if !data.is_empty() => {
                let i = at % data.len();
                data[i] = *byte;
            }
            Edit::Insert { at, bytes } => {
                let i = pos(*at, data.len());
                data.splice(i..i, bytes.iter().copied());
            }
            Edit::Remove { at, len } if !data.is_empty() => {
                let i = at % data.len();
                let end = (i + len).min(data.len());
                data.drain(i..end);
            }
            Edit::Truncate { at } => {
                let i = pos(*at, data.len());
                data.truncate(i);
            }
            Edit::Splice { other, from, at } => {
                let o = &seeds[other % seeds.len()];
                let f = pos(*from, o.len());
                let i = pos(*at, data.len());
                data.truncate(i);
                data.extend_from_slice(&o[f..]);
            }
            _ => {}
        }
    }
    data
}

/// Runs `name` on its seeds, its corpus and the seeds' mutations; prints the counts.
fn replay(name: &str) {
    let run = target(name);
    let seeds = inputs(&fuzz_dir().join("seeds").join(name));
    assert!(!seeds.is_empty(), "fuzz/seeds/{name} holds no seed");
    let corpus = inputs(&fuzz_dir().join("corpus").join(name));
    for (path, data) in seeds.iter().chain(&corpus) {
        run_named(run, &path.display().to_string(), data);
    }
    let seed_bytes: Vec<Vec<u8>> = seeds.into_iter().map(|(_, d)| d).collect();
    let n_seeds = seed_bytes.len();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(MUTATIONS);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        0..n_seeds,
        prop::collection::vec(edit(), 1..6),
        prop::collection::vec(any::<u8>(), 0..64),
        0u8..8,
    );
    runner
        .run(&strategy, |(seed, edits, random, kind)| {
            // One case in eight is random bytes rather than a mutated seed.
            let data = if kind == 0 {
                random
            } else {
                apply(seed_bytes[seed].clone(), &edits, &seed_bytes)
            };
            run(&data);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("fuzz target {name}: {e}"));
    // Written to the process's stderr itself, past libtest's capture of `eprintln!`, so
    // that the counts are in every `cargo test` log.
    let _ = writeln!(
        std::io::stderr(),
        "fuzz replay {name}: {n_seeds} seeds, {} corpus inputs, {cases} mutations",
        corpus.len()
    );
}

macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        #[test]
        fn every_target_is_replayed() {
            let mut tested = vec![$(stringify!($name)),*];
            let mut all: Vec<&str> = smdebug_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
            tested.sort();
            all.sort();
            assert_eq!(tested, all);
        }
    };
}

replay_tests!(
    config_collections_json,
    config_hook_json,
    index_json,
    record_event,
    record_framing,
    storage_location,
    trial_open,
);
