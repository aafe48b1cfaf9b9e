//! Property tests against straightforward reference implementations, within the tolerances
//! the crate documents.

use ndarray::{Array1, Array2};
use proptest::prelude::*;
use smdebug_reduce::{reduce, reduce_one, stats, Flavor, Reduction, ReductionRequest, Scalar};

fn get(x: &Array1<f64>, r: Reduction, abs: bool, flavor: Flavor) -> f64 {
    reduce_one(x.view(), ReductionRequest::new(r, abs), flavor)
        .unwrap()
        .to_f64()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn f64_reductions_match_reference(v in prop::collection::vec(-1e6f64..1e6, 1..3000)) {
        let x = Array1::from(v.clone());
        let n = v.len() as f64;
        let abs_sum: f64 = v.iter().map(|a| a.abs()).sum();
        let sum: f64 = v.iter().sum();
        let bound = 1e-13 * n.max(16.0) * abs_sum.max(1.0);
        prop_assert!(close(get(&x, Reduction::Sum, false, Flavor::Numpy), sum, bound));
        prop_assert!(close(get(&x, Reduction::Mean, false, Flavor::Numpy), sum / n, bound / n));
        prop_assert!(close(get(&x, Reduction::L1, false, Flavor::Numpy), abs_sum, bound));
        prop_assert!(close(get(&x, Reduction::Sum, true, Flavor::Numpy), abs_sum, bound));
        let mean = sum / n;
        let sq: f64 = v.iter().map(|a| a * a).sum();
        let m2: f64 = v.iter().map(|a| (a - mean) * (a - mean)).sum();
        let var_tol = 1e-11 * (sq / n).max(1.0);
        prop_assert!(close(get(&x, Reduction::Variance, false, Flavor::Numpy), m2 / n, var_tol));
        prop_assert!(close(get(&x, Reduction::Std, false, Flavor::Numpy), (m2 / n).sqrt(), 1e-6 * (sq / n).sqrt().max(1.0)));
        if v.len() > 1 {
            prop_assert!(close(get(&x, Reduction::Variance, false, Flavor::PyTorch), m2 / (n - 1.0), var_tol * 2.0));
        }
        prop_assert!(close(get(&x, Reduction::L2, false, Flavor::Numpy), sq.sqrt(), 1e-12 * sq.sqrt().max(1.0)));
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        prop_assert_eq!(get(&x, Reduction::Min, false, Flavor::Numpy), min);
        prop_assert_eq!(get(&x, Reduction::Max, false, Flavor::Numpy), max);
        let mut sorted = v.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let k = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 { sorted[k] } else { (sorted[k - 1] + sorted[k]) / 2.0 };
        prop_assert!(close(get(&x, Reduction::Median, false, Flavor::Numpy), median, 1e-9 * median.abs().max(1.0)));
        let s = stats(x.view());
        prop_assert_eq!((s.finite_min, s.finite_max), (Some(min), Some(max)));
    }

    #[test]
    fn f32_sums_within_pairwise_bound(v in prop::collection::vec(-1e3f32..1e3, 0..20_000)) {
        let x = Array1::from(v.clone());
        let exact: f64 = v.iter().map(|&a| f64::from(a)).sum();
        let abs_sum: f64 = v.iter().map(|&a| f64::from(a.abs())).sum();
        let ours = reduce_one(x.view(), ReductionRequest::new(Reduction::Sum, false), Flavor::Numpy).unwrap();
        prop_assert!(matches!(ours, Scalar::F32(_)));
        // Pairwise summation: error below (16 + log2 n) ulps of the sum of magnitudes.
        let levels = 16.0 + (v.len().max(1) as f64).log2();
        prop_assert!(close(ours.to_f64(), exact, levels * f64::from(f32::EPSILON) * abs_sum + 1e-30));
        let t = reduce(x.view(), &[ReductionRequest::new(Reduction::L2, false), ReductionRequest::new(Reduction::Std, false)], Flavor::PyTorch);
        let sq: f64 = v.iter().map(|&a| f64::from(a) * f64::from(a)).sum();
        prop_assert!(close(t[0].as_ref().unwrap().to_f64(), sq.sqrt(), 1e-5 * sq.sqrt() + 1e-30));
    }

    #[test]
    fn integer_sums_and_products_wrap(v in prop::collection::vec(any::<i64>(), 0..200)) {
        let x = Array1::from(v.clone());
        let out = reduce(x.view(), &[ReductionRequest::new(Reduction::Sum, false), ReductionRequest::new(Reduction::Prod, false)], Flavor::Numpy);
        let sum = v.iter().fold(0i64, |a, &b| a.wrapping_add(b));
        let prod = v.iter().fold(1i64, |a, &b| a.wrapping_mul(b));
        prop_assert_eq!(out[0].clone(), Ok(Scalar::I64(sum)));
        prop_assert_eq!(out[1].clone(), Ok(Scalar::I64(prod)));
    }

    #[test]
    fn matrix_norms_match_definitions(rows in 1usize..12, cols in 1usize..12, seed in any::<u64>()) {
        let mut s = seed | 1;
        let m = Array2::from_shape_fn((rows, cols), |_| {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        });
        let l1 = reduce_one(m.view(), ReductionRequest::new(Reduction::L1, false), Flavor::Numpy).unwrap().to_f64();
        let col_max = (0..cols).map(|c| m.column(c).iter().map(|v| v.abs()).sum::<f64>()).fold(0.0, f64::max);
        // Column order for several columns, numpy's pairwise order for one: tiny differences.
        prop_assert!(close(l1, col_max, 1e-13 * col_max.max(1.0)));
        let l2 = reduce_one(m.view(), ReductionRequest::new(Reduction::L2, false), Flavor::Numpy).unwrap().to_f64();
        let fro = m.iter().map(|v| v * v).sum::<f64>().sqrt();
        let best_col = (0..cols).map(|c| m.column(c).iter().map(|v| v * v).sum::<f64>().sqrt()).fold(0.0, f64::max);
        let best_row = (0..rows).map(|r| m.row(r).iter().map(|v| v * v).sum::<f64>().sqrt()).fold(0.0, f64::max);
        prop_assert!(l2 <= fro * (1.0 + 1e-12));
        prop_assert!(l2 >= best_col.max(best_row) * (1.0 - 1e-12));
        // ‖A‖₂² = λmax(AᵀA) ≥ vᵀAᵀAv for the top right singular vector; and for a rank-1
        // matrix u vᵀ it equals |u| |v|.
        let u = m.column(0).to_owned();
        let v = m.row(0).to_owned();
        let r1 = Array2::from_shape_fn((rows, cols), |(i, j)| u[i] * v[j]);
        let r1n = reduce_one(r1.view(), ReductionRequest::new(Reduction::L2, false), Flavor::Numpy).unwrap().to_f64();
        let expect = u.iter().map(|a| a * a).sum::<f64>().sqrt() * v.iter().map(|a| a * a).sum::<f64>().sqrt();
        prop_assert!(close(r1n, expect, 1e-12 * expect.max(1e-300)));
    }
}
