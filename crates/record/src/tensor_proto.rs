//! The tensor codec: [`TensorValue`] to and from `TensorProto`, exactly as smdebug 1.0.34
//! encodes it.
use crate::dtype::DType;
use crate::error::{RecordError, Result};
use crate::proto::{tensor_shape_proto, DataType, TensorProto, TensorShapeProto};
use crate::tensor::{Element, TensorValue};
use half::f16;
use ndarray::{ArrayD, IxDyn};
use num_complex::{Complex32, Complex64};

impl TensorValue {
    /// [`TensorValue::to_proto`] without `tensor_content`, and the content's length in bytes:
    /// for numeric tensors only (`None` for strings), so that a writer can append the
    /// content itself with [`TensorValue::write_le`].
    pub(crate) fn to_proto_header(&self, tag: &str) -> Option<(TensorProto, usize)> {
        if matches!(self, TensorValue::Str(_)) {
            return None;
        }
        let proto = numeric_header(tag, self.dtype(), self.shape());
        Some((proto, self.len() * self.dtype().item_size().unwrap_or(0)))
    }

    /// Encodes the tensor exactly as smdebug's `make_tensor_proto` does for a tensor named
    /// `tag`: `dtype`, `tensor_shape` with one dim `{size, name: "<tag>_<size>"}` per axis
    /// (always present, empty for 0-d), raw `tensor_content` for numbers, `string_val` with
    /// `dtype` 0 for strings.
    ///
    /// Fails only for string tensors that are not 1-D (Python's writer fails on them too).
    pub fn to_proto(&self, tag: &str) -> Result<TensorProto> {
        let tensor_shape = Some(shape_proto(tag, self.shape()));
        Ok(match self {
            TensorValue::Str(s) => {
                if s.ndim() != 1 {
                    return Err(RecordError::UnencodableTensor {
                        at: Default::default(),
                        reason: format!(
                            "string tensor {tag:?} has {} dimensions; smdebug writes only 1-D string tensors",
                            s.ndim()
                        ),
                    });
                }
                TensorProto {
                    dtype: DataType::DtInvalid as i32,
                    tensor_shape,
                    string_val: s.iter().map(|x| x.as_bytes().to_vec()).collect(),
                    ..Default::default()
                }
            }
            _ => TensorProto {
                dtype: self.dtype().to_proto() as i32,
                tensor_shape,
                tensor_content: self.to_le_bytes().into(),
                ..Default::default()
            },
        })
    }

    /// Decodes a `TensorProto` as written by smdebug, TensorFlow or TensorBoard.
    ///
    /// Like Python smdebug: the shape is the list of dim sizes; `dtype` 0 with `string_val`
    /// is a string tensor; numeric values come from `tensor_content`, or, when it is empty,
    /// from `float_val`/`int_val`/`int64_val`/`bool_val`. Unlike Python: every dtype of
    /// [`DType`] decodes (int8 as signed; Python returns uint8 and fails on int16, uint16,
    /// uint32, uint64 and complex64), a tensor with zero elements decodes to an empty
    /// array (Python returns `None` or raises), string tensors of any rank decode, and a
    /// fallback list whose length matches the shape is reshaped to it.
    pub fn from_proto(proto: &TensorProto) -> Result<TensorValue> {
        let (dtype, shape, count) = proto_header(proto)?;
        Ok(match dtype {
            DType::Float16 => TensorValue::Float16(numeric(proto, &shape, count, |p| {
                Some(
                    p.half_val
                        .iter()
                        // half_val holds the 16 bits in the low half of each int32.
                        .map(|&b| f16::from_bits(b as u16))
                        .collect(),
                )
            })?),
            DType::Float32 => TensorValue::Float32(numeric(proto, &shape, count, |p| {
                Some(p.float_val.clone())
            })?),
            DType::Float64 => TensorValue::Float64(numeric(proto, &shape, count, |p| {
                Some(p.double_val.clone())
            })?),
            DType::Int8 => TensorValue::Int8(numeric(proto, &shape, count, |p| {
                p.int_val.iter().map(|&v| i8::try_from(v).ok()).collect()
            })?),
            DType::Int16 => TensorValue::Int16(numeric(proto, &shape, count, |p| {
                p.int_val.iter().map(|&v| i16::try_from(v).ok()).collect()
            })?),
            DType::Int32 => {
                TensorValue::Int32(numeric(proto, &shape, count, |p| Some(p.int_val.clone()))?)
            }
            DType::Int64 => TensorValue::Int64(numeric(proto, &shape, count, |p| {
                Some(p.int64_val.clone())
            })?),
            DType::UInt8 => TensorValue::UInt8(numeric(proto, &shape, count, |p| {
                p.int_val.iter().map(|&v| u8::try_from(v).ok()).collect()
            })?),
            DType::UInt16 => TensorValue::UInt16(numeric(proto, &shape, count, |p| {
                p.int_val.iter().map(|&v| u16::try_from(v).ok()).collect()
            })?),
            DType::UInt32 => TensorValue::UInt32(numeric(proto, &shape, count, |_| None)?),
            DType::UInt64 => TensorValue::UInt64(numeric(proto, &shape, count, |_| None)?),
            DType::Bool => {
                TensorValue::Bool(numeric(proto, &shape, count, |p| Some(p.bool_val.clone()))?)
            }
            DType::Complex64 => TensorValue::Complex64(numeric(proto, &shape, count, |p| {
                pairs(&p.scomplex_val).map(|v| v.map(|(re, im)| Complex32::new(re, im)).collect())
            })?),
            DType::Complex128 => TensorValue::Complex128(numeric(proto, &shape, count, |p| {
                pairs(&p.dcomplex_val).map(|v| v.map(|(re, im)| Complex64::new(re, im)).collect())
            })?),
            DType::Str => TensorValue::Str(strings(proto, &shape, count)?),
        })
    }
}

