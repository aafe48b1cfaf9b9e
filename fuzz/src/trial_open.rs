//! A trial built in a `memory://` store from arbitrary bytes — a collections file, index and
//! event files of a few steps, maybe the end marker — opened and walked through the whole
//! Trial/Tensor API and the dump: typed errors, never a panic, never an unbounded wait.
use smdebug_dump::{dump_trial_with, DumpOptions};
use smdebug_trial::storage::{BlockingStore, Bytes, Location};
use smdebug_trial::{Mode, PollPolicy, TrialOptions};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

const URL: &str = "memory://fuzz-trial-open/run";
/// Separates the files in the input.
const SEP: &[u8] = b"\n--8<--\n";

fn store() -> &'static BlockingStore {
    static S: OnceLock<BlockingStore> = OnceLock::new();
    S.get_or_init(|| BlockingStore::open(&Location::parse(URL).unwrap()).unwrap())
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(SEP.len()).position(|w| w == SEP) {
        out.push(&rest[..i]);
        rest = &rest[i + SEP.len()..];
    }
    out.push(rest);
    out
}

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    // One store for every input: inputs replayed by parallel tests take turns.
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let store = store();
    for obj in store.list("", None).unwrap() {
        store.delete(&obj.key).unwrap();
    }
    // Layout: flags byte, then files separated by SEP: collections, then (index, events)
    // pairs for steps 0, 1, 2, … of worker_0 (odd flags bit 1: of worker_1 too).
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let parts = split(rest);
    let put = |key: String, bytes: &[u8]| {
        store.put(&key, Bytes::copy_from_slice(bytes)).unwrap();
    };
    put(
        "collections/000000000/worker_0_collections.json".into(),
        parts[0],
    );
    if flags & 2 != 0 {
        put(
            "collections/000000000/worker_1_collections.json".into(),
            parts[0],
        );
    }
    for (i, pair) in parts[1..].chunks(2).take(8).enumerate() {
        let step = i as i64;
        let worker = if flags & 2 != 0 && i % 2 == 1 {
            "worker_1"
        } else {
            "worker_0"
        };
        put(format!("index/000000000/{step:012}_{worker}.json"), pair[0]);
        if let Some(events) = pair.get(1) {
            put(
                format!("events/{step:012}/{step:012}_{worker}.tfevents"),
                events,
            );
        }
    }
    if flags & 1 != 0 {
        put("training_job_end.ts".into(), b"");
    }
    let options = TrialOptions {
        collections_timeout: Some(Duration::ZERO),
        poll: PollPolicy {
            initial: Duration::ZERO,
            max: Duration::ZERO,
        },
        cache_bytes: 1 << 20,
        skip_corrupt_index_files: flags & 4 != 0,
        ..TrialOptions::default()
    };
    let Ok(trial) = smdebug_trial::Trial::open(URL, options.clone()) else {
        return;
    };
    let _ = trial.wait_for_steps_timeout(&[0, 1], Mode::Global, Duration::ZERO);
    let names = trial.tensor_names().unwrap_or_default();
    for name in names.iter().take(8) {
        let Ok(t) = trial.tensor(name) else { continue };
        let _ = t.values(Mode::Global, None);
        for step in t
            .steps(Mode::Global, true)
            .unwrap_or_default()
            .into_iter()
            .take(4)
        {
            let _ = t.reduction_value(step, "l2", Mode::Global, None, true);
            let _ = t.prev_steps(step, Some(2), Mode::Global);
        }
    }
    // The dump walks every other query.
    let dump = dump_trial_with(
        URL,
        &DumpOptions {
            max_inline: 8,
            computed_reductions: flags & 8 != 0,
            global_lookup: true,
        },
        options,
    );
    assert!(dump.get("trial").is_some());
}
