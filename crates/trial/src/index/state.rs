//! The trial's bookkeeping of what the index files said, without any I/O: which tensor has
//! which step for which worker and where its record is, the step maps, completeness,
//! `last_complete_step` and the listing token (docs/src/semantics.md §8.3–8.4, §8.7).

use smallvec::SmallVec;
use smdebug_config::Mode;
use smdebug_exceptions::StepState;
use smdebug_index::{
    index_file_key, reverse_reduction_tensor_name, serialize_tf_device, IndexFile,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Where one tensor record lives: an event file and a byte range, as an index entry says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordLocation {
    /// The event file's key relative to the trial root.
    pub event_file: Arc<str>,
    /// Offset of the record's first byte.
    pub start: u64,
    /// Whole record length including the 16 framing bytes.
    pub length: u64,
    /// Where the last record the same index file lists in this events file ends: how much
    /// of the file a reader fetches when it reads the whole file ahead.
    pub event_file_end: u64,
    /// The record's payload CRC from the index file, when the writer stored one.
    pub payload_crc32c: Option<u32>,
    /// The record's tag as the index file names it.
    pub tag: String,
    /// The index file that listed the record.
    pub index_file: Arc<str>,
    /// Global step (from the index file's name).
    pub step: i64,
    /// Mode of the step (from the index file).
    pub mode: Mode,
    /// Mode step of the step (from the index file).
    pub mode_step: i64,
}

/// What one worker saved of one tensor at one step, as the tensor API hands it out (see
/// [`StoredStep`] for how it is kept).
#[derive(Debug, Clone, Default)]
pub(crate) struct StepData {
    pub location: Option<RecordLocation>,
    pub shape: Option<Vec<u64>>,
    /// `(op, abs)` → the saved reduction's record (None for a shape entry with a reduction
    /// name, which smdebug registers without a location).
    pub reductions: BTreeMap<(String, bool), Option<RecordLocation>>,
}

/// What one index file says about all of its records: kept once per file, not per record.
#[derive(Debug)]
pub(crate) struct FileInfo {
    event_file: Arc<str>,
    index_file: Arc<str>,
    event_file_end: u64,
    step: i64,
    mode: Mode,
    mode_step: i64,
}

/// One record as kept: the number of its index file in [`State::files`], its byte range
/// and CRC — 24 bytes, and 24 as an `Option` too. The tag is the tensor's name for a raw
/// value (an index entry that is not a reduction names its tensor exactly); a reduction
/// keeps its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec {
    start: u64,
    length: u64,
    /// The index file's number plus one, with [`HAS_CRC`] set when `crc` is the index's
    /// `payload_crc32c` (never zero: `Option<Rec>` needs no extra word).
    file: NonZeroU32,
    crc: u32,
}

/// The bit of [`Rec::file`] that says the record has a payload CRC.
const HAS_CRC: u32 = 1 << 31;

impl Rec {
    /// `None` past 2³¹ − 1 index files.
    fn new(file: u32, start: u64, length: u64, crc: Option<u32>) -> Option<Rec> {
        let number = file.checked_add(1).filter(|n| n & HAS_CRC == 0)?;
        let flag = if crc.is_some() { HAS_CRC } else { 0 };
        Some(Rec {
            start,
            length,
            file: NonZeroU32::new(number | flag)?,
            crc: crc.unwrap_or(0),
        })
    }

    fn file(&self) -> usize {
        ((self.file.get() & !HAS_CRC) - 1) as usize
    }

    fn crc(&self) -> Option<u32> {
        (self.file.get() & HAS_CRC != 0).then_some(self.crc)
    }
}

/// What one worker saved of one tensor at one step, as kept for every (tensor, step,
/// worker) entry of the trial: [`BYTES_PER_ENTRY`] bytes with the worker's number, plus
/// saved reductions' own allocations when there are any.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredStep {
    pub location: Option<Rec>,
    /// The saved shape, by its number in [`State::shapes`] (every step saves the same few
    /// shapes: each is kept once).
    pub shape: Option<u32>,
    /// `(op, abs)` → the saved reduction's record and its tag; boxed, since most entries
    /// have none (8 bytes instead of an empty map's 24).
    pub reductions: Option<Box<Reductions>>,
}

