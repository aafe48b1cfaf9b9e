//! What smdebug's PyTorch hook saves (`torch` operations on the tensor).

use crate::element::{AccFloat, Element};
use crate::kernel::{fused, Fused};
use crate::numpy::{abs_derivable, fres, map, mean_result, needs_fused, vector_l2};
use crate::{Flavor, ReduceError, Reduction, ReductionRequest, Scalar};
use std::cmp::Ordering;

pub(crate) fn reduce<T: Element>(
    x: &[T],
    requests: &[ReductionRequest],
    plain: Option<&Fused<T>>,
) -> Vec<Result<Scalar, ReduceError>> {
    let mut out: Vec<Option<Result<Scalar, ReduceError>>> = vec![None; requests.len()];
    let abs_fused = requests.iter().any(|r| r.abs && needs_fused(r));
    let derive = abs_fused && abs_derivable::<T>(requests);
    let computed;
    let plain = match plain {
        Some(p) => Some(p),
        None if derive || requests.iter().any(|r| !r.abs && needs_fused(r)) => {
            computed = fused::<T, false, true>(x);
            Some(&computed)
        }
        None => None,
    };
    group::<T, false>(x, requests, plain, &mut out);
    let derived = if derive {
        plain.map(Fused::abs_of_float)
    } else {
        None
    };
    group::<T, true>(x, requests, derived.as_ref(), &mut out);
    out.into_iter()
        .map(|r| r.expect("every request belongs to one abs group"))
        .collect()
}

fn group<T: Element, const ABS: bool>(
    x: &[T],
    requests: &[ReductionRequest],
    pre: Option<&Fused<T>>,
    out: &mut [Option<Result<Scalar, ReduceError>>],
) {
    let mine = || requests.iter().enumerate().filter(|(_, r)| r.abs == ABS);
    if mine().next().is_none() {
        return;
    }
    let computed;
    let f = match pre {
        Some(f) => Some(f),
        None if mine().any(|(_, r)| needs_fused(r)) => {
            computed = fused::<T, ABS, true>(x);
            Some(&computed)
        }
        None => None,
    };
    for (i, r) in mine() {
        out[i] = Some(one::<T, ABS>(x, *r, f));
    }
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
