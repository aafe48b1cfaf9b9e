//! Event-level helpers: the exact `Event` smdebug writes for a tensor, parsing it back, and
//! the TensorBoard events (scalar, histogram, file version, graph).
use crate::dtype::DType;
use crate::error::{RecordError, Result};
use crate::framing::{append_record_with, Footer, RecordInfo, FRAMING_LEN};
use crate::proto::TensorProto;
use crate::proto::{
    event, summary, summary_metadata, Event, HistogramProto, Summary, SummaryMetadata,
};
use crate::tensor::TensorValue;
use crate::tensor_proto::numeric_header;
use prost::encoding::{self, encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

/// Plugin name of the metadata entry holding the mode step.
pub const MODE_STEP_PLUGIN_NAME: &str = "mode_step";
/// Plugin name of the metadata entry holding the mode number.
pub const MODE_PLUGIN_NAME: &str = "mode";

/// The mode numbers smdebug writes in the `mode` plugin entry (`ModeKeys` values). This crate
/// only carries the number; `smdebug-config` owns the `Mode` type.
pub mod mode_number {
    /// `ModeKeys.TRAIN`.
    pub const TRAIN: u8 = 1;
    /// `ModeKeys.EVAL`.
    pub const EVAL: u8 = 2;
    /// `ModeKeys.PREDICT`.
    pub const PREDICT: u8 = 3;
    /// `ModeKeys.GLOBAL`: also what a reader assumes when an event carries no mode.
    pub const GLOBAL: u8 = 4;
}

/// `file_version` of TensorFlow/TensorBoard event files.
pub const FILE_VERSION: &str = "brain.Event:2";

/// A tensor record of a trial's `events/` file, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorEvent {
    /// The Summary tag: the tensor name (raw tensor or reduction name).
    pub tag: String,
    /// The value.
    pub tensor: TensorValue,
    /// Global step (0 when the event omits it).
    pub step: i64,
    /// Mode number, 1..=4 ([`mode_number`]); GLOBAL (4) when the event has no `mode` entry.
    pub mode: u8,
    /// Mode step; the global step when the event has no `mode_step` entry.
    pub mode_step: i64,
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
}

fn check_mode(mode: i64) -> Result<u8> {
    match u8::try_from(mode) {
        Ok(m @ mode_number::TRAIN..=mode_number::GLOBAL) => Ok(m),
        _ => Err(RecordError::unexpected_event(format!(
            "mode {mode} is not one of 1 (TRAIN), 2 (EVAL), 3 (PREDICT), 4 (GLOBAL)"
        ))),
    }
}

/// Builds the `Event` smdebug's `FileWriter.write_tensor` writes: `wall_time`, `step`
/// (omitted on the wire when 0), and a summary with one value `{tag, tensor, metadata}` whose
/// metadata holds the plugin entries `mode_step` then `mode` as decimal text.
///
/// Fails for a mode outside 1..=4 and for tensors smdebug cannot encode
/// (see [`TensorValue::to_proto`]).
pub fn tensor_event(
    tag: &str,
    tensor: &TensorValue,
    step: i64,
    mode: u8,
    mode_step: i64,
    wall_time: f64,
) -> Result<Event> {
    let metadata = mode_metadata(mode, mode_step)?;
    Ok(Event {
        wall_time,
        step,
        what: Some(event::What::Summary(Summary {
            value: vec![summary::Value {
                tag: tag.to_owned(),
                metadata: Some(metadata),
                value: Some(summary::value::Value::Tensor(tensor.to_proto(tag)?)),
                ..Default::default()
            }],
        })),
    })
}

/// The summary metadata of a tensor event: mode step and mode as plugin data (fails for a
/// mode outside 1..=4).
fn mode_metadata(mode: u8, mode_step: i64) -> Result<SummaryMetadata> {
    check_mode(i64::from(mode))?;
    Ok(SummaryMetadata {
        plugin_data: vec![
            summary_metadata::PluginData {
                plugin_name: MODE_STEP_PLUGIN_NAME.to_owned(),
                content: mode_step.to_string().into_bytes(),
            },
            summary_metadata::PluginData {
                plugin_name: MODE_PLUGIN_NAME.to_owned(),
                content: mode.to_string().into_bytes(),
            },
        ],
    })
}

