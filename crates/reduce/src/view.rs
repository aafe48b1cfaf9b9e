//! A tensor view of any supported dtype, for callers that only know the dtype at run time.

use crate::{DType, Flavor, Health, ReduceError, ReductionRequest, Scalar, Stats};
use half::f16;
use ndarray::ArrayViewD;

/// A borrowed n-dimensional tensor of any supported dtype. A reader that decodes tensors into
/// its own dynamically typed enum converts (or matches) into this to reduce them.
#[derive(Debug, Clone)]
pub enum TensorView<'a> {
    /// `bool`
    Bool(ArrayViewD<'a, bool>),
    /// `int8`
    I8(ArrayViewD<'a, i8>),
    /// `int16`
    I16(ArrayViewD<'a, i16>),
    /// `int32`
    I32(ArrayViewD<'a, i32>),
    /// `int64`
    I64(ArrayViewD<'a, i64>),
    /// `uint8`
    U8(ArrayViewD<'a, u8>),
    /// `uint16`
    U16(ArrayViewD<'a, u16>),
    /// `uint32`
    U32(ArrayViewD<'a, u32>),
    /// `uint64`
    U64(ArrayViewD<'a, u64>),
    /// `float16`
    F16(ArrayViewD<'a, f16>),
    /// `float32`
    F32(ArrayViewD<'a, f32>),
    /// `float64`
    F64(ArrayViewD<'a, f64>),
}

macro_rules! each {
    ($self:expr, $v:ident => $e:expr) => {
        match $self {
            TensorView::Bool($v) => $e,
            TensorView::I8($v) => $e,
            TensorView::I16($v) => $e,
            TensorView::I32($v) => $e,
            TensorView::I64($v) => $e,
            TensorView::U8($v) => $e,
            TensorView::U16($v) => $e,
            TensorView::U32($v) => $e,
            TensorView::U64($v) => $e,
            TensorView::F16($v) => $e,
            TensorView::F32($v) => $e,
            TensorView::F64($v) => $e,
        }
    };
}

impl TensorView<'_> {
    /// The element dtype.
    pub fn dtype(&self) -> DType {
        match self {
            TensorView::Bool(_) => DType::Bool,
            TensorView::I8(_) => DType::I8,
            TensorView::I16(_) => DType::I16,
            TensorView::I32(_) => DType::I32,
            TensorView::I64(_) => DType::I64,
            TensorView::U8(_) => DType::U8,
            TensorView::U16(_) => DType::U16,
            TensorView::U32(_) => DType::U32,
            TensorView::U64(_) => DType::U64,
            TensorView::F16(_) => DType::F16,
            TensorView::F32(_) => DType::F32,
            TensorView::F64(_) => DType::F64,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, v => v.shape())
    }

    /// The elements' bytes in C order as they lie in memory, when the view is C-contiguous
    /// and the machine little-endian: the little-endian bytes a record holds, for a writer
    /// that encodes the record straight from them. `None` otherwise (copy the elements).
    #[cfg(target_endian = "little")]
    pub fn le_bytes(&self) -> Option<&[u8]> {
        each!(self, v => v.as_slice().map(bytemuck::cast_slice))
    }

    /// `None` on a big-endian machine: memory order is not the records' byte order.
    #[cfg(target_endian = "big")]
    pub fn le_bytes(&self) -> Option<&[u8]> {
        None
    }

    /// [`crate::reduce`] on this view.
    pub fn reduce(
        &self,
        requests: &[ReductionRequest],
        flavor: Flavor,
    ) -> Vec<Result<Scalar, ReduceError>> {
        each!(self, v => crate::reduce(v.view(), requests, flavor))
    }

    /// [`crate::reduce_with_stats`] on this view.
    pub fn reduce_with_stats(
        &self,
        requests: &[ReductionRequest],
        flavor: Flavor,
    ) -> (Vec<Result<Scalar, ReduceError>>, Stats) {
        each!(self, v => crate::reduce_with_stats(v.view(), requests, flavor))
    }

    /// [`crate::reduce_with_health`] on this view.
    pub fn reduce_with_health(
        &self,
        requests: &[ReductionRequest],
        flavor: Flavor,
        histogram: bool,
    ) -> (Vec<Result<Scalar, ReduceError>>, Health) {
        each!(self, v => crate::reduce_with_health(v.view(), requests, flavor, histogram))
    }

    /// [`crate::health`] of this view.
    pub fn health(&self, histogram: bool) -> Health {
        each!(self, v => crate::health(v.view(), histogram))
    }

    /// [`crate::all_finite`] of this view.
    pub fn all_finite(&self) -> bool {
        each!(self, v => crate::all_finite(v.view()))
    }

    /// [`crate::finite_stats`] of this view.
    pub fn finite_stats(&self) -> crate::FiniteStats {
        each!(self, v => crate::finite_stats(v.view()))
    }

    /// [`crate::stats`] of this view.
    pub fn stats(&self) -> Stats {
        each!(self, v => crate::stats(v.view()))
    }
}

macro_rules! from_view {
    ($t:ty, $variant:ident) => {
        impl<'a> From<ArrayViewD<'a, $t>> for TensorView<'a> {
            fn from(v: ArrayViewD<'a, $t>) -> Self {
                TensorView::$variant(v)
            }
        }
    };
}

from_view!(bool, Bool);
from_view!(i8, I8);
from_view!(i16, I16);
from_view!(i32, I32);
from_view!(i64, I64);
from_view!(u8, U8);
from_view!(u16, U16);
from_view!(u32, U32);
from_view!(u64, U64);
from_view!(f16, F16);
from_view!(f32, F32);
from_view!(f64, F64);
