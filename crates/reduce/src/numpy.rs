//! `get_numpy_reduction` semantics.

use crate::element::{float_result_dtype, AccFloat, Element};
use crate::groups::reduce_in_groups;
use crate::kernel::{chunked_pairwise, Fused};
use crate::linalg::spectral_norm;
use crate::pairwise::BUFSIZE;
use crate::{DType, ReduceError, Reduction, ReductionRequest, Scalar};
use std::cmp::Ordering;

/// A float-valued result in numpy's result dtype for `T`.
pub(crate) fn fres<T: Element>(v: f64) -> Scalar {
    Scalar::float(float_result_dtype(T::DTYPE), v)
}

/// numpy's `mean`-style division: an accumulated sum divided by the count as an `f64`
/// (`ret.dtype.type(ret / rcount)`), rounded to the result dtype.
pub(crate) fn mean_result<T: Element>(sum: T::Acc, n: usize) -> Scalar {
    fres::<T>(sum.to_f64() / n as f64)
}

/// The dtype numpy gives `sum`/`prod` of an integer or bool array.
pub(crate) fn int_result(dtype: DType, bits: u64) -> Scalar {
    if dtype.is_unsigned() {
        Scalar::U64(bits)
    } else {
        Scalar::I64(bits as i64)
    }
}

#[inline(always)]
pub(crate) fn map<T: Element, const ABS: bool>(v: T) -> T {
    if ABS {
        v.np_abs()
    } else {
        v
    }
}

/// numpy semantics for every request, computing at most one fused pass per `abs` value
/// (one in all when the `abs_` requests follow from the plain pass). `plain` is an already
/// computed non-abs pass with moments, if the caller has one.
pub(crate) fn reduce<T: Element>(
    x: &[T],
    shape: &[usize],
    requests: &[ReductionRequest],
    plain: Option<&Fused<T>>,
) -> Vec<Result<Scalar, ReduceError>> {
    reduce_in_groups(
        x,
        requests,
        plain,
        |r| r.reduction == Reduction::L2,
        &|r, f| one::<T, false>(x, shape, r, f),
        &|r, f| one::<T, true>(x, shape, r, f),
    )
}

fn one<T: Element, const ABS: bool>(
    x: &[T],
    shape: &[usize],
    req: ReductionRequest,
    f: Option<&Fused<T>>,
) -> Result<Scalar, ReduceError> {
    let n = x.len();
    let fused = || f.expect("fused pass computed for this request");
    Ok(match req.reduction {
        Reduction::Min | Reduction::Max => {
            let f = fused();
            let is_min = req.reduction == Reduction::Min;
            if n == 0 {
                return Err(ReduceError::EmptyArray {
                    request: req,
                    operation: if is_min { "minimum" } else { "maximum" },
                });
            }
            if f.nan > 0 {
                fres::<T>(f64::NAN)
            } else if is_min {
                f.min.to_scalar()
            } else {
                f.max.to_scalar()
            }
        }
        Reduction::Sum => {
            let f = fused();
            if T::IS_FLOAT {
                fres::<T>(f.sum_store.to_f64())
            } else {
                int_result(T::DTYPE, f.isum)
            }
        }
        Reduction::Mean => mean_result::<T>(fused().sum_acc, n),
        Reduction::Variance => var::<T, ABS>(x, fused()),
        Reduction::Std => var::<T, ABS>(x, fused()).sqrt(),
        Reduction::Prod => prod::<T, ABS>(x),
        Reduction::Median => median::<T, ABS>(x),
        Reduction::L1 | Reduction::L2 => return norm::<T, ABS>(x, shape, req, fused()),
    })
}

/// numpy's two-pass `_var`: mean as an array division in the element dtype, deviations and
/// their squares rounded to the element dtype, then a pairwise sum of the squares.
fn var<T: Element, const ABS: bool>(x: &[T], f: &Fused<T>) -> Scalar {
    let n = x.len();
    let mean = T::div_count(f.sum_store, n);
    let s = chunked_pairwise::<T::Acc>(n, T::round_acc, |start, buf| {
        for (b, &e) in buf.iter_mut().zip(&x[start..]) {
            let d = T::round_acc(map::<T, ABS>(e).to_acc() - mean);
            *b = T::round_acc(d * d);
        }
    });
    mean_result::<T>(s, n)
}

/// numpy's `multiply.reduce`: sequential within a buffer, the running product stored in the
/// element dtype between buffers; integers wrap in 64 bits.
fn prod<T: Element, const ABS: bool>(x: &[T]) -> Scalar {
    if T::IS_FLOAT {
        let mut store = T::Acc::ONE;
        for buf in x.chunks(BUFSIZE) {
            let mut io = store;
            for &e in buf {
                io = io * map::<T, ABS>(e).to_acc();
            }
            store = T::round_acc(io);
        }
        fres::<T>(store.to_f64())
    } else {
        let p = x
            .iter()
            .fold(1u64, |p, &e| p.wrapping_mul(map::<T, ABS>(e).wrap_bits()));
        int_result(T::DTYPE, p)
    }
}