/// [`tensor_event`] serialized: the payload of one record of an `events/` file.
///
/// ```
/// use smdebug_record::{encode_tensor_event, decode_tensor_event, mode_number, TensorValue};
/// let value = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
/// let payload = encode_tensor_event("a", &value, 3, mode_number::TRAIN, 1, 1.6e9)?;
/// assert_eq!(payload.len(), 72); // the worked example of docs/src/format.md §6.2
/// let back = decode_tensor_event(&payload)?;
/// assert_eq!((back.tag.as_str(), back.step, back.mode, back.mode_step), ("a", 3, 1, 1));
/// assert_eq!(back.tensor, value);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
pub fn encode_tensor_event(
    tag: &str,
    tensor: &TensorValue,
    step: i64,
    mode: u8,
    mode_step: i64,
    wall_time: f64,
) -> Result<Vec<u8>> {
    Ok(tensor_event(tag, tensor, step, mode, mode_step, wall_time)?.encode_to_vec())
}

/// Frames [`tensor_event`] as one record at the end of `out` (an events file being
/// assembled), encoding the event in place: the bytes equal
/// `append_record(out, &encode_tensor_event(..)?, footer)` with one copy of the tensor less.
///
/// ```
/// use smdebug_record::{append_record, append_tensor_event, encode_tensor_event, Footer, TensorValue};
/// let value = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
/// let mut direct = Vec::new();
/// let info = append_tensor_event(&mut direct, "a", &value, 3, 1, 1, 1.6e9, Footer::Magic)?;
/// let mut copied = Vec::new();
/// let payload = encode_tensor_event("a", &value, 3, 1, 1, 1.6e9)?;
/// assert_eq!(info, append_record(&mut copied, &payload, Footer::Magic));
/// assert_eq!(direct, copied);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
#[allow(clippy::too_many_arguments)] // the fields of one smdebug event, as tensor_event
pub fn append_tensor_event(
    out: &mut Vec<u8>,
    tag: &str,
    tensor: &TensorValue,
    step: i64,
    mode: u8,
    mode_step: i64,
    wall_time: f64,
    footer: Footer,
) -> Result<RecordInfo> {
    let Some((header, content_len)) = tensor.to_proto_header(tag) else {
        let event = tensor_event(tag, tensor, step, mode, mode_step, wall_time)?;
        out.reserve(event.encoded_len() + FRAMING_LEN as usize);
        return Ok(append_record_with(out, footer, |buf| {
            // Cannot fail: a Vec grows as needed.
            let _ = event.encode(buf);
        }));
    };
    let head = EventHead {
        tag,
        step,
        mode,
        mode_step,
        wall_time,
    };
    append_numeric_event(out, &head, header, content_len, footer, |buf| {
        tensor.write_le(buf)
    })
}

/// [`append_tensor_event`] of a numeric tensor given as its dtype, shape and the
/// little-endian bytes of its elements in C order (e.g. a buffer a Python or C caller lends):
/// the bytes go from `le_bytes` straight into `out`, identical to those of
/// `append_tensor_event` for the same values.
///
/// Fails for a string dtype, for `le_bytes` of another length than the shape's element count
/// times the dtype's size, and for a mode outside 1..=4.
///
/// ```
/// use smdebug_record::{append_tensor_event, append_tensor_event_le, DType, Footer, TensorValue};
/// let value = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
/// let mut from_value = Vec::new();
/// append_tensor_event(&mut from_value, "a", &value, 3, 1, 1, 1.6e9, Footer::Magic)?;
/// let le: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
/// let mut from_bytes = Vec::new();
/// append_tensor_event_le(&mut from_bytes, "a", DType::Float32, &[2], &le, 3, 1, 1, 1.6e9, Footer::Magic)?;
/// assert_eq!(from_bytes, from_value);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
#[allow(clippy::too_many_arguments)] // the fields of one smdebug event, as tensor_event
pub fn append_tensor_event_le(
    out: &mut Vec<u8>,
    tag: &str,
    dtype: DType,
    shape: &[usize],
    le_bytes: &[u8],
    step: i64,
    mode: u8,
    mode_step: i64,
    wall_time: f64,
    footer: Footer,
) -> Result<RecordInfo> {
    let unencodable = |reason: String| RecordError::UnencodableTensor {
        at: Default::default(),
        reason,
    };
    let Some(item) = dtype.item_size() else {
        return Err(unencodable(format!(
            "tensor {tag:?}: {} has no fixed-size little-endian encoding",
            dtype.name()
        )));
    };
    let elements = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .and_then(|n| n.checked_mul(item));
    if elements != Some(le_bytes.len()) {
        return Err(unencodable(format!(
            "tensor {tag:?}: {} bytes do not hold shape {shape:?} of {}",
            le_bytes.len(),
            dtype.name()
        )));
    }
    let header = numeric_header(tag, dtype, shape);
    let head = EventHead {
        tag,
        step,
        mode,
        mode_step,
        wall_time,
    };
    append_numeric_event(out, &head, header, le_bytes.len(), footer, |buf| {
        buf.extend_from_slice(le_bytes)
    })
}