/// The dtype, shape and element count of a `TensorProto`, as [`TensorValue::from_proto`]
/// reads them.
pub(crate) fn proto_header(proto: &TensorProto) -> Result<(DType, Vec<usize>, usize)> {
    let shape = decode_shape(proto)?;
    let count = element_count(&shape)?;
    let dtype = match (proto.dtype, proto.string_val.is_empty()) {
        (0, false) => DType::Str,
        // smdebug writes an empty string array with dtype 0 and nothing else; it has
        // zero elements, so any numeric reading is as good: keep it a string tensor.
        (0, true) if count == 0 => DType::Str,
        (d, _) => DType::from_proto(d).ok_or(RecordError::UnsupportedDType {
            at: Default::default(),
            dtype: d,
        })?,
    };
    Ok((dtype, shape, count))
}

/// The message [`TensorValue::from_proto`] fails with when `tensor_content` does not hold
/// `count` elements of `dtype`, `size` bytes each.
pub(crate) fn content_length_error(
    len: usize,
    shape: &[usize],
    dtype: DType,
    size: usize,
) -> RecordError {
    RecordError::malformed(format!(
        "{len} content bytes for shape {shape:?} of {dtype} ({size} bytes each)"
    ))
}

/// `(re, im)` pairs of a flat list, or `None` when its length is odd.
fn pairs<T: Copy>(flat: &[T]) -> Option<impl Iterator<Item = (T, T)> + '_> {
    if flat.len() % 2 != 0 {
        return None;
    }
    Some(flat.chunks_exact(2).map(|c| (c[0], c[1])))
}

/// The `TensorProto` of a numeric tensor without its `tensor_content`.
pub(crate) fn numeric_header(tag: &str, dtype: DType, shape: &[usize]) -> TensorProto {
    TensorProto {
        dtype: dtype.to_proto() as i32,
        tensor_shape: Some(shape_proto(tag, shape)),
        ..Default::default()
    }
}

fn shape_proto(tag: &str, shape: &[usize]) -> TensorShapeProto {
    TensorShapeProto {
        dim: shape
            .iter()
            .map(|&size| tensor_shape_proto::Dim {
                size: size as i64,
                name: format!("{tag}_{size}"),
            })
            .collect(),
        unknown_rank: false,
    }
}

fn decode_shape(proto: &TensorProto) -> Result<Vec<usize>> {
    let dims = proto
        .tensor_shape
        .as_ref()
        .map(|s| s.dim.as_slice())
        .unwrap_or_default();
    dims.iter()
        .map(|d| {
            usize::try_from(d.size).map_err(|_| {
                RecordError::malformed(format!("dimension size {} is invalid", d.size))
            })
        })
        .collect()
}

/// Product of the dims, failing on overflow (a shape read from input can claim anything).
fn element_count(shape: &[usize]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        acc.checked_mul(d)
            .ok_or_else(|| RecordError::malformed(format!("shape {shape:?} has too many elements")))
    })
}

/// Decodes a numeric tensor from `tensor_content`, or from the typed fallback list that
/// `fallback` extracts (`None`: no usable fallback for this dtype).
fn numeric<T: Element>(
    proto: &TensorProto,
    shape: &[usize],
    count: usize,
    fallback: impl FnOnce(&TensorProto) -> Option<Vec<T>>,
) -> Result<ArrayD<T>> {
    let content = &proto.tensor_content;
    if !content.is_empty() {
        // `count` came from the input; compare before allocating anything of that size.
        let expected = count.checked_mul(T::SIZE);
        if expected != Some(content.len()) {
            return Err(content_length_error(
                content.len(),
                shape,
                T::DTYPE,
                T::SIZE,
            ));
        }
        let values: Vec<T> = T::vec_from_le(content);
        return to_array(shape, values);
    }
    if count == 0 {
        return to_array(shape, Vec::new());
    }
    let values = match fallback(proto) {
        Some(v) if !v.is_empty() => v,
        Some(_) => {
            return Err(RecordError::malformed(format!(
                "{} tensor of shape {shape:?} has neither tensor_content nor values",
                T::DTYPE
            )))
        }
        None => {
            return Err(RecordError::malformed(format!(
                "{} tensor of shape {shape:?} has no tensor_content and unusable typed values",
                T::DTYPE
            )))
        }
    };
    if values.len() == count {
        to_array(shape, values)
    } else {
        // What Python does with any fallback list (`np.int32(tensor.int_val)`): a 1-D
        // array of the values, whatever the declared shape.
        to_array(&[values.len()], values)
    }
}

fn to_array<T>(shape: &[usize], values: Vec<T>) -> Result<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(shape), values)
        .map_err(|e| RecordError::malformed(format!("cannot shape values as {shape:?}: {e}")))
}

fn strings(proto: &TensorProto, shape: &[usize], count: usize) -> Result<ArrayD<String>> {
    if proto.string_val.len() < count {
        return Err(RecordError::malformed(format!(
            "string tensor of shape {shape:?} has only {} values",
            proto.string_val.len()
        )));
    }
    // Like Python, extra values beyond the shape are ignored.
    let values = proto.string_val[..count]
        .iter()
        .map(|b| {
            String::from_utf8(b.clone())
                .map_err(|e| RecordError::malformed(format!("string value is not UTF-8: {e}")))
        })
        .collect::<Result<Vec<String>>>()?;
    to_array(shape, values)
}
