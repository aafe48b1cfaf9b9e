//! The index file model (docs/src/format.md §10): what one index file holds, plus the rules
//! both of its parsers share. Reading and writing the JSON live in `index_json` (the tree
//! parser and the writer) and `index_fast` (the typed fast path).

use smdebug_config::{python_strip, Mode};

use crate::error::LayoutError;
use crate::layout::validate_relative_key;

/// The JSON key this project adds to every `tensor_payload` entry it writes: the masked
/// CRC32C of the record's payload (the serialized `Event`), so a reader can verify a value
/// although the events file itself carries only smdebug's constant footer. smdebug's reader
/// ignores unknown keys in entries.
pub const PAYLOAD_CRC_KEY: &str = "payload_crc32c";

/// One index file: where each record of one (step, worker) events file is, plus shapes.
///
/// ```
/// use smdebug_index::{IndexFile, IndexMeta, TensorEntry};
/// use smdebug_config::Mode;
///
/// let text = br#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "events/000000000003/000000000003_worker_0.tfevents"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 88}], "shape_payload": []}"#;
/// let index = IndexFile::parse("index/000000000/000000000003_worker_0.json", text)?;
/// assert_eq!(index.meta.mode, Mode::Train);
/// assert_eq!(index.tensors[0], TensorEntry { name: "a".into(), start_idx: 0, length: 88, payload_crc32c: None });
/// // What smdebug wrote, byte for byte:
/// assert_eq!(index.to_python_json().as_bytes(), text);
/// # Ok::<(), smdebug_index::IndexFileError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// `meta`.
    pub meta: IndexMeta,
    /// `tensor_payload`: one entry per record of the events file, in file order.
    pub tensors: Vec<TensorEntry>,
    /// `shape_payload`: shapes saved with `save_shape` (nothing in the events file).
    pub shapes: Vec<ShapeEntry>,
}

/// `meta` of an index file: shared by every entry of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexMeta {
    /// `mode`, written as its name (`"TRAIN"`, …).
    pub mode: Mode,
    /// `mode_step`.
    pub mode_step: i64,
    /// `event_file_name`: the events file relative to the trial root
    /// (`events/{step:012}/{step:012}_{worker}.tfevents`). Absent in files that hold only
    /// shapes.
    pub event_file_name: Option<String>,
}

impl IndexMeta {
    /// The events file as a key relative to the trial root, checked with
    /// [`validate_relative_key`] so that joining it to the trial location cannot leave the
    /// trial. `Ok(None)` for shape-only files.
    pub fn event_file_key(&self) -> Result<Option<&str>, LayoutError> {
        match &self.event_file_name {
            None => Ok(None),
            Some(name) => validate_relative_key(name).map(|()| Some(name.as_str())),
        }
    }
}

/// One `tensor_payload` entry: a whole TFRecord in the events file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    /// `tensorname`: the tag of the record (tensor or reduction name).
    pub name: String,
    /// `start_idx`: byte offset of the record (its length field) in the events file.
    pub start_idx: u64,
    /// `length`: bytes of the record including its 16 framing bytes.
    pub length: u64,
    /// `payload_crc32c`: masked CRC32C of the record's payload, when the writer was this
    /// project (smdebug does not write it).
    pub payload_crc32c: Option<u32>,
}

/// One `shape_payload` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeEntry {
    /// `tensorname`.
    pub name: String,
    /// `originalname`: the framework's name (equal to `name` unless TF renamed the tensor).
    pub original_name: String,
    /// `shape`; empty for 0-d tensors.
    pub shape: Vec<u64>,
}

/// The mode of an index file's `meta.mode`. smdebug reads it with
/// `ModeKeys[mode.strip()]`: exact names, surrounding whitespace allowed.
pub(crate) fn index_mode(text: &str) -> Option<Mode> {
    match python_strip(text) {
        "TRAIN" => Some(Mode::Train),
        "EVAL" => Some(Mode::Eval),
        "PREDICT" => Some(Mode::Predict),
        "GLOBAL" => Some(Mode::Global),
        _ => None,
    }
}

/// Largest end offset (`start_idx + length`) accepted: file offsets are signed 64-bit on
/// every platform and in HTTP range requests as servers implement them.
pub(crate) const MAX_END_OFFSET: u64 = i64::MAX as u64;
