//! [`DType`]: the element types smdebug writes, with their numpy names and `DataType` codes.

use crate::proto::DataType;
use std::fmt;

/// The element types smdebug can write, named as numpy names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE-754 half precision (`DT_HALF`).
    Float16,
    /// `DT_FLOAT`.
    Float32,
    /// `DT_DOUBLE`.
    Float64,
    /// `DT_INT8` (Python smdebug reads it back as uint8).
    Int8,
    /// `DT_INT16` (Python smdebug cannot read it back).
    Int16,
    /// `DT_INT32`.
    Int32,
    /// `DT_INT64`.
    Int64,
    /// `DT_UINT8`.
    UInt8,
    /// `DT_UINT16` (Python smdebug cannot read it back).
    UInt16,
    /// `DT_UINT32` (Python smdebug cannot read it back).
    UInt32,
    /// `DT_UINT64` (Python smdebug cannot read it back).
    UInt64,
    /// `DT_BOOL`, one byte per element.
    Bool,
    /// `DT_COMPLEX64`: (real, imag) `f32` pairs (Python smdebug cannot read it back).
    Complex64,
    /// `DT_COMPLEX128`: (real, imag) `f64` pairs.
    Complex128,
    /// UTF-8 strings, written with `dtype` left at 0 and one `string_val` per element.
    Str,
}

impl From<smdebug_reduce::DType> for DType {
    /// The dtype of a view of smdebug-reduce's kernels (every one is a dtype records hold).
    fn from(dtype: smdebug_reduce::DType) -> Self {
        use smdebug_reduce::DType as R;
        match dtype {
            R::F16 => DType::Float16,
            R::F32 => DType::Float32,
            R::F64 => DType::Float64,
            R::I8 => DType::Int8,
            R::I16 => DType::Int16,
            R::I32 => DType::Int32,
            R::I64 => DType::Int64,
            R::U8 => DType::UInt8,
            R::U16 => DType::UInt16,
            R::U32 => DType::UInt32,
            R::U64 => DType::UInt64,
            R::Bool => DType::Bool,
        }
    }
}

impl DType {
    /// Every dtype, in the order of the table in docs/src/format.md §7.2.
    pub const ALL: [DType; 15] = [
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Bool,
        DType::Complex64,
        DType::Complex128,
        DType::Str,
    ];

    /// The numpy name (`"float32"`, `"uint8"`, `"complex128"`, `"bool"`, `"str"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Float16 => "float16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Bool => "bool",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
            DType::Str => "str",
        }
    }

    /// The dtype with this numpy name, if any.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element in `tensor_content`; `None` for strings.
    pub fn item_size(self) -> Option<usize> {
        Some(match self {
            DType::Int8 | DType::UInt8 | DType::Bool => 1,
            DType::Float16 | DType::Int16 | DType::UInt16 => 2,
            DType::Float32 | DType::Int32 | DType::UInt32 => 4,
            DType::Float64 | DType::Int64 | DType::UInt64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
            DType::Str => return None,
        })
    }

    /// The `DataType` smdebug writes for this dtype. Strings give `DtInvalid` (0), not
    /// `DtString`: smdebug leaves the field unset for them.
    pub fn to_proto(self) -> DataType {
        match self {
            DType::Float16 => DataType::DtHalf,
            DType::Float32 => DataType::DtFloat,
            DType::Float64 => DataType::DtDouble,
            DType::Int8 => DataType::DtInt8,
            DType::Int16 => DataType::DtInt16,
            DType::Int32 => DataType::DtInt32,
            DType::Int64 => DataType::DtInt64,
            DType::UInt8 => DataType::DtUint8,
            DType::UInt16 => DataType::DtUint16,
            DType::UInt32 => DataType::DtUint32,
            DType::UInt64 => DataType::DtUint64,
            DType::Bool => DataType::DtBool,
            DType::Complex64 => DataType::DtComplex64,
            DType::Complex128 => DataType::DtComplex128,
            DType::Str => DataType::DtInvalid,
        }
    }

    /// The dtype a numeric `DataType` number decodes to (`DT_STRING` gives [`DType::Str`];
    /// 0 gives `None` because its meaning depends on `string_val`).
    pub fn from_proto(dtype: i32) -> Option<DType> {
        Some(match DataType::try_from(dtype).ok()? {
            DataType::DtHalf => DType::Float16,
            DataType::DtFloat => DType::Float32,
            DataType::DtDouble => DType::Float64,
            DataType::DtInt8 => DType::Int8,
            DataType::DtInt16 => DType::Int16,
            DataType::DtInt32 => DType::Int32,
            DataType::DtInt64 => DType::Int64,
            DataType::DtUint8 => DType::UInt8,
            DataType::DtUint16 => DType::UInt16,
            DataType::DtUint32 => DType::UInt32,
            DataType::DtUint64 => DType::UInt64,
            DataType::DtBool => DType::Bool,
            DataType::DtComplex64 => DType::Complex64,
            DataType::DtComplex128 => DType::Complex128,
            DataType::DtString => DType::Str,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