/// The saved reductions of one entry.
pub(crate) type Reductions = BTreeMap<(String, bool), Option<TaggedRec>>;

impl StoredStep {
    fn reductions_mut(&mut self) -> &mut Reductions {
        self.reductions.get_or_insert_with(Default::default)
    }

    fn reductions(&self) -> impl Iterator<Item = (&(String, bool), &Option<TaggedRec>)> {
        self.reductions.iter().flat_map(|r| r.iter())
    }
}

/// A saved reduction's record and the name its index entry gives it.
pub(crate) type TaggedRec = (Rec, Box<str>);

/// Bytes kept per (tensor, step, worker) index entry with a raw value and no saved
/// reduction, whatever the number of workers (docs/src/scale.md): the entry itself, in its
/// step's list of workers. The list grows by doubling, so up to twice this is reserved.
pub const BYTES_PER_ENTRY: usize = std::mem::size_of::<(WorkerId, StoredStep)>();

/// A worker by its number in [`State::worker_names`].
pub(crate) type WorkerId = u32;

/// What each worker saved of a tensor at one step, workers in first-seen order.
pub(crate) type Workers = SmallVec<[(WorkerId, StoredStep); 1]>;

/// The mode steps of a tensor in one mode, ascending, each with its [`Workers`]. Steps are
/// registered in ascending order almost always, so this is a sorted vector that appends
/// rather than a tree that allocates a node every few steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepMap(Vec<(i64, Workers)>);

impl StepMap {
    pub fn get(&self, mode_step: i64) -> Option<&Workers> {
        self.0
            .binary_search_by_key(&mode_step, |(s, _)| *s)
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// `(mode step, workers)` of the steps after `mode_step`, in ascending order.
    pub fn after(&self, mode_step: i64) -> impl Iterator<Item = (i64, &Workers)> {
        let from = self.0.partition_point(|(s, _)| *s <= mode_step);
        self.0[from..].iter().map(|(s, w)| (*s, w))
    }

    /// `(mode step, workers)` in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &Workers)> {
        self.0.iter().map(|(s, w)| (*s, w))
    }

    pub fn values(&self) -> impl Iterator<Item = &Workers> {
        self.0.iter().map(|(_, w)| w)
    }