/// The fields of a tensor event besides the tensor.
struct EventHead<'a> {
    tag: &'a str,
    step: i64,
    mode: u8,
    mode_step: i64,
    wall_time: f64,
}

/// Frames the event of a numeric tensor whose proto is `header` plus `content_len` bytes of
/// `tensor_content` that `content` appends.
fn append_numeric_event(
    out: &mut Vec<u8>,
    head: &EventHead<'_>,
    header: TensorProto,
    content_len: usize,
    footer: Footer,
    content: impl FnOnce(&mut Vec<u8>),
) -> Result<RecordInfo> {
    let EventHead {
        tag,
        step,
        mode,
        mode_step,
        wall_time,
    } = *head;
    // The event is built without the tensor and the nesting around it is written here, so
    // that the values go from the array straight into `out`. prost (like Python's protobuf)
    // writes fields in field-number order: in the summary value `tag` (1), the tensor (8),
    // `metadata` (9); in a numeric TensorProto `tensor_content` (4) after dtype and shape
    // and before the typed lists, which stay empty. The doc test and a proptest compare
    // the bytes with the plain encoder.
    let metadata = mode_metadata(mode, mode_step)?;
    let event = Event {
        wall_time,
        step,
        what: None,
    };
    let content_field = if content_len > 0 {
        key_len(4) + encoded_len_varint(content_len as u64) + content_len
    } else {
        0 // proto3 leaves out empty bytes fields
    };
    let tensor_len = header.encoded_len() + content_field;
    let tag_field = if tag.is_empty() {
        0
    } else {
        key_len(1) + encoded_len_varint(tag.len() as u64) + tag.len()
    };
    let value_len = tag_field
        + key_len(8)
        + encoded_len_varint(tensor_len as u64)
        + tensor_len
        + encoding::message::encoded_len(9, &metadata);
    let summary_len = key_len(1) + encoded_len_varint(value_len as u64) + value_len;
    let event_len =
        event.encoded_len() + key_len(5) + encoded_len_varint(summary_len as u64) + summary_len;
    out.reserve(event_len + FRAMING_LEN as usize);
    Ok(append_record_with(out, footer, |buf| {
        // Writing into a Vec cannot fail.
        let _ = event.encode(buf);
        encode_key(5, WireType::LengthDelimited, buf);
        encode_varint(summary_len as u64, buf);
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(value_len as u64, buf);
        if !tag.is_empty() {
            encode_key(1, WireType::LengthDelimited, buf);
            encode_varint(tag.len() as u64, buf);
            buf.extend_from_slice(tag.as_bytes());
        }
        encode_key(8, WireType::LengthDelimited, buf);
        encode_varint(tensor_len as u64, buf);
        let _ = header.encode(buf);
        if content_len > 0 {
            encode_key(4, WireType::LengthDelimited, buf);
            encode_varint(content_len as u64, buf);
            content(buf);
        }
        encoding::message::encode(9, &metadata, buf);
    }))
}

/// Decodes a record payload as an `Event`.
pub fn decode_event(payload: &[u8]) -> Result<Event> {
    Event::decode(payload).map_err(|source| RecordError::Protobuf {
        at: Default::default(),
        message: "Event",
        source,
    })
}

/// Decodes a record payload of an `events/` file into its tensor, name, steps and mode.
///
/// Mode and mode step follow Python's `EventFileReader._get_mode_modestep`: GLOBAL and the
/// global step unless the metadata says otherwise. Fails with
/// [`RecordError::UnexpectedEvent`] when the event holds no tensor value.
pub fn decode_tensor_event(payload: &[u8]) -> Result<TensorEvent> {
    tensor_event_from(&decode_event(payload)?)
}

/// [`decode_tensor_event`] for a payload held in [`Bytes`](prost::bytes::Bytes): the values
/// are sliced out of `payload` instead of copied before they are converted, one copy of the
/// tensor less than decoding from a slice.
///
/// ```
/// use smdebug_record::{decode_tensor_event_bytes, encode_tensor_event, TensorValue};
/// let value = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
/// let payload = encode_tensor_event("a", &value, 3, 1, 1, 1.6e9)?;
/// assert_eq!(decode_tensor_event_bytes(payload.into())?.tensor, value);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
pub fn decode_tensor_event_bytes(payload: prost::bytes::Bytes) -> Result<TensorEvent> {
    let event = Event::decode(payload).map_err(|source| RecordError::Protobuf {
        at: Default::default(),
        message: "Event",
        source,
    })?;
    tensor_event_from(&event)
}