/// `np.median`: the mean (numpy's `mean`, so in its result dtype) of the middle element(s)
/// found by selection; NaN if there is any NaN; NaN for an empty array.
fn median<T: Element, const ABS: bool>(x: &[T]) -> Scalar {
    let n = x.len();
    if n == 0 {
        return mean_result::<T>(T::Acc::ZERO, 0);
    }
    if T::IS_FLOAT && x.iter().any(|v| v.is_nan()) {
        return fres::<T>(f64::NAN);
    }
    let mut v: Vec<T> = x.iter().map(|&e| map::<T, ABS>(e)).collect();
    let cmp = |a: &T, b: &T| a.partial_cmp(b).unwrap_or(Ordering::Equal);
    let k = n / 2;
    let (left, hi, _) = v.select_nth_unstable_by(k, cmp);
    let hi = *hi;
    if n % 2 == 1 {
        mean_result::<T>(T::Acc::ZERO + hi.to_acc(), 1)
    } else {
        let lo = left
            .iter()
            .copied()
            .reduce(|a, b| if cmp(&a, &b) == Ordering::Less { b } else { a })
            .expect("an even, non-zero length leaves at least one element on the left");
        mean_result::<T>(T::Acc::ZERO + lo.to_acc() + hi.to_acc(), 2)
    }
}

/// `np.linalg.norm(x, ord)` (after `np.absolute` when `ABS`, which turns a 0-d array into a
/// scalar that smdebug then wraps in a list).
fn norm<T: Element, const ABS: bool>(
    x: &[T],
    shape: &[usize],
    req: ReductionRequest,
    f: &Fused<T>,
) -> Result<Scalar, ReduceError> {
    let ndim = if shape.is_empty() && ABS {
        1
    } else {
        shape.len()
    };
    let is_l1 = req.reduction == Reduction::L1;
    match ndim {
        1 => Ok(if is_l1 {
            fres::<T>(f.abs_store.to_f64())
        } else if T::DTYPE == DType::F16 {
            // numpy's HALF_dot: a float accumulator rounded to half once, then a half sqrt.
            let mut tmp = T::Acc::ZERO;
            for &e in x {
                let a = map::<T, ABS>(e).to_acc();
                tmp = tmp + a * a;
            }
            fres::<T>(T::round_acc(tmp).to_f64()).sqrt()
        } else if f.nan > 0 {
            fres::<T>(f64::NAN)
        } else {
            fres::<T>(vector_l2::<T>(f))
        }),
        2 => {
            let (rows, cols) = (shape[0], shape[1]);
            if is_l1 {
                if cols == 0 {
                    return Err(ReduceError::EmptyArray {
                        request: req,
                        operation: "maximum",
                    });
                }
                if rows == 0 {
                    return Ok(fres::<T>(0.0));
                }
                if cols == 1 {
                    // numpy drops the unit axis, so this is a 1-d pairwise reduction.
                    return Ok(fres::<T>(f.abs_store.to_f64()));
                }
                // add.reduce over axis 0 adds whole rows: a sequential sum per column, each
                // addition rounded to the element dtype (which matters for float16).
                let mut sums = vec![T::Acc::ZERO; cols];
                for row in x.chunks_exact(cols) {
                    for (s, &e) in sums.iter_mut().zip(row) {
                        *s = T::round_acc(*s + map::<T, ABS>(e).to_acc().abs());
                    }
                }
                let mut best = sums[0].to_f64();
                for s in &sums {
                    let s = s.to_f64();
                    if s.is_nan() {
                        best = f64::NAN;
                        break;
                    }
                    if s > best {
                        best = s;
                    }
                }
                Ok(fres::<T>(best))
            } else {
                if T::DTYPE == DType::F16 {
                    return Err(ReduceError::UnsupportedLinalgDtype {
                        request: req,
                        dtype: T::DTYPE,
                    });
                }
                if x.is_empty() {
                    return Err(ReduceError::EmptyArray {
                        request: req,
                        operation: "maximum",
                    });
                }
                if f.nan > 0 {
                    return Err(ReduceError::SvdDidNotConverge { request: req });
                }
                if f.inf > 0 {
                    // LAPACK converges on infinities but returns NaN singular values.
                    return Ok(fres::<T>(f64::NAN));
                }
                // float32 inputs are first widened exactly; numpy's own float32 SVD then
                // rounds the float64 result, which is what `fres` does.
                let a: Vec<f64> = x.iter().map(|&e| map::<T, ABS>(e).to_f64()).collect();
                Ok(fres::<T>(spectral_norm(&a, rows, cols)))
            }
        }
        _ => Err(ReduceError::ImproperDimensions {
            request: req,
            ndim: shape.len(),
        }),
    }
}

/// `sqrt(Σx²)` of data without NaN, from the fused pass's moments. An overflowing sum of
/// squares is +∞, as in BLAS `dot` (our per-leaf moments would give NaN there); float32 data
/// overflow where numpy's float32 `dot` does, once Σx² exceeds `f32::MAX`.
pub(crate) fn vector_l2<T: Element>(f: &Fused<T>) -> f64 {
    let limit = if T::DTYPE == DType::F32 {
        f64::from(f32::MAX)
    } else {
        f64::MAX
    };
    if f.inf > 0 || f.sumsq.is_nan() || f.sumsq > limit {
        f64::INFINITY
    } else {
        f.sumsq.sqrt()
    }
}
