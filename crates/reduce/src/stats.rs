//! Data-quality statistics of a tensor (which the original does not compute).

use crate::element::{AccFloat, Element};
use crate::kernel::Fused;

/// Counts of non-finite values and statistics of the finite ones, from the same pass that
/// computes the reductions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stats {
    /// Number of elements.
    pub len: usize,
    /// Number of NaN elements (always 0 for integers and bool).
    pub nan_count: u64,
    /// Number of ±infinite elements (always 0 for integers and bool).
    pub inf_count: u64,
    /// Smallest finite element, `None` if there is none.
    pub finite_min: Option<f64>,
    /// Largest finite element, `None` if there is none.
    pub finite_max: Option<f64>,
    /// Mean of the finite elements (accumulated in `f64`), `None` if there is none.
    pub finite_mean: Option<f64>,
}

impl Stats {
    /// Number of finite elements.
    pub fn finite_count(&self) -> u64 {
        self.len as u64 - self.nan_count - self.inf_count
    }

    /// True when every element is finite.
    pub fn all_finite(&self) -> bool {
        self.nan_count == 0 && self.inf_count == 0
    }
}

pub(crate) fn from_fused<T: Element>(x: &[T], f: &Fused<T>, moments: bool) -> Stats {
    let mut s = Stats {
        len: f.n,
        nan_count: f.nan,
        inf_count: f.inf,
        ..Stats::default()
    };
    if f.n == 0 {
        return s;
    }
    if s.all_finite() {
        s.finite_min = Some(f.min.to_f64());
        s.finite_max = Some(f.max.to_f64());
        s.finite_mean = Some(if moments {
            f.mean
        } else {
            f.sum_acc.to_f64() / f.n as f64
        });
        return s;
    }
    let finite = s.finite_count();
    if finite == 0 {
        return s;
    }
    // Rare path: some values are not finite, so the pass's extremes and sums include them;
    // a second pass looks at the finite ones only.
    let f = crate::finite::finite_stats(x);
    s.finite_min = f.min();
    s.finite_max = f.max();
    s.finite_mean = f.mean();
    s
}
