//! Small trials written file by file — event file, then index file, per step and worker;
//! collections files; the end marker — for tests and benchmarks of the reader and the rules
//! that need exact control of what lands where (a step's tensors in any order, reduction
//! records without their raw tensor, shape-only entries, workers that skip steps).
//!
//! Files are written exactly as smdebug lays them out (magic record footers, index JSON as
//! `json.dumps` writes it, plus the `payload_crc32c` key this project adds). For trials the
//! way a training job writes them, use the hook (or [`crate::write_trial`]).
//!
//! ```
//! use smdebug_config::Mode;
//! use smdebug_record::TensorValue;
//! use smdebug_storage::{BlockingStore, Location};
//! use smdebug_synth::steps::{write_step, write_train_trial, StepWrite};
//!
//! let dir = tempfile::tempdir()?;
//! let store = BlockingStore::open(&Location::parse(dir.path().to_str().unwrap())?)?;
//! write_train_trial(&store, 3, |step| {
//!     vec![("w", TensorValue::from(ndarray::arr1(&[step as f32, 1.0]).into_dyn()))]
//! })?;
//! assert!(dir.path().join("index/000000000/000000000002_worker_0.json").exists());
//! assert!(dir.path().join("training_job_end.ts").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_index::{
    collections_file_key, event_file_key, index_file_key, IndexFile, IndexMeta, ShapeEntry,
    TensorEntry, END_OF_JOB_FILE,
};
use smdebug_record::{append_record, encode_tensor_event, Footer, TensorValue};
use smdebug_storage::{BlockingStore, Bytes};

use crate::error::Result;

/// What one worker writes at one step.
#[derive(Debug, Clone)]
pub struct StepWrite<'a> {
    /// Global step.
    pub step: i64,
    /// Worker name.
    pub worker: &'a str,
    /// Mode of the step.
    pub mode: Mode,
    /// Mode step (the global step for GLOBAL).
    pub mode_step: i64,
    /// Tensor records, in file order (reduction records are named
    /// `smdebug/reductions/[abs_]OP/NAME`).
    pub tensors: &'a [(&'a str, TensorValue)],
    /// Shapes recorded in the index only.
    pub shapes: &'a [(&'a str, Vec<u64>)],
}

impl<'a> StepWrite<'a> {
    /// `tensors` of one worker at `step` in `mode`, with the global step as mode step and
    /// no shape-only entries (change fields for anything else).
    pub fn new(
        step: i64,
        worker: &'a str,
        mode: Mode,
        tensors: &'a [(&'a str, TensorValue)],
    ) -> Self {
        StepWrite {
            step,
            worker,
            mode,
            mode_step: step,
            tensors,
            shapes: &[],
        }
    }
}

/// Writes the event file (if there are tensors) and then the index file of one step and
/// worker; returns the index file's key. The event's wall time is the step number.
pub fn write_step(store: &BlockingStore, w: &StepWrite<'_>) -> Result<String> {
    let event_key = event_file_key(w.step, w.worker)?;
    let mut events = Vec::new();
    let mut meta = IndexMeta {
        mode: w.mode,
        mode_step: w.mode_step,
        event_file_name: None,
    };
    let mut entries = Vec::new();
    for (name, value) in w.tensors {
        let payload = encode_tensor_event(
            name,
            value,
            w.step,
            w.mode.as_int(),
            w.mode_step,
            w.step as f64,
        )?;
        let info = append_record(&mut events, &payload, Footer::Magic);
        entries.push(TensorEntry {
            name: (*name).to_owned(),
            start_idx: info.offset,
            length: info.len,
            payload_crc32c: Some(info.payload_crc32c),
        });
    }
    if !entries.is_empty() {
        store.put(&event_key, Bytes::from(events))?;
        meta.event_file_name = Some(event_key);
    }
    let mut index = IndexFile::new(meta);
    index.tensors = entries;
    index.shapes = w
        .shapes
        .iter()
        .map(|(name, shape)| ShapeEntry {
            name: (*name).to_owned(),
            original_name: (*name).to_owned(),
            shape: shape.clone(),
        })
        .collect();
    let key = index_file_key(w.step, w.worker)?;
    store.put(&key, Bytes::from(index.to_json().into_bytes()))?;
    Ok(key)
}

/// Writes `worker`'s collections file: one collection `all` matching every name, and
/// `_meta.num_workers`.
pub fn write_collections(store: &BlockingStore, worker: &str, num_workers: i64) -> Result<()> {
    let mut cm = CollectionManager::new();
    let mut all = Collection::new("all");
    all.include(".*")?;
    cm.add(all);
    cm.set_num_workers(num_workers);
    store.put(
        &collections_file_key(worker)?,
        Bytes::from(cm.to_json().into_bytes()),
    )?;
    Ok(())
}

/// Writes the end-of-training marker.
pub fn write_end_marker(store: &BlockingStore) -> Result<()> {
    store.put(END_OF_JOB_FILE, Bytes::new())?;
    Ok(())
}

/// A whole finished one-worker (`worker_0`) trial: its collections file, steps `0..steps`
/// in TRAIN mode (mode step = step) with the tensors `tensors(step)` gives, and the end
/// marker.
pub fn write_train_trial<N: AsRef<str>>(
    store: &BlockingStore,
    steps: i64,
    mut tensors: impl FnMut(i64) -> Vec<(N, TensorValue)>,
) -> Result<()> {
    write_collections(store, "worker_0", 1)?;
    for step in 0..steps {
        let (names, values): (Vec<N>, Vec<TensorValue>) = tensors(step).into_iter().unzip();
        let refs: Vec<(&str, TensorValue)> = names.iter().map(AsRef::as_ref).zip(values).collect();
        write_step(store, &StepWrite::new(step, "worker_0", Mode::Train, &refs))?;
    }
    write_end_marker(store)
}
