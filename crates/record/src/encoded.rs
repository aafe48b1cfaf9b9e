//! A tensor record's tensor with its values left as the record holds them: for readers that
//! want a summary of the values (statistics) but not the values, so no array is allocated
//! and no element is copied.

use crate::dtype::DType;
use crate::error::{RecordError, Result};
use crate::event::{tensor_event_parts, TensorEvent};
use crate::proto::{Event, TensorProto};
use crate::tensor::TensorValue;
use crate::tensor_proto::{content_length_error, proto_header};
use prost::bytes::Bytes;
use prost::Message;

/// A tensor as a record holds it: its dtype and shape, and its elements still encoded
/// (the little-endian `tensor_content` smdebug writes for every numeric dtype).
///
/// Made by [`decode_tensor_event_encoded`]; checked there as [`TensorValue::from_proto`]
/// checks a tensor (dtype known, shape valid, content of exactly the shape's size), so
/// that [`decode`](Self::decode) gives what decoding the record directly would have given.
/// A tensor without `tensor_content` (strings, the typed fallback lists) is decoded at once:
/// those are small, and their layout is not the file's bytes.
#[derive(Debug, Clone)]
pub struct EncodedTensor {
    dtype: DType,
    shape: Vec<usize>,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    /// `tensor_content`: the elements, little-endian, exactly the shape's count of them
    /// (the message boxed: it is large beside a decoded value).
    Content(Box<TensorProto>),
    /// Anything else, decoded.
    Decoded(TensorValue),
}

impl EncodedTensor {
    /// The tensor of `proto`, checked as [`TensorValue::from_proto`] checks it.
    pub fn from_proto(proto: TensorProto) -> Result<EncodedTensor> {
        let (dtype, shape, count) = proto_header(&proto)?;
        let size = dtype.item_size();
        match size {
            Some(size) if dtype != DType::Str && !proto.tensor_content.is_empty() => {
                let len = proto.tensor_content.len();
                if count.checked_mul(size) != Some(len) {
                    return Err(content_length_error(len, &shape, dtype, size));
                }
                Ok(EncodedTensor {
                    dtype,
                    shape,
                    body: Body::Content(Box::new(proto)),
                })
            }
            _ => Ok(EncodedTensor::from(TensorValue::from_proto(&proto)?)),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape (of the decoded value: a typed fallback list that does not fill its
    /// declared shape decodes as one dimension, as Python smdebug reads it).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as the record holds them (little-endian, `dtype().item_size()` bytes
    /// each, any alignment), when it holds them as `tensor_content`.
    pub fn content(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Content(p) => Some(&p.tensor_content),
            Body::Decoded(_) => None,
        }
    }

    /// [`smdebug_reduce::finite_stats`] of the elements, straight from the record's bytes
    /// when it holds `tensor_content`: bit for bit the statistics of
    /// [`decode`](Self::decode)'s value ([`TensorValue::reduce_view`]). `None` for complex
    /// numbers and strings, as there.
    pub fn finite_stats(&self) -> Option<smdebug_reduce::FiniteStats> {
        match &self.body {
            Body::Content(p) => {
                smdebug_reduce::finite_stats_le(reduce_dtype(self.dtype)?, &p.tensor_content)
            }
            Body::Decoded(v) => Some(v.reduce_view()?.finite_stats()),
        }
    }

    /// The value, decoded (one allocation and copy of the elements).
    pub fn decode(&self) -> Result<TensorValue> {
        match &self.body {
            Body::Content(p) => TensorValue::from_proto(p),
            Body::Decoded(v) => Ok(v.clone()),
        }
    }

    /// The value, decoded; no copy when it was decoded already.
    pub fn into_value(self) -> Result<TensorValue> {
        match self.body {
            Body::Content(p) => TensorValue::from_proto(&p),
            Body::Decoded(v) => Ok(v),
        }
    }
}

impl From<TensorValue> for EncodedTensor {
    /// A value decoded already (a cache's, a reader's fallback).
    fn from(value: TensorValue) -> Self {
        EncodedTensor {
            dtype: value.dtype(),
            shape: value.shape().to_vec(),
            body: Body::Decoded(value),
        }
    }
}

/// The dtype of smdebug-reduce's kernels for `dtype`; `None` for complex numbers and
/// strings, which have none (as [`TensorValue::reduce_view`]).
fn reduce_dtype(dtype: DType) -> Option<smdebug_reduce::DType> {
    use smdebug_reduce::DType as R;
    Some(match dtype {
        DType::Float16 => R::F16,
        DType::Float32 => R::F32,
        DType::Float64 => R::F64,
        DType::Int8 => R::I8,
        DType::Int16 => R::I16,
        DType::Int32 => R::I32,
        DType::Int64 => R::I64,
        DType::UInt8 => R::U8,
        DType::UInt16 => R::U16,
        DType::UInt32 => R::U32,
        DType::UInt64 => R::U64,
        DType::Bool => R::Bool,
        DType::Complex64 | DType::Complex128 | DType::Str => return None,
    })
}

/// A tensor record of a trial's `events/` file with its tensor left encoded: the fields of
/// [`TensorEvent`], and an [`EncodedTensor`] in place of the value.
#[derive(Debug, Clone)]
pub struct EncodedTensorEvent {
    /// The Summary tag: the tensor name (raw tensor or reduction name).
    pub tag: String,
    /// The tensor, its elements not decoded.
    pub tensor: EncodedTensor,
    /// Global step (0 when the event omits it).
    pub step: i64,
    /// Mode number, 1..=4 ([`crate::mode_number`]).
    pub mode: u8,
    /// Mode step; the global step when the event has no `mode_step` entry.
    pub mode_step: i64,
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
}

impl EncodedTensorEvent {
    /// The event with its tensor decoded: what [`crate::decode_tensor_event`] gives.
    pub fn decode(self) -> Result<TensorEvent> {
        Ok(TensorEvent {
            tag: self.tag,
            tensor: self.tensor.into_value()?,
            step: self.step,
            mode: self.mode,
            mode_step: self.mode_step,
            wall_time: self.wall_time,
        })
    }
}

/// [`crate::decode_tensor_event_bytes`] without decoding the values: the tensor's
/// `tensor_content` stays a slice of `payload` (no copy), checked as decoding it would
/// check it, with the same errors for the same payloads.
///
/// ```
/// use smdebug_record::{decode_tensor_event_encoded, encode_tensor_event, TensorValue};
/// let value = TensorValue::from(ndarray::arr1(&[1.0f32, f32::NAN, -2.0]).into_dyn());
/// let payload = encode_tensor_event("a", &value, 3, 1, 1, 1.6e9)?;
/// let event = decode_tensor_event_encoded(payload.into())?;
/// let stats = event.tensor.finite_stats().unwrap();
/// assert_eq!((stats.nan, stats.min(), stats.max()), (1, Some(-2.0), Some(1.0)));
/// assert_eq!(event.tensor.decode()?.to_le_bytes(), value.to_le_bytes());
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
pub fn decode_tensor_event_encoded(payload: Bytes) -> Result<EncodedTensorEvent> {
    let event = Event::decode(payload).map_err(|source| RecordError::Protobuf {
        at: Default::default(),
        message: "Event",
        source,
    })?;
    let (tensor, tag, mode, mode_step) =
        tensor_event_parts(&event, |t| EncodedTensor::from_proto(t.clone()))?;
    Ok(EncodedTensorEvent {
        tag,
        tensor,
        step: event.step,
        mode,
        mode_step,
        wall_time: event.wall_time,
    })
}
