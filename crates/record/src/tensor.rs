//! The tensor codec: [`TensorValue`] (an `ndarray::ArrayD` of one of smdebug's dtypes) to and from
//! `TensorProto`, exactly as smdebug 1.0.34 encodes it.
use crate::error::{Error, Result};
use crate::proto::{tensor_shape_proto, DataType, TensorProto, TensorShapeProto};
use half::f16;
use ndarray::{ArrayD, IxDyn};
use num_complex::{Complex32, Complex64};
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

/// A numeric element type that travels as little-endian bytes in `tensor_content`.
pub trait Element: Copy + Default + fmt::Debug + 'static {
    /// Its dtype.
    const DTYPE: DType;
    /// Bytes per element.
    const SIZE: usize;
    /// Appends the element's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// Reads an element from exactly [`SIZE`](Self::SIZE) little-endian bytes.
    fn from_le(bytes: &[u8]) -> Self;
    /// Appends the little-endian bytes of every element of `items`.
    fn put_le_slice(items: &[Self], out: &mut Vec<u8>) {
        out.reserve(items.len() * Self::SIZE);
        items.iter().for_each(|&x| x.put_le(out));
    }
    /// Reads `bytes.len() / SIZE` elements (callers pass a multiple of the size).
    fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
        bytes.chunks_exact(Self::SIZE).map(Self::from_le).collect()
    }
    /// Wraps an array of this type in a [`TensorValue`].
    fn into_tensor(array: ArrayD<Self>) -> TensorValue;
    /// The array inside `tensor` if it holds this type.
    fn array_of(tensor: &TensorValue) -> Option<&ArrayD<Self>>;
}

/// The whole `T`s of `bytes`, in memory order (a little-endian machine's, the file's),
/// copied once into a fresh allocation. Not `bytemuck::pod_collect_to_vec`: it zeroes the
/// allocation before copying, which cost as much as the copy itself when every value of a
/// trial of large tensors was read. `bytes` need not be aligned.
#[cfg(target_endian = "little")]
fn pod_vec_from_le<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    let bytes = &bytes[..bytes.len() / size * size];
    match bytemuck::try_cast_slice::<u8, T>(bytes) {
        Ok(aligned) => aligned.to_vec(),
        Err(_) => bytes
            .chunks_exact(size)
            .map(bytemuck::pod_read_unaligned)
            .collect(),
    }
}

/// `N` bytes from the front of `bytes` (callers pass chunks of exactly the element size).
fn le_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&bytes[..N]);
    a
}

macro_rules! plain_element {
    ($t:ty, $dtype:ident, $size:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const SIZE: usize = $size;
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(le_array::<$size>(bytes))
            }
            // On little-endian machines the in-memory bytes are the file's bytes: one copy.
            #[cfg(target_endian = "little")]
            fn put_le_slice(items: &[Self], out: &mut Vec<u8>) {
                out.extend_from_slice(bytemuck::cast_slice(items));
            }
            #[cfg(target_endian = "little")]
            fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
                pod_vec_from_le(bytes)
            }
            fn into_tensor(array: ArrayD<Self>) -> TensorValue {
                TensorValue::$dtype(array)
            }
            fn array_of(tensor: &TensorValue) -> Option<&ArrayD<Self>> {
                match tensor {
                    TensorValue::$dtype(a) => Some(a),
                    _ => None,
                }
            }
        }
    };
}

plain_element!(f16, Float16, 2);
plain_element!(f32, Float32, 4);
plain_element!(f64, Float64, 8);
plain_element!(i8, Int8, 1);
plain_element!(i16, Int16, 2);
plain_element!(i32, Int32, 4);
plain_element!(i64, Int64, 8);
plain_element!(u8, UInt8, 1);
plain_element!(u16, UInt16, 2);
plain_element!(u32, UInt32, 4);
plain_element!(u64, UInt64, 8);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const SIZE: usize = 1;
    fn put_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    /// numpy treats any non-zero byte as true.
    fn from_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    fn into_tensor(array: ArrayD<Self>) -> TensorValue {
        TensorValue::Bool(array)
    }
    fn array_of(tensor: &TensorValue) -> Option<&ArrayD<Self>> {
        match tensor {
            TensorValue::Bool(a) => Some(a),
            _ => None,
        }
    }
}

