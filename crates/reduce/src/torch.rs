//! What smdebug's PyTorch hook saves (`torch` operations on the tensor).

use crate::element::{AccFloat, Element};
use crate::groups::reduce_in_groups;
use crate::kernel::Fused;
use crate::numpy::{fres, map, mean_result, vector_l2};
use crate::{Flavor, ReduceError, Reduction, ReductionRequest, Scalar};
use std::cmp::Ordering;

pub(crate) fn reduce<T: Element>(
    x: &[T],
    requests: &[ReductionRequest],
    plain: Option<&Fused<T>>,
) -> Vec<Result<Scalar, ReduceError>> {
    // torch's passes always carry moments: its `std`/`variance` come from them too.
    reduce_in_groups(
        x,
        requests,
        plain,
        |_| true,
        &|r, f| one::<T, false>(x, r, f),
        &|r, f| one::<T, true>(x, r, f),
    )
}

fn one<T: Element, const ABS: bool>(
    x: &[T],
    req: ReductionRequest,
    f: Option<&Fused<T>>,
) -> Result<Scalar, ReduceError> {
    let n = x.len();
    let fused = || f.expect("fused pass computed for this request");
    let float_only = matches!(
        req.reduction,
        Reduction::Mean | Reduction::Std | Reduction::Variance | Reduction::L1 | Reduction::L2
    );
    if float_only && !T::IS_FLOAT {
        return Err(ReduceError::UnsupportedDtype {
            request: req,
            dtype: T::DTYPE,
            flavor: Flavor::PyTorch,
        });
    }
    let empty = || ReduceError::EmptyTensor {
        request: req,
        flavor: Flavor::PyTorch,
    };
    Ok(match req.reduction {
        Reduction::Min | Reduction::Max => {
            let f = fused();
            if n == 0 {
                return Err(empty());
            }
            if f.nan > 0 {
                fres::<T>(f64::NAN)
            } else if req.reduction == Reduction::Min {
                f.min.to_scalar()
            } else {
                f.max.to_scalar()
            }
        }
        Reduction::Sum => {
            let f = fused();
            if T::IS_FLOAT {
                fres::<T>(f.sum_acc.to_f64())
            } else {
                Scalar::I64(f.isum as i64)
            }
        }
        Reduction::Mean => mean_result::<T>(fused().sum_acc, n),
        Reduction::Variance | Reduction::Std => {
            let f = fused();
            let var = if n < 2 || f.nan > 0 || f.inf > 0 {
                f64::NAN
            } else {
                f.m2 / (n - 1) as f64
            };
            let v = fres::<T>(var);
            if req.reduction == Reduction::Std {
                fres::<T>(var.sqrt())
            } else {
                v
            }
        }
        Reduction::L1 => fres::<T>(fused().abs_acc.to_f64()),
        Reduction::L2 => {
            let f = fused();
            fres::<T>(if f.nan > 0 {
                f64::NAN
            } else {
                vector_l2::<T>(f)
            })
        }
        Reduction::Prod => {
            if T::IS_FLOAT {
                fres::<T>(x.iter().fold(1.0, |p, &e| p * map::<T, ABS>(e).to_f64()))
            } else {
                let p = x
                    .iter()
                    .fold(1u64, |p, &e| p.wrapping_mul(map::<T, ABS>(e).wrap_bits()));
                Scalar::I64(p as i64)
            }
        }
        Reduction::Median => {
            if n == 0 {
                return Err(empty());
            }
            if T::IS_FLOAT && x.iter().any(|v| v.is_nan()) {
                return Ok(fres::<T>(f64::NAN));
            }
            // torch.median returns the lower of the two middle values, in the input dtype.
            let mut v: Vec<T> = x.iter().map(|&e| map::<T, ABS>(e)).collect();
            let k = (n - 1) / 2;
            let (_, m, _) =
                v.select_nth_unstable_by(k, |a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
            m.to_scalar()
        }
    })
}
