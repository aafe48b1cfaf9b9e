//! How a flavor's requests share work: the plain requests and the `abs_` requests each get at
//! most one fused pass over the data, and the `abs_` pass is derived from the plain one when
//! it can be. The flavors (numpy, torch) differ only in when a pass needs moments and in how
//! each request's value is taken from it.

use crate::element::Element;
use crate::kernel::{fused, Fused};
use crate::{ReduceError, Reduction, ReductionRequest, Scalar};

/// One request's value, from the data and the pass of its group (`None` when no request of
/// the group needed one).
type One<'a, T> = &'a dyn Fn(ReductionRequest, Option<&Fused<T>>) -> Result<Scalar, ReduceError>;

/// Whether a request needs the fused pass (everything but `prod` and `median`).
pub(crate) fn needs_fused(r: &ReductionRequest) -> bool {
    !matches!(r.reduction, Reduction::Prod | Reduction::Median)
}

/// Whether every `abs_` request can be answered from the pass over `x`: true for floats
/// when they only need Σ|x|, Σx² and the NaN/Inf counts (or no pass at all).
pub(crate) fn abs_derivable<T: Element>(requests: &[ReductionRequest]) -> bool {
    T::IS_FLOAT
        && requests.iter().filter(|r| r.abs).all(|r| {
            matches!(
                r.reduction,
                Reduction::Sum
                    | Reduction::Mean
                    | Reduction::L1
                    | Reduction::L2
                    | Reduction::Prod
                    | Reduction::Median
            )
        })
}

fn pass<T: Element, const ABS: bool>(x: &[T], moments: bool) -> Fused<T> {
    if moments {
        fused::<T, ABS, true>(x)
    } else {
        fused::<T, ABS, false>(x)
    }
}

/// Every request's value, in request order. `plain` is an already computed non-abs pass
/// with moments, if the caller has one; `moments` says which requests need the pass's
/// moments (Σx², for `l2`); `plain_one` and `abs_one` answer a plain and an `abs_` request.
pub(crate) fn reduce_in_groups<T: Element>(
    x: &[T],
    requests: &[ReductionRequest],
    plain: Option<&Fused<T>>,
    moments: fn(&ReductionRequest) -> bool,
    plain_one: One<'_, T>,
    abs_one: One<'_, T>,
) -> Vec<Result<Scalar, ReduceError>> {
    let mut out: Vec<Option<Result<Scalar, ReduceError>>> = vec![None; requests.len()];
    let abs_fused = requests.iter().any(|r| r.abs && needs_fused(r));
    let derive = abs_fused && abs_derivable::<T>(requests);
    let plain_needed = derive || requests.iter().any(|r| !r.abs && needs_fused(r));
    let computed;
    let plain = match plain {
        Some(p) => Some(p),
        None if plain_needed => {
            computed = pass::<T, false>(x, requests.iter().any(moments));
            Some(&computed)
        }
        None => None,
    };
    group::<T, false>(x, requests, plain, moments, plain_one, &mut out);
    let derived = if derive {
        plain.map(Fused::abs_of_float)
    } else {
        None
    };
    group::<T, true>(x, requests, derived.as_ref(), moments, abs_one, &mut out);
    out.into_iter()
        .map(|r| r.expect("every request belongs to one abs group"))
        .collect()
}

fn group<T: Element, const ABS: bool>(
    x: &[T],
    requests: &[ReductionRequest],
    pre: Option<&Fused<T>>,
    moments: fn(&ReductionRequest) -> bool,
    one: One<'_, T>,
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
            computed = pass::<T, ABS>(x, mine().any(|(_, r)| moments(r)));
            Some(&computed)
        }
        None => None,
    };
    for (i, r) in mine() {
        out[i] = Some(one(*r, f));
    }
}
