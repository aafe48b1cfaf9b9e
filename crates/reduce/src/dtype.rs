//! Element types and the typed result of a reduction.

use half::f16;
use std::fmt;

/// The numeric element types this crate reduces, named as numpy names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `bool`
    Bool,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `uint8`
    U8,
    /// `uint16`
    U16,
    /// `uint32`
    U32,
    /// `uint64`
    U64,
    /// `float16` (IEEE half precision)
    F16,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

impl DType {
    /// Every dtype, in a stable order.
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::F32,
        DType::F64,
    ];

    /// numpy's name of the dtype (`"float32"`, `"int64"`, `"bool"`, …).
    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The dtype numpy calls `name` (the inverse of [`DType::numpy_name`]).
    pub fn from_numpy_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.numpy_name() == name)
    }

    /// Bytes of one element (numpy's `itemsize`; a `bool` takes one byte).
    pub fn item_size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// True for `float16`, `float32` and `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }

    /// True for the unsigned integer types.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// The machine epsilon of a float dtype (distance from 1.0 to the next value), `None` for
    /// integers and bool.
    pub fn epsilon(self) -> Option<f64> {
        match self {
            DType::F16 => Some(f64::from(f16::EPSILON)),
            DType::F32 => Some(f64::from(f32::EPSILON)),
            DType::F64 => Some(f64::EPSILON),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.numpy_name())
    }
}

/// The value of one reduction, in the dtype the original produces (e.g. numpy's `sum` of an
/// `int32` array is an `int64`, its `mean` a `float64`, the `min` of a `bool` array a `bool`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A `bool` result (min/max of a bool array).
    Bool(bool),
    /// An `int8` result.
    I8(i8),
    /// An `int16` result.
    I16(i16),
    /// An `int32` result.
    I32(i32),
    /// An `int64` result.
    I64(i64),
    /// A `uint8` result.
    U8(u8),
    /// A `uint16` result.
    U16(u16),
    /// A `uint32` result.
    U32(u32),
    /// A `uint64` result.
    U64(u64),
    /// A `float16` result.
    F16(f16),
    /// A `float32` result.
    F32(f32),
    /// A `float64` result.
    F64(f64),
}

impl Scalar {
    /// The dtype of the value.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::I8(_) => DType::I8,
            Scalar::I16(_) => DType::I16,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::U8(_) => DType::U8,
            Scalar::U16(_) => DType::U16,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
            Scalar::F16(_) => DType::F16,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// The value as an `f64` (exact for every dtype except 64-bit integers beyond 2^53).
    pub fn to_f64(&self) -> f64 {
        match *self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::I8(v) => f64::from(v),
            Scalar::I16(v) => f64::from(v),
            Scalar::I32(v) => f64::from(v),
            Scalar::I64(v) => v as f64,
            Scalar::U8(v) => f64::from(v),
            Scalar::U16(v) => f64::from(v),
            Scalar::U32(v) => f64::from(v),
            Scalar::U64(v) => v as f64,
            Scalar::F16(v) => f64::from(v),
            Scalar::F32(v) => f64::from(v),
            Scalar::F64(v) => v,
        }
    }

    /// The value as an `i128` when it is an integer or bool (exact), `None` for floats.
    pub fn to_i128(&self) -> Option<i128> {
        Some(match *self {
            Scalar::Bool(b) => i128::from(b),
            Scalar::I8(v) => i128::from(v),
            Scalar::I16(v) => i128::from(v),
            Scalar::I32(v) => i128::from(v),
            Scalar::I64(v) => i128::from(v),
            Scalar::U8(v) => i128::from(v),
            Scalar::U16(v) => i128::from(v),
            Scalar::U32(v) => i128::from(v),
            Scalar::U64(v) => i128::from(v),
            Scalar::F16(_) | Scalar::F32(_) | Scalar::F64(_) => return None,
        })
    }

    /// A float `v` rounded to the float dtype `dtype` (`float64` for any other dtype).
    pub(crate) fn float(dtype: DType, v: f64) -> Scalar {
        match dtype {
            DType::F16 => Scalar::F16(f16::from_f64(v)),
            DType::F32 => Scalar::F32(v as f32),
            _ => Scalar::F64(v),
        }
    }

    /// `sqrt` computed the way numpy does for a scalar of this dtype (in `float` and rounded
    /// for `float16`).
    pub(crate) fn sqrt(self) -> Scalar {
        match self {
            Scalar::F16(v) => Scalar::F16(f16::from_f32(f32::from(v).sqrt())),
            Scalar::F32(v) => Scalar::F32(v.sqrt()),
            other => Scalar::F64(other.to_f64().sqrt()),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::I8(v) => write!(f, "{v}"),
            Scalar::I16(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::U8(v) => write!(f, "{v}"),
            Scalar::U16(v) => write!(f, "{v}"),
            Scalar::U32(v) => write!(f, "{v}"),
            Scalar::U64(v) => write!(f, "{v}"),
            Scalar::F16(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
        }
    }
}