macro_rules! complex_element {
    ($t:ty, $part:ty, $dtype:ident, $half:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const SIZE: usize = 2 * $half;
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.re.to_le_bytes());
                out.extend_from_slice(&self.im.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::new(
                    <$part>::from_le_bytes(le_array::<$half>(bytes)),
                    <$part>::from_le_bytes(le_array::<$half>(&bytes[$half..])),
                )
            }
            // On little-endian machines the in-memory bytes are the file's bytes: one copy.
            #[cfg(target_endian = "little")]
            fn put_le_slice(items: &[Self], out: &mut Vec<u8>) {
                out.extend_from_slice(bytemuck::cast_slice(items));
            }
            #[cfg(target_endian = "little")]
            fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
                pod_vec_from_le(bytes)
            }
            fn into_tensor(array: ArrayD<Self>) -> TensorValue {
                TensorValue::$dtype(array)
            }
            fn array_of(tensor: &TensorValue) -> Option<&ArrayD<Self>> {
                match tensor {
                    TensorValue::$dtype(a) => Some(a),
                    _ => None,
                }
            }
        }
    };
}

complex_element!(Complex32, f32, Complex64, 4);
complex_element!(Complex64, f64, Complex128, 8);

/// A tensor value of any dtype smdebug writes: one variant per [`DType`], each holding an
/// n-dimensional array (0-d arrays and arrays with a zero-length axis included).
#[derive(Debug, Clone, PartialEq)]
pub enum TensorValue {
    /// float16.
    Float16(ArrayD<f16>),
    /// float32.
    Float32(ArrayD<f32>),
    /// float64.
    Float64(ArrayD<f64>),
    /// int8.
    Int8(ArrayD<i8>),
    /// int16.
    Int16(ArrayD<i16>),
    /// int32.
    Int32(ArrayD<i32>),
    /// int64.
    Int64(ArrayD<i64>),
    /// uint8.
    UInt8(ArrayD<u8>),
    /// uint16.
    UInt16(ArrayD<u16>),
    /// uint32.
    UInt32(ArrayD<u32>),
    /// uint64.
    UInt64(ArrayD<u64>),
    /// bool.
    Bool(ArrayD<bool>),
    /// complex64 (two `f32`).
    Complex64(ArrayD<Complex32>),
    /// complex128 (two `f64`).
    Complex128(ArrayD<Complex64>),
    /// Strings. smdebug can only write 1-D string tensors.
    Str(ArrayD<String>),
}

/// Runs `$body` with `$a` bound to the array of any numeric variant, or `$str` for strings.
macro_rules! dispatch {
    ($self:expr, $a:ident => $body:expr, $s:ident => $str:expr) => {
        match $self {
            TensorValue::Float16($a) => $body,
            TensorValue::Float32($a) => $body,
            TensorValue::Float64($a) => $body,
            TensorValue::Int8($a) => $body,
            TensorValue::Int16($a) => $body,
            TensorValue::Int32($a) => $body,
            TensorValue::Int64($a) => $body,
            TensorValue::UInt8($a) => $body,
            TensorValue::UInt16($a) => $body,
            TensorValue::UInt32($a) => $body,
            TensorValue::UInt64($a) => $body,
            TensorValue::Bool($a) => $body,
            TensorValue::Complex64($a) => $body,
            TensorValue::Complex128($a) => $body,
            TensorValue::Str($s) => $str,
        }
    };
}

impl<T: Element> From<ArrayD<T>> for TensorValue {
    fn from(array: ArrayD<T>) -> Self {
        T::into_tensor(array)
    }
}

impl From<ArrayD<String>> for TensorValue {
    fn from(array: ArrayD<String>) -> Self {
        TensorValue::Str(array)
    }
}