/// Extracts the tensor, name, steps and mode from an already decoded `Event` (the first
/// summary value, which is the only one smdebug writes).
pub fn tensor_event_from(event: &Event) -> Result<TensorEvent> {
    let (tensor, tag, mode, mode_step) = tensor_event_parts(event, TensorValue::from_proto)?;
    Ok(TensorEvent {
        tag,
        tensor,
        step: event.step,
        mode,
        mode_step,
        wall_time: event.wall_time,
    })
}

/// The tensor (as `tensor` makes it of the `TensorProto`), tag, mode and mode step of a
/// tensor event: the one reading of an event's summary for the decoded and the encoded
/// forms.
pub(crate) fn tensor_event_parts<T>(
    event: &Event,
    tensor: impl FnOnce(&TensorProto) -> Result<T>,
) -> Result<(T, String, u8, i64)> {
    let summary = match &event.what {
        Some(event::What::Summary(s)) => s,
        _ => return Err(RecordError::unexpected_event("event holds no summary")),
    };
    let value = summary
        .value
        .first()
        .ok_or_else(|| RecordError::unexpected_event("summary holds no value"))?;
    let tensor = match &value.value {
        Some(summary::value::Value::Tensor(t)) => tensor(t)?,
        _ => {
            return Err(RecordError::unexpected_event(format!(
                "summary value {:?} holds no tensor",
                value.tag
            )))
        }
    };
    let mut mode = mode_number::GLOBAL;
    let mut mode_step = event.step;
    for plugin in value.metadata.iter().flat_map(|m| &m.plugin_data) {
        if plugin.plugin_name == MODE_STEP_PLUGIN_NAME {
            mode_step = parse_int(&plugin.content, MODE_STEP_PLUGIN_NAME)?;
        } else if plugin.plugin_name == MODE_PLUGIN_NAME {
            mode = check_mode(parse_int(&plugin.content, MODE_PLUGIN_NAME)?)?;
        }
    }
    Ok((tensor, value.tag.clone(), mode, mode_step))
}

/// Parses decimal text the way Python's `int()` accepts what smdebug writes (surrounding
/// whitespace allowed).
fn parse_int(content: &[u8], what: &str) -> Result<i64> {
    std::str::from_utf8(content)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            RecordError::unexpected_event(format!(
                "{what} plugin content {:?} is not an integer",
                String::from_utf8_lossy(content)
            ))
        })
}

fn summary_event(value: summary::Value, step: i64, wall_time: f64) -> Event {
    Event {
        wall_time,
        step,
        what: Some(event::What::Summary(Summary { value: vec![value] })),
    }
}

/// A TensorBoard scalar: `Summary.Value{tag, simple_value}` (what smdebug's TensorBoard
/// writer makes for scalar collections and `save_scalar`).
pub fn scalar_event(tag: &str, value: f32, step: i64, wall_time: f64) -> Event {
    summary_event(
        summary::Value {
            tag: tag.to_owned(),
            value: Some(summary::value::Value::SimpleValue(value)),
            ..Default::default()
        },
        step,
        wall_time,
    )
}

/// A TensorBoard histogram: `Summary.Value{tag, histo}`.
pub fn histogram_event(tag: &str, histogram: HistogramProto, step: i64, wall_time: f64) -> Event {
    summary_event(
        summary::Value {
            tag: tag.to_owned(),
            value: Some(summary::value::Value::Histo(histogram)),
            ..Default::default()
        },
        step,
        wall_time,
    )
}

/// The `file_version` event TensorFlow writes first in every event file
/// ([`FILE_VERSION`]). smdebug itself never writes it.
pub fn file_version_event(wall_time: f64) -> Event {
    Event {
        wall_time,
        step: 0,
        what: Some(event::What::FileVersion(FILE_VERSION.to_owned())),
    }
}

/// A graph event: `Event.graph_def` holding a serialized `GraphDef`.
pub fn graph_event(graph_def: Vec<u8>, step: i64, wall_time: f64) -> Event {
    Event {
        wall_time,
        step,
        what: Some(event::What::GraphDef(graph_def)),
    }
}
