//! [`TensorValue`]: an `ndarray::ArrayD` of one of smdebug's dtypes, its [`Element`] types and
//! their little-endian bytes. The `TensorProto` codec is in `tensor_proto.rs`.
use crate::dtype::DType;
use half::f16;
use ndarray::{ArrayD, IxDyn};
use num_complex::{Complex32, Complex64};
use std::fmt;

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
/// allocation before copying, a second pass over as much memory as the copy itself, on the
/// path that reads every value of a trial. `bytes` need not be aligned.
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

/// The [`Element`] methods every plain-old-data element type shares: bulk little-endian
/// conversion by casting, and the [`TensorValue`] variant `$dtype` that holds its arrays.
macro_rules! pod_element_common {
    ($dtype:ident) => {
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
    };
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
            pod_element_common!($dtype);
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
            pod_element_common!($dtype);
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

/// Bytes of one piece of [`TensorValue::from_reduce_view`]'s copy: well inside any current
/// core's L2 cache (256 KiB or more), so a piece is still there when `inspect` reads it.
/// Smaller pieces that would fit L1 only add calls per tensor.
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