    /// The workers of `mode_step`, added when new.
    fn entry(&mut self, mode_step: i64) -> &mut Workers {
        let i = match self.0.last() {
            Some((last, _)) if *last == mode_step => self.0.len() - 1,
            Some((last, _)) if *last > mode_step => {
                match self.0.binary_search_by_key(&mode_step, |(s, _)| *s) {
                    Ok(i) => i,
                    Err(i) => {
                        self.0.insert(i, (mode_step, Workers::new()));
                        i
                    }
                }
            }
            _ => {
                self.0.push((mode_step, Workers::new()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
}

/// Everything known about one tensor.
#[derive(Debug, Clone, Default)]
pub(crate) struct TensorData {
    pub original_name: Option<String>,
    /// mode → mode step → workers in first-seen order.
    pub modes: BTreeMap<Mode, StepMap>,
}

impl TensorData {
    pub fn step_dict(&self, mode: Mode, mode_step: i64) -> Option<&Workers> {
        self.modes.get(&mode).and_then(|m| m.get(mode_step))
    }

    fn entry(&mut self, mode: Mode, mode_step: i64, worker: WorkerId) -> &mut StoredStep {
        let workers = self.modes.entry(mode).or_default().entry(mode_step);
        let i = match workers.iter().position(|(w, _)| *w == worker) {
            Some(i) => i,
            None => {
                workers.push((worker, StoredStep::default()));
                workers.len() - 1
            }
        };
        &mut workers[i].1
    }
}

/// The tensors of a trial by name: data in a vector, names sorted in a map, so that
/// registering can reach a tensor by its number without searching the names again.
#[derive(Debug, Default)]
pub(crate) struct Tensors {
    ids: BTreeMap<Arc<str>, usize>,
    data: Vec<TensorData>,
    /// Each number's name (the same allocation as its key in `ids`).
    names: Vec<Arc<str>>,
}

impl Tensors {
    /// The tensor's number, if the trial has seen it.
    pub fn id_of(&self, name: &str) -> Option<usize> {
        self.ids.get(name).copied()
    }

    /// The data of tensor number `id` (numbers from [`Tensors::id_of`]; never reused).
    pub fn by_id(&self, id: usize) -> Option<&TensorData> {
        self.data.get(id)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.ids.contains_key(name)
    }

    /// Names in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.ids.keys().map(|k| &**k)
    }

    /// Every tensor's name and data, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &TensorData)> {
        self.names.iter().map(|n| &**n).zip(self.data.iter())
    }

    /// The tensor's number, adding it when new.
    fn id(&mut self, name: &str) -> usize {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.data.len();
        let name: Arc<str> = Arc::from(name);
        self.ids.insert(Arc::clone(&name), i);
        self.data.push(TensorData::default());
        self.names.push(name);
        i
    }

    fn name(&self, id: usize) -> &Arc<str> {
        &self.names[id]
    }
}

/// What an index entry's name resolved to, remembered from the previous index file: most
/// index files list the same names in the same order as the one before.
#[derive(Debug)]
struct Resolved {
    entry_name: String,
    tensor: usize,
    reduction: Option<(String, bool)>,
}

/// The index bookkeeping of a trial.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub tensors: Tensors,
    pub global_to_mode: BTreeMap<i64, (Mode, i64)>,
    pub mode_to_global: BTreeMap<Mode, BTreeMap<i64, i64>>,
    pub workers_for_global_step: BTreeMap<i64, BTreeSet<String>>,
    /// Global step → numbers of the tensors saved there (see [`Tensors`]).
    pub global_step_to_tensors: BTreeMap<i64, BTreeSet<usize>>,
    pub mode_to_tensors: BTreeMap<Mode, BTreeSet<String>>,
    pub last_complete_step: i64,
    /// The start-after key of the next index listing, relative to the trial root.
    pub last_index_token: Option<String>,
    pub loaded_all_steps: bool,
    /// The end marker was seen when the trial was opened, before the open's listing ended:
    /// that listing was the first of smdebug's two final refreshes (docs/src/semantics.md
    /// §8.5), so the next refresh is the last.
    pub ended_at_open: bool,
    pub dynamic_refresh: bool,
    /// Index files already read that sort after the token (bounded, see `remember_read`).
    pub read_files: BTreeSet<String>,
    pub workers: BTreeSet<String>,
    pub num_workers: usize,
    /// Skipped unparsable index files: global step → (key, error).
    pub index_errors: BTreeMap<i64, (String, smdebug_index::IndexFileError)>,
    /// How the entries of the last registered index file resolved, in their order.
    resolved: Vec<Resolved>,
    /// Every registered index file, numbered in registration order (see [`Rec`]).
    files: Vec<FileInfo>,
    /// Worker names by number (see [`WorkerId`]), and their numbers.
    worker_names: Vec<Arc<str>>,
    worker_ids: HashMap<Arc<str>, WorkerId>,
    /// Saved shapes by number (see [`StoredStep::shape`]), and their numbers.
    shapes: Vec<Box<[u64]>>,
    shape_ids: HashMap<Box<[u64]>, u32>,
}

/// Soft limit of remembered index file names (smdebug's `ReadIndexFilesCache.cache_limit`).
const READ_FILES_LIMIT: usize = 1000;

impl State {
    pub fn new() -> Self {
        State {
            last_complete_step: -1,
            dynamic_refresh: true,
            ..Default::default()
        }
    }

    pub fn has_read(&self, key: &str) -> bool {
        self.read_files.contains(key)
    }

    /// Remembers an index file as read; past the soft limit, names sorting before the token
    /// are forgotten (a listing never returns them again).
    pub fn remember_read(&mut self, key: &str) {
        if self.read_files.len() > READ_FILES_LIMIT {
            let token = self.last_index_token.clone().unwrap_or_default();
            self.read_files = self.read_files.split_off(token.as_str());
        }
        self.read_files.insert(key.to_owned());
    }

    /// Forgets the index files read that sort before the token: no listing returns them
    /// again. Called after each refresh, so that opening a large trial does not keep the
    /// name of every index file it read.
    pub fn forget_read_before_token(&mut self) {
        if let Some(token) = &self.last_index_token {
            self.read_files = self.read_files.split_off(token.as_str());
        }
    }

    /// Registers every entry of one index file (`step` and `worker` from its name).
    pub fn register_index_file(&mut self, key: &str, step: i64, worker: &str, index: IndexFile) {
        if index.tensors.is_empty() && index.shapes.is_empty() {
            return;
        }
        let mode = index.meta.mode;
        let mode_step = index.meta.mode_step;
        let worker_name = worker;
        let worker = self.worker_id(worker);
        // The index crate validated the name (a relative key under events/).
        let event_file: Option<Arc<str>> =
            index.meta.event_file_key().ok().flatten().map(Arc::from);
        self.populate_step(mode, mode_step, step, worker_name);
        let event_file_end = index
            .tensors
            .iter()
            .map(|e| e.start_idx.saturating_add(e.length))
            .max()
            .unwrap_or(0);
        let file = match (&event_file, u32::try_from(self.files.len())) {
            (Some(ev), Ok(n)) => {
                self.files.push(FileInfo {
                    event_file: Arc::clone(ev),
                    index_file: Arc::from(key),
                    event_file_end,
                    step,
                    mode,
                    mode_step,
                });
                Some(n)
            }
            _ => None,
        };
        let tensors_len = index.tensors.len();
        let mut ids = Vec::with_capacity(tensors_len + index.shapes.len());
        for (i, entry) in index.tensors.into_iter().enumerate() {
            let (id, reduction) = self.resolve(i, &entry.name);
            let location = file.and_then(|file| {
                Rec::new(file, entry.start_idx, entry.length, entry.payload_crc32c)
            });
            let new_in_mode = !self.tensors.data[id].modes.contains_key(&mode);
            self.populate_tensor(id, mode, new_in_mode);
            ids.push(id);
            let step_data = self.tensors.data[id].entry(mode, mode_step, worker);
            match reduction {
                Some(key) => {
                    let tagged = location.map(|r| (r, entry.name.into_boxed_str()));
                    step_data.reductions_mut().insert(key, tagged);
                }
                // A name listed twice in one file: the last entry wins, as in smdebug.
                None => step_data.location = location,
            }
        }
        for (i, entry) in index.shapes.into_iter().enumerate() {
            let (id, reduction) = self.resolve(tensors_len + i, &entry.name);
            let shape = match reduction {
                Some(_) => None,
                None => self.shape_id(entry.shape),
            };
            let data = &mut self.tensors.data[id];
            let new_in_mode = !data.modes.contains_key(&mode);
            let step_data = data.entry(mode, mode_step, worker);
            match reduction {
                Some(key) => {
                    step_data.reductions_mut().entry(key).or_insert(None);
                }
                None => {
                    // smdebug replaces a raw value's location by the shape here [PY-BUG];
                    // both are kept.
                    step_data.shape = shape;
                    data.original_name = Some(entry.original_name);
                }
            }
            self.populate_tensor(id, mode, new_in_mode);
            ids.push(id);
        }
        ids.sort_unstable();
        ids.dedup();
        let at_step = self.global_step_to_tensors.entry(step).or_default();
        if at_step.is_empty() {
            // Built from sorted numbers in one go rather than inserted one by one.
            *at_step = ids.into_iter().collect();
        } else {
            at_step.extend(ids);
        }
    }

    /// The number of worker `name`, numbering it when new.
    fn worker_id(&mut self, name: &str) -> WorkerId {
        if let Some(&id) = self.worker_ids.get(name) {
            return id;
        }
        let id = self.worker_names.len() as WorkerId;
        let name: Arc<str> = Arc::from(name);
        self.worker_names.push(Arc::clone(&name));
        self.worker_ids.insert(name, id);
        id
    }

    /// The number of worker `name`, if an index file named it.
    pub fn find_worker(&self, name: &str) -> Option<WorkerId> {
        self.worker_ids.get(name).copied()
    }

    /// The name of worker number `id`.
    pub fn worker_name(&self, id: WorkerId) -> &str {
        &self.worker_names[id as usize]
    }

    /// The number of a saved shape, numbering it when new (`None` past 2³² shapes: the
    /// shape is then not kept).
    fn shape_id(&mut self, shape: Vec<u64>) -> Option<u32> {
        if let Some(&id) = self.shape_ids.get(shape.as_slice()) {
            return Some(id);
        }
        let id = u32::try_from(self.shapes.len()).ok()?;
        let shape = shape.into_boxed_slice();
        self.shapes.push(shape.clone());
        self.shape_ids.insert(shape, id);
        Some(id)
    }

    /// The tensor number and reduction key of the `i`th entry of an index file, reusing the
    /// previous index file's answer when its `i`th entry had the same name.
    fn resolve(&mut self, i: usize, name: &str) -> (usize, Option<(String, bool)>) {
        if let Some(r) = self.resolved.get(i) {
            if r.entry_name == name {
                return (r.tensor, r.reduction.clone());
            }
        }
        let (tensor, reduction) = split_name(name);
        let id = self.tensors.id(&tensor);
        let r = Resolved {
            entry_name: name.to_owned(),
            tensor: id,
            reduction: reduction.clone(),
        };
        if i < self.resolved.len() {
            self.resolved[i] = r;
        } else {
            self.resolved.push(r);
        }
        (id, reduction)
    }

    /// The record `r` as the tensor API hands it out, tagged `tag`.
    pub fn location(&self, r: &Rec, tag: &str) -> RecordLocation {
        let f = &self.files[r.file()];
        RecordLocation {
            event_file: Arc::clone(&f.event_file),
            start: r.start,
            length: r.length,
            event_file_end: f.event_file_end,
            payload_crc32c: r.crc(),
            tag: tag.to_owned(),
            index_file: Arc::clone(&f.index_file),
            step: f.step,
            mode: f.mode,
            mode_step: f.mode_step,
        }
    }

    /// One entry of tensor `name` as the tensor API hands it out.
    pub fn step_data(&self, name: &str, d: &StoredStep) -> StepData {
        StepData {
            location: d.location.as_ref().map(|r| self.location(r, name)),
            shape: d.shape.map(|s| self.shapes[s as usize].to_vec()),
            reductions: d
                .reductions()
                .map(|(k, v)| (k.clone(), v.as_ref().map(|(r, tag)| self.location(r, tag))))
                .collect(),
        }
    }

    /// Every record of one entry: the raw value's, then the saved reductions'.
    pub fn entry_locations(&self, name: &str, d: &StoredStep) -> Vec<RecordLocation> {
        let raw = d.location.as_ref().map(|r| self.location(r, name));
        let reductions = d
            .reductions()
            .filter_map(|(_, v)| v.as_ref())
            .map(|(r, tag)| self.location(r, tag));
        raw.into_iter().chain(reductions).collect()
    }

    /// The step-level bookkeeping of an index file with at least one entry.
    fn populate_step(&mut self, mode: Mode, mode_step: i64, step: i64, worker: &str) {
        if mode != Mode::Global {
            self.mode_to_global
                .entry(mode)
                .or_default()
                .entry(mode_step)
                .or_insert(step);
        }
        self.global_to_mode.entry(step).or_insert((mode, mode_step));
        let workers = self.workers_for_global_step.entry(step).or_default();
        insert_str(workers, worker);
        if workers.len() == self.num_workers && step > self.last_complete_step {
            self.last_complete_step = step;
        }
    }

    /// The mode-level bookkeeping of one entry; `new_in_mode`: the tensor had no entry in
    /// `mode` yet (a tensor is in `mode_to_tensors` exactly when it has one).
    fn populate_tensor(&mut self, id: usize, mode: Mode, new_in_mode: bool) {
        if mode != Mode::Global && new_in_mode {
            insert_str(
                self.mode_to_tensors.entry(mode).or_default(),
                self.tensors.name(id),
            );
        }
    }

    /// Names of the tensors saved at global step `step`, sorted.
    pub fn tensors_at_step(&self, step: i64) -> Vec<String> {
        let mut names: Vec<String> = self
            .global_step_to_tensors
            .get(&step)
            .into_iter()
            .flatten()
            .map(|&id| self.tensors.name(id).to_string())
            .collect();
        names.sort_unstable();
        names
    }

    /// smdebug's `_update_last_index_token` (docs/src/semantics.md §8.4), called after a listing.
    pub fn update_last_index_token(&mut self, window: i64) {
        let token_step = self
            .last_index_token
            .as_deref()
            .and_then(|t| smdebug_index::parse_step_file_name(t).ok())
            .map_or(0, |f| f.step);
        let Some(last_worker) = self
            .workers
            .iter()
            .next_back()
            .map(|w| serialize_tf_device(w))
        else {
            return;
        };
        if self.last_complete_step >= token_step {
            if let Ok(key) = index_file_key(self.last_complete_step, &last_worker) {
                self.last_index_token = Some(key);
            }
        }
        let waiting = self.global_to_mode.len() as i64 - (self.last_complete_step + 1);
        if waiting > window {
            let step = self.last_complete_step + window / 2;
            if let Ok(key) = index_file_key(step, &last_worker) {
                self.last_index_token = Some(key);
                self.last_complete_step = step;
            }
        }
    }

    /// Sorted global steps (GLOBAL) or mode steps, all of them.
    pub fn all_steps(&self, mode: Mode) -> Vec<i64> {
        if mode == Mode::Global {
            self.global_to_mode.keys().copied().collect()
        } else {
            self.mode_to_global
                .get(&mode)
                .map(|m| m.keys().copied().collect())
                .unwrap_or_default()
        }
    }

    pub fn global_step_currently(&self, mode: Mode, mode_step: i64) -> Option<i64> {
        if mode == Mode::Global {
            return Some(mode_step);
        }
        self.mode_to_global.get(&mode)?.get(&mode_step).copied()
    }

    fn step_workers(&self, global: i64) -> usize {
        self.workers_for_global_step
            .get(&global)
            .map_or(0, |w| w.len())
    }

    /// Whether a global step counts as complete for `steps()`.
    pub fn is_complete(&self, global: i64) -> bool {
        self.step_workers(global) == self.num_workers
            || self.loaded_all_steps
            || self.last_complete_step >= global
    }

    pub fn steps(&self, mode: Mode, show_incomplete: bool) -> Vec<i64> {
        let all = self.all_steps(mode);
        if show_incomplete {
            return all;
        }
        all.into_iter()
            .filter(|&s| {
                self.global_step_currently(mode, s)
                    .is_some_and(|g| self.is_complete(g))
            })
            .collect()
    }

    /// docs/src/semantics.md §8.7, over the current state (the caller refreshes first).
    pub fn has_passed_step(&self, step: i64, mode: Mode) -> StepState {
        let steps = self.all_steps(mode);
        let i = steps.partition_point(|&s| s < step);
        if let Some(&found) = steps.get(i) {
            let g = self.global_step_currently(mode, found).unwrap_or(found);
            if found > step {
                return if self.last_complete_step >= g {
                    StepState::Unavailable
                } else {
                    StepState::NotYetAvailable
                };
            }
            // Python logs `workers_for_global_step[step]` with the mode step here and fails
            // with KeyError when no global step has that number [PY-BUG]; the answer is
            // AVAILABLE.
            return if self.step_workers(g) == self.num_workers
                || self.loaded_all_steps
                || g <= self.last_complete_step
            {
                StepState::Available
            } else {
                StepState::NotYetAvailable
            };
        }
        if self.loaded_all_steps {
            StepState::Unavailable
        } else {
            StepState::NotYetAvailable
        }
    }
}

/// Inserts `s` unless present, allocating only when it is new (opening a trial inserts
/// every tensor name once per step; almost all are already there).
fn insert_str(set: &mut BTreeSet<String>, s: &str) {
    if !set.contains(s) {
        set.insert(s.to_owned());
    }
}

/// `(tensor, Some((op, abs)))` for a reduction record's name, `(name, None)` otherwise.
fn split_name(name: &str) -> (String, Option<(String, bool)>) {
    match reverse_reduction_tensor_name(name) {
        Some(r) => (r.tensor.to_owned(), Some((r.op.to_owned(), r.abs))),
        None => (name.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_maps_stay_sorted_whatever_the_order_steps_arrive_in() {
        let mut m = StepMap::default();
        for step in [5, 7, 7, 2, 9, 0, 5, 8] {
            let workers = m.entry(step);
            if workers.is_empty() {
                workers.push((0, StoredStep::default()));
            }
        }
        let steps: Vec<i64> = m.iter().map(|(s, _)| s).collect();
        assert_eq!(steps, [0, 2, 5, 7, 8, 9]);
        assert!(m.values().all(|ws| ws.len() == 1));
        assert!(m.get(7).is_some());
        assert!(m.get(6).is_none());
        assert!(m.get(-1).is_none() && m.get(10).is_none());
    }

    #[test]
    fn an_entry_costs_a_bounded_number_of_bytes() {
        // docs/src/scale.md states this number; change both together.
        assert_eq!(BYTES_PER_ENTRY, 48, "{BYTES_PER_ENTRY} bytes per entry");
        assert_eq!(std::mem::size_of::<Option<Rec>>(), 24);
    }

    #[test]
    fn records_keep_their_index_files_facts_and_reductions_their_tags() {
        let mut st = State::new();
        st.num_workers = 1;
        let json = r#"{"meta": {"mode": "TRAIN", "mode_step": 3, "event_file_name": "events/000000000007/000000000007_worker_0.tfevents"}, "tensor_payload": [{"tensorname": "a:0", "start_idx": 0, "length": 40}, {"tensorname": "smdebug/reductions/abs_max/a", "start_idx": 40, "length": 24}], "shape_payload": []}"#;
        let key = "index/000000000/000000000007_worker_0.json";
        let index = IndexFile::parse(key, json.as_bytes()).unwrap();
        st.register_index_file(key, 7, "worker_0", index);
        let (name, data) = st.tensors.iter().find(|(n, _)| *n == "a:0").unwrap();
        let (_, d) = &data.step_dict(Mode::Train, 3).unwrap()[0];
        let locs = st.entry_locations(name, d);
        assert_eq!(locs.len(), 1, "the reduction of `a` is a tensor of its own");
        assert_eq!(
            (locs[0].tag.as_str(), locs[0].start, locs[0].length),
            ("a:0", 0, 40)
        );
        assert_eq!(
            (locs[0].step, locs[0].mode_step, locs[0].event_file_end),
            (7, 3, 64)
        );
        assert_eq!(&*locs[0].index_file, key);
        let (name, data) = st.tensors.iter().find(|(n, _)| *n == "a").unwrap();
        let (_, d) = &data.step_dict(Mode::Train, 3).unwrap()[0];
        let full = st.step_data(name, d);
        let red = full.reductions[&("max".to_owned(), true)].as_ref().unwrap();
        assert_eq!(red.tag, "smdebug/reductions/abs_max/a");
        assert_eq!(red.start, 40);
    }
}