impl TensorValue {
    /// Its dtype.
    pub fn dtype(&self) -> DType {
        match self {
            TensorValue::Float16(_) => DType::Float16,
            TensorValue::Float32(_) => DType::Float32,
            TensorValue::Float64(_) => DType::Float64,
            TensorValue::Int8(_) => DType::Int8,
            TensorValue::Int16(_) => DType::Int16,
            TensorValue::Int32(_) => DType::Int32,
            TensorValue::Int64(_) => DType::Int64,
            TensorValue::UInt8(_) => DType::UInt8,
            TensorValue::UInt16(_) => DType::UInt16,
            TensorValue::UInt32(_) => DType::UInt32,
            TensorValue::UInt64(_) => DType::UInt64,
            TensorValue::Bool(_) => DType::Bool,
            TensorValue::Complex64(_) => DType::Complex64,
            TensorValue::Complex128(_) => DType::Complex128,
            TensorValue::Str(_) => DType::Str,
        }
    }

    /// Its shape (empty for a 0-d tensor).
    pub fn shape(&self) -> &[usize] {
        dispatch!(self, a => a.shape(), s => s.shape())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        dispatch!(self, a => a.len(), s => s.len())
    }

    /// True when the tensor has no element (some axis has length 0; a 0-d tensor has one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A view for smdebug-reduce's kernels (reductions, health summaries); `None` for complex
    /// numbers and strings, which smdebug-reduce has no kernels for. The one mapping for the
    /// writer (the hook's reductions) and the readers (`smdebug health`).
    pub fn reduce_view(&self) -> Option<smdebug_reduce::TensorView<'_>> {
        Some(match self {
            TensorValue::Float16(a) => a.view().into(),
            TensorValue::Float32(a) => a.view().into(),
            TensorValue::Float64(a) => a.view().into(),
            TensorValue::Int8(a) => a.view().into(),
            TensorValue::Int16(a) => a.view().into(),
            TensorValue::Int32(a) => a.view().into(),
            TensorValue::Int64(a) => a.view().into(),
            TensorValue::UInt8(a) => a.view().into(),
            TensorValue::UInt16(a) => a.view().into(),
            TensorValue::UInt32(a) => a.view().into(),
            TensorValue::UInt64(a) => a.view().into(),
            TensorValue::Bool(a) => a.view().into(),
            TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
                return None
            }
        })
    }

    /// An owned copy of `view` (the inverse of [`TensorValue::reduce_view`]), written into
    /// `reuse`'s buffer when it has the same dtype and number of elements, so that a caller
    /// copying tensors of the same sizes step after step allocates nothing. `inspect` sees
    /// the copy, in pieces small enough to be still in the cache when it reads them (the
    /// whole copy at once when `view` is not contiguous): a check of the values costs no
    /// second pass over memory.
    pub fn from_reduce_view(
        view: &smdebug_reduce::TensorView<'_>,
        reuse: Option<TensorValue>,
        inspect: &mut dyn FnMut(smdebug_reduce::TensorView<'_>),
    ) -> TensorValue {
        use smdebug_reduce::TensorView as V;
        macro_rules! arm {
            ($v:expr, $variant:ident) => {{
                let reuse = match reuse {
                    Some(TensorValue::$variant(a)) => Some(a),
                    _ => None,
                };
                TensorValue::$variant(copy_inspecting($v, reuse, inspect))
            }};
        }
        match view {
            V::Bool(v) => arm!(v, Bool),
            V::I8(v) => arm!(v, Int8),
            V::I16(v) => arm!(v, Int16),
            V::I32(v) => arm!(v, Int32),
            V::I64(v) => arm!(v, Int64),
            V::U8(v) => arm!(v, UInt8),
            V::U16(v) => arm!(v, UInt16),
            V::U32(v) => arm!(v, UInt32),
            V::U64(v) => arm!(v, UInt64),
            V::F16(v) => arm!(v, Float16),
            V::F32(v) => arm!(v, Float32),
            V::F64(v) => arm!(v, Float64),
        }
    }

    /// The elements of a real-valued tensor as `f64`, in logical (row-major) order; `None` for
    /// complex numbers and strings. One definition for every reader that charts or summarises
    /// values (smdebug-export's statistics, smdebug-report's charts): a bool is 0 or 1, and
    /// 64-bit integers round to the nearest `f64` as numpy's `astype(float)` does.
    ///
    /// ```
    /// use smdebug_record::TensorValue;
    /// let t = TensorValue::from(ndarray::arr1(&[1u8, 200]).into_dyn());
    /// assert_eq!(t.to_f64_vec(), Some(vec![1.0, 200.0]));
    /// ```
    pub fn to_f64_vec(&self) -> Option<Vec<f64>> {
        Some(match self {
            TensorValue::Float16(a) => a.iter().map(|x| x.to_f64()).collect(),
            TensorValue::Float32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::Float64(a) => a.iter().copied().collect(),
            TensorValue::Int8(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::Int16(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::Int32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::Int64(a) => a.iter().map(|&x| x as f64).collect(),
            TensorValue::UInt8(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::UInt16(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::UInt32(a) => a.iter().map(|&x| f64::from(x)).collect(),
            TensorValue::UInt64(a) => a.iter().map(|&x| x as f64).collect(),
            TensorValue::Bool(a) => a.iter().map(|&x| if x { 1.0 } else { 0.0 }).collect(),
            TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
                return None
            }
        })
    }

    /// The array if the tensor holds elements of type `T`.
    ///
    /// ```
    /// use smdebug_record::TensorValue;
    /// let t = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
    /// assert_eq!(t.as_array::<f32>().unwrap().sum(), 3.0);
    /// assert!(t.as_array::<f64>().is_none());
    /// ```
    pub fn as_array<T: Element>(&self) -> Option<&ArrayD<T>> {
        T::array_of(self)
    }

    /// The element bytes in C (row-major) order: little-endian numbers as in
    /// `tensor_content` (bool as one 0/1 byte, complex as (real, imag)). Strings, which have
    /// no fixed width, are each a `u32` LE byte count followed by the UTF-8 bytes.
    ///
    /// This is the canonical form hashed by the project's dumps (numpy's `tobytes()` for
    /// numeric arrays), so equal hashes mean equal values on both implementations.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        dispatch!(self, a => le_bytes(a), s => {
            let mut out = Vec::new();
            for x in s.iter() {
                out.extend_from_slice(&(x.len() as u32).to_le_bytes());
                out.extend_from_slice(x.as_bytes());
            }
            out
        })
    }

    /// Appends the numeric values' little-endian bytes (the `tensor_content` of
    /// [`TensorValue::to_proto`]) to `out`; nothing for strings.
    pub fn write_le(&self, out: &mut Vec<u8>) {
        dispatch!(self, a => write_le(a, out), _s => {})
    }

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
                    return Err(Error::UnencodableTensor {
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
        (d, _) => DType::from_proto(d).ok_or(Error::UnsupportedDType {
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
) -> Error {
    Error::malformed(format!(
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

fn le_bytes<T: Element>(a: &ArrayD<T>) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len() * T::SIZE);
    write_le(a, &mut out);
    out
}

fn write_le<T: Element>(a: &ArrayD<T>, out: &mut Vec<u8>) {
    // `iter()` walks in logical (C) order whatever the memory layout, like numpy's
    // `tobytes()` does for Fortran-ordered or strided arrays.
    match a.as_slice() {
        Some(slice) => T::put_le_slice(slice, out),
        None => {
            out.reserve(a.len() * T::SIZE);
            a.iter().for_each(|&x| x.put_le(out))
        }
    }
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
            usize::try_from(d.size)
                .map_err(|_| Error::malformed(format!("dimension size {} is invalid", d.size)))
        })
        .collect()
}

/// Product of the dims, failing on overflow (a shape read from input can claim anything).
fn element_count(shape: &[usize]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        acc.checked_mul(d)
            .ok_or_else(|| Error::malformed(format!("shape {shape:?} has too many elements")))
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
            return Err(Error::malformed(format!(
                "{} tensor of shape {shape:?} has neither tensor_content nor values",
                T::DTYPE
            )))
        }
        None => {
            return Err(Error::malformed(format!(
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
        .map_err(|e| Error::malformed(format!("cannot shape values as {shape:?}: {e}")))
}

fn strings(proto: &TensorProto, shape: &[usize], count: usize) -> Result<ArrayD<String>> {
    if proto.string_val.len() < count {
        return Err(Error::malformed(format!(
            "string tensor of shape {shape:?} has only {} values",
            proto.string_val.len()
        )));
    }
    // Like Python, extra values beyond the shape are ignored.
    let values = proto.string_val[..count]
        .iter()
        .map(|b| {
            String::from_utf8(b.clone())
                .map_err(|e| Error::malformed(format!("string value is not UTF-8: {e}")))
        })
        .collect::<Result<Vec<String>>>()?;
    to_array(shape, values)
}

/// Bytes of one piece of [`TensorValue::from_reduce_view`]'s copy: well inside any current
/// core's L2 cache (256 KiB or more), so a piece is still there when `inspect` reads it.
/// 16 KiB pieces, which stay in L1, measured no faster (more calls per tensor).
const COPY_PIECE_BYTES: usize = 64 << 10;

/// A piece of a copy as a 1-d view.
fn piece_view<T>(s: &[T]) -> smdebug_reduce::TensorView<'_>
where
    for<'b> smdebug_reduce::TensorView<'b>: From<ndarray::ArrayViewD<'b, T>>,
{
    ndarray::ArrayView1::from(s).into_dyn().into()
}

/// `v` copied into `reuse` (same length) or a new array, `inspect` called on the copy.
fn copy_inspecting<T: Clone>(
    v: &ndarray::ArrayViewD<'_, T>,
    reuse: Option<ArrayD<T>>,
    inspect: &mut dyn FnMut(smdebug_reduce::TensorView<'_>),
) -> ArrayD<T>
where
    for<'b> smdebug_reduce::TensorView<'b>: From<ndarray::ArrayViewD<'b, T>>,
{
    let shape = IxDyn(v.shape());
    let piece = (COPY_PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    let Some(src) = v.as_slice() else {
        let a = v.to_owned();
        inspect(a.view().into());
        return a;
    };
    // A standard-layout array of the same length takes the new shape as it is.
    if let Some(Ok(mut a)) = reuse
        .filter(|b| b.len() == src.len())
        .map(|b| b.into_shape_with_order(shape.clone()))
    {
        if let Some(dst) = a.as_slice_mut() {
            for (d, s) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
                d.clone_from_slice(s);
                inspect(piece_view(d));
            }
            return a;
        }
    }
    let mut out = Vec::with_capacity(src.len());
    for s in src.chunks(piece) {
        let from = out.len();
        out.extend_from_slice(s);
        inspect(piece_view(&out[from..]));
    }
    ArrayD::from_shape_vec(shape, out).unwrap_or_else(|_| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::Element;

    /// The bytes of `values` starting `shift` bytes into a buffer, so that the slice is
    /// aligned for the element type or not.
    fn shifted<T: Element>(values: &[T], shift: usize) -> Vec<u8> {
        let mut out = vec![0xAB; shift];
        T::put_le_slice(values, &mut out);
        out
    }

    #[test]
    fn content_decodes_exactly_whether_aligned_or_not() {
        let f32s: Vec<f32> = (0..1000)
            .map(|i| (i as f32 * 0.37).sin() * 1e6)
            .chain([f32::NAN, f32::INFINITY, -0.0, f32::MIN_POSITIVE / 2.0])
            .collect();
        let f64s: Vec<f64> = f32s.iter().map(|&x| f64::from(x) * 1e-300).collect();
        let i16s: Vec<i16> = (-500..500).collect();
        for shift in 0..9 {
            let b = shifted(&f32s, shift);
            let back = f32::vec_from_le(&b[shift..]);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&back), bits(&f32s), "f32 at shift {shift}");
            let b = shifted(&f64s, shift);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let back = f64::vec_from_le(&b[shift..]);
            assert_eq!(bits(&back), bits(&f64s), "f64 at shift {shift}");
            let b = shifted(&i16s, shift);
            assert_eq!(i16::vec_from_le(&b[shift..]), i16s, "i16 at shift {shift}");
            // A trailing partial element is not an element.
            let b = shifted(&i16s, shift);
            assert_eq!(i16::vec_from_le(&b[shift..b.len() - 1]), i16s[..999]);
        }
    }
}
