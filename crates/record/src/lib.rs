//! The bytes of one smdebug event file: TFRecord framing with masked CRC32C, the TensorFlow
//! event protobufs, and the codec between tensors (`ndarray`) and `TensorProto` — byte for
//! byte what Python smdebug 1.0.34 writes and reads.
//!
//! This crate knows nothing about paths, steps as files or storage: it turns a tensor into
//! the bytes of a record and back. Layers above it decide where the bytes go.
//!
//! * Framing ([`RecordWriter`], [`append_record`]): `u64` LE length, masked CRC32C of the
//!   length, payload, `u32` footer. Writers choose [`Footer::Magic`] (the constant smdebug puts in `events/`
//!   files) or [`Footer::Crc`] (TensorBoard); readers ([`RecordReader`] over any `Read`,
//!   [`decode_record_at`] for an index entry's range, [`records`] over a slice) accept both.
//! * [`proto`]: the prost messages (`Event`, `Summary`, `TensorProto`, ...).
//! * [`TensorValue`] / [`DType`]: every dtype smdebug writes, encoded exactly as smdebug does.
//! * [`encode_tensor_event`] / [`decode_tensor_event`]: the whole tensor record payload;
//!   [`decode_tensor_event_encoded`] leaves the values as the record holds them
//!   ([`EncodedTensor`]: statistics straight from the bytes, no decoded array).
//!
//! # Example
//!
//! Write one tensor record the way smdebug does, then read it back from the index entry:
//!
//! ```
//! use ndarray::arr2;
//! use smdebug_record::{
//!     append_record, decode_record_at, decode_tensor_event, encode_tensor_event, mode_number,
//!     Footer, TensorValue,
//! };
//!
//! let weights = TensorValue::from(arr2(&[[1.0f32, 2.0], [3.0, 4.0]]).into_dyn());
//! let payload = encode_tensor_event("fc1.weight", &weights, 10, mode_number::TRAIN, 10, 1.7e9)?;
//!
//! let mut file = Vec::new();
//! let info = append_record(&mut file, &payload, Footer::Magic);
//! // `info.offset` and `info.len` are what the index file stores as start_idx and length.
//!
//! let record = decode_record_at(&file, info.offset, info.len)?;
//! let event = decode_tensor_event(record.payload)?;
//! assert_eq!(event.tag, "fc1.weight");
//! assert_eq!((event.step, event.mode, event.mode_step), (10, mode_number::TRAIN, 10));
//! assert_eq!(event.tensor, weights);
//! # Ok::<(), smdebug_record::RecordError>(())
//! ```
//!
//! # Differences from Python smdebug
//!
//! Reading is more capable than Python's: int8 decodes as signed (Python: uint8), and int16,
//! uint16, uint32, uint64 and complex64 decode (Python raises `KeyError`); a tensor with no
//! elements decodes to an empty array (Python returns `None` or raises); footers may be the
//! magic constant or a real CRC (Python's trial reader accepts only the magic). Writing is
//! identical.
#![deny(missing_docs, unsafe_code)]

mod crc;
mod dtype;
mod encoded;
mod error;
mod event;
mod framing;
pub mod proto;
mod tensor;
mod tensor_proto;

pub use crc::{mask, masked_crc32c, unmask, MAGIC_FOOTER};
pub use dtype::DType;
pub use encoded::{decode_tensor_event_encoded, EncodedTensor, EncodedTensorEvent};
pub use error::{Position, RecordError, RecordPart, Result};
pub use event::{
    append_tensor_event, append_tensor_event_le, decode_event, decode_tensor_event,
    decode_tensor_event_bytes, encode_tensor_event, file_version_event, graph_event,
    histogram_event, mode_number, scalar_event, tensor_event, tensor_event_from, TensorEvent,
    FILE_VERSION, MODE_PLUGIN_NAME, MODE_STEP_PLUGIN_NAME,
};
pub use framing::{
    append_record, append_record_with, decode_exact_record, decode_record_at, encode_record,
    parse_record, records, Footer, Record, RecordInfo, RecordReader, RecordRef, RecordWriter,
    SliceRecords, FOOTER_LEN, FRAMING_LEN, HEADER_LEN,
};
pub use tensor::{Element, TensorValue};

/// Re-exported so users name element types without adding the crates themselves.
pub use half::f16;
pub use ndarray;
pub use num_complex::{Complex32, Complex64};
pub use prost::Message;

#[cfg(test)]
mod tests;
