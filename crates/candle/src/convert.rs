//! candle tensor → `smdebug_record::TensorValue`.

use candle_core::{CpuStorage, DType, Storage, Tensor as CTensor};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use smdebug_hook::{LentTensor, TensorView};
use smdebug_record::TensorValue;

use crate::error::{CandleError, Result};

/// Converts a candle tensor (any device, any layout) into the hook's tensor type.
///
/// Cost: exactly one copy of the elements for a contiguous tensor of a dtype smdebug
/// writes (`f16`, `f32`, `f64`, `u8`, `u32`, `i16`, `i32`, `i64`): candle's `to_vec1` copies
/// the device buffer (CPU memory or a GPU download) into a `Vec`, and ndarray then takes
/// that `Vec` as its storage without copying. That copy cannot be avoided: the writer
/// thread must own the values while the training thread goes on updating the parameters in
/// place. A non-contiguous tensor costs one more copy (candle makes it contiguous first),
/// and `bf16` / 8-bit and smaller float formats — which smdebug's numpy writer cannot
/// store — are widened to `f32` first (their dtype is not kept).
pub fn to_smdebug(name: &str, t: &CTensor) -> Result<TensorValue> {
    let shape = t.dims().to_vec();
    let flat = t.flatten_all().map_err(|source| CandleError::Candle {
        name: name.to_owned(),
        source,
    })?;
    let wrap = |source| CandleError::Candle {
        name: name.to_owned(),
        source,
    };
    let tensor = match t.dtype() {
        DType::F32 => array(name, &shape, flat.to_vec1::<f32>().map_err(wrap)?)?,
        DType::F64 => array(name, &shape, flat.to_vec1::<f64>().map_err(wrap)?)?,
        DType::F16 => array(name, &shape, flat.to_vec1::<half::f16>().map_err(wrap)?)?,
        DType::U8 => array(name, &shape, flat.to_vec1::<u8>().map_err(wrap)?)?,
        DType::U32 => array(name, &shape, flat.to_vec1::<u32>().map_err(wrap)?)?,
        DType::I16 => array(name, &shape, flat.to_vec1::<i16>().map_err(wrap)?)?,
        DType::I32 => array(name, &shape, flat.to_vec1::<i32>().map_err(wrap)?)?,
        DType::I64 => array(name, &shape, flat.to_vec1::<i64>().map_err(wrap)?)?,
        _ => {
            let wide = flat.to_dtype(DType::F32).map_err(wrap)?;
            array(name, &shape, wide.to_vec1::<f32>().map_err(wrap)?)?
        }
    };
    Ok(tensor)
}

/// A CPU candle tensor lent to the hook ([`LentTensor`]): a clone of the handle (a
/// reference-count increment), for a tensor nothing writes to again (an activation, a
/// gradient; not a variable, which the optimizer updates in place). The hook's writer thread
/// copies it when it writes or records it, and drops the handle then.
#[derive(Debug, Clone)]
pub(crate) struct Lent {
    name: String,
    tensor: CTensor,
}

impl Lent {
    /// Lends `tensor`, called `name` in error messages.
    pub(crate) fn new(name: &str, tensor: CTensor) -> Self {
        Lent {
            name: name.to_owned(),
            tensor,
        }
    }
}

impl LentTensor for Lent {
    fn len(&self) -> usize {
        self.tensor.elem_count()
    }

    fn with_view(&self, f: &mut dyn FnMut(TensorView<'_>)) -> bool {
        let (storage, layout) = self.tensor.storage_and_layout();
        let (Storage::Cpu(cpu), Some((start, end))) = (&*storage, layout.contiguous_offsets())
        else {
            return false;
        };
        let shape = IxDyn(self.tensor.dims());
        macro_rules! lend {
            ($v:expr, $variant:ident) => {
                match $v.get(start..end).map(|s| ArrayViewD::from_shape(shape, s)) {
                    Some(Ok(view)) => {
                        f(TensorView::$variant(view));
                        true
                    }
                    _ => false,
                }
            };
        }
        match cpu {
            CpuStorage::F32(v) => lend!(v, F32),
            CpuStorage::F64(v) => lend!(v, F64),
            CpuStorage::F16(v) => lend!(v, F16),
            CpuStorage::U8(v) => lend!(v, U8),
            CpuStorage::U32(v) => lend!(v, U32),
            CpuStorage::I16(v) => lend!(v, I16),
            CpuStorage::I32(v) => lend!(v, I32),
            CpuStorage::I64(v) => lend!(v, I64),
            _ => false,
        }
    }

    fn to_value(&self) -> std::result::Result<TensorValue, String> {
        to_smdebug(&self.name, &self.tensor).map_err(|e| e.to_string())
    }
}

/// Reads a one-element candle tensor (a loss, a metric) as `f64`.
pub fn scalar_value(name: &str, t: &CTensor) -> Result<f64> {
    let n = t.elem_count();
    if n != 1 {
        return Err(CandleError::NotScalar {
            name: name.to_owned(),
            elements: n,
        });
    }
    let wrap = |source| CandleError::Candle {
        name: name.to_owned(),
        source,
    };
    let v = t
        .flatten_all()
        .and_then(|f| f.to_dtype(DType::F64))
        .and_then(|f| f.to_vec1::<f64>())
        .map_err(wrap)?;
    Ok(v[0])
}

fn array<T>(name: &str, shape: &[usize], data: Vec<T>) -> Result<TensorValue>
where
    TensorValue: From<ArrayD<T>>,
{
    let a = ArrayD::from_shape_vec(IxDyn(shape), data).map_err(|e| CandleError::Shape {
        name: name.to_owned(),
        shape: shape.to_vec(),
        message: e.to_string(),
    })?;
    Ok(TensorValue::from(a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn converts_f32_matrix_in_row_major_order() {
        let t = CTensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], &Device::Cpu).unwrap();
        let s = to_smdebug("x", &t).unwrap();
        let a = s.as_array::<f32>().unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a[[1, 0]], 4.0);
    }

    #[test]
    fn transposed_view_is_written_in_logical_order() {
        let t = CTensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], &Device::Cpu).unwrap();
        let s = to_smdebug("x", &t.t().unwrap()).unwrap();
        let a = s.as_array::<f32>().unwrap();
        assert_eq!(a.shape(), &[3, 2]);
        assert_eq!(a[[0, 1]], 4.0);
        assert_eq!(a[[2, 0]], 3.0);
    }

    #[test]
    fn bf16_is_widened_and_ints_keep_their_dtype() {
        let t = CTensor::new(&[1.5f32, -2.0], &Device::Cpu)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        let s = to_smdebug("b", &t).unwrap();
        assert_eq!(
            s.as_array::<f32>().unwrap().as_slice().unwrap(),
            &[1.5, -2.0]
        );
        let i = CTensor::new(&[7i64, 8], &Device::Cpu).unwrap();
        let s = to_smdebug("i", &i).unwrap();
        assert_eq!(s.as_array::<i64>().unwrap().as_slice().unwrap(), &[7, 8]);
    }

    #[test]
    fn zero_d_tensor_keeps_shape_and_scalar_value_refuses_vectors() {
        let t = CTensor::new(2.5f32, &Device::Cpu).unwrap();
        let s = to_smdebug("l", &t).unwrap();
        assert_eq!(s.shape(), &[] as &[usize]);
        assert_eq!(scalar_value("l", &t).unwrap(), 2.5);
        let v = CTensor::new(&[1f32, 2.], &Device::Cpu).unwrap();
        assert!(matches!(
            scalar_value("v", &v),
            Err(CandleError::NotScalar { elements: 2, .. })
        ));
    }
}
