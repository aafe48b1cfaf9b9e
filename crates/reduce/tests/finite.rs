//! `finite_stats` (export's statistics kernel) against a plain two-pass reference over the
//! finite values, for every dtype, with NaN/±Inf/zeros at the edges, around the 2048-element
//! block boundary and anywhere.

use half::f16;
use ndarray::Array1;
use proptest::prelude::*;
use smdebug_reduce::{finite_stats, Element};

fn close(a: Option<f64>, b: Option<f64>, tol: f64) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300),
        (a, b) => a == b,
    }
}

fn check<T: Element>(v: &[T]) -> Result<(), TestCaseError> {
    let x = Array1::from(v.to_vec());
    let s = finite_stats(x.view());
    let all: Vec<f64> = v.iter().map(|e| e.to_f64()).collect();
    let fin: Vec<f64> = all.iter().copied().filter(|v| v.is_finite()).collect();
    let n = fin.len() as f64;
    prop_assert_eq!(s.finite, fin.len() as u64);
    prop_assert_eq!(s.nan, all.iter().filter(|v| v.is_nan()).count() as u64);
    prop_assert_eq!(
        s.pos_inf,
        all.iter().filter(|&&v| v == f64::INFINITY).count() as u64
    );
    prop_assert_eq!(
        s.neg_inf,
        all.iter().filter(|&&v| v == f64::NEG_INFINITY).count() as u64
    );
    prop_assert_eq!(s.zeros, all.iter().filter(|&&v| v == 0.0).count() as u64);
    let some = |v: f64| (!fin.is_empty()).then_some(v);
    let mean = fin.iter().sum::<f64>() / n;
    let var = fin.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    prop_assert_eq!(
        s.min(),
        some(fin.iter().copied().fold(f64::INFINITY, f64::min))
    );
    prop_assert_eq!(
        s.max(),
        some(fin.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    );
    let l1: f64 = fin.iter().map(|v| v.abs()).sum();
    prop_assert!(
        close(s.mean(), some(mean), 1e-9) || (mean.abs() * n) <= 1e-9 * l1,
        "{:?} {}",
        s.mean(),
        mean
    );
    prop_assert!(close(s.l1(), some(l1), 1e-12), "{:?} {}", s.l1(), l1);
    let l2 = fin.iter().map(|v| v * v).sum::<f64>().sqrt();
    prop_assert!(close(s.l2(), some(l2), 1e-12), "{:?} {}", s.l2(), l2);
    let std_ok = match (s.std(), some(var.sqrt())) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.max(1e-12) + 1e-12 * l2 / n.sqrt(),
        (a, b) => a == b,
    };
    prop_assert!(std_ok, "{:?} {}", s.std(), var.sqrt());
    Ok(())
}

fn special() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
    ]
}

fn case() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<usize>)> {
    prop_oneof![0usize..40, 2040usize..2060, 8185usize..8200].prop_flat_map(|n| {
        (
            prop::collection::vec(-1e4f64..1e4, n),
            prop::collection::vec(special(), 9),
            prop::collection::vec(any::<usize>(), 0..4),
        )
    })
}

fn with_specials(mut v: Vec<f64>, sp: &[f64], extra: &[usize]) -> Vec<f64> {
    let n = v.len();
    let mut p = vec![0, 1, n.saturating_sub(1), 2047, 2048, 2049, n - n % 8];
    p.extend(extra.iter().map(|e| e % n.max(1)));
    p.retain(|&i| i < n);
    for (k, i) in p.into_iter().enumerate() {
        v[i] = sp[k % sp.len()];
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_dtype_matches_a_two_pass_reference((v, sp, extra) in case()) {
        let v = with_specials(v, &sp, &extra);
        check::<f64>(&v)?;
        check::<f32>(&v.iter().map(|&x| x as f32).collect::<Vec<_>>())?;
        check::<f16>(&v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>())?;
        let ints: Vec<f64> = v.iter().map(|&x| if x.is_finite() { x } else { 0.0 }).collect();
        check::<i8>(&ints.iter().map(|&x| x as i8).collect::<Vec<_>>())?;
        check::<i16>(&ints.iter().map(|&x| x as i16).collect::<Vec<_>>())?;
        check::<i32>(&ints.iter().map(|&x| x as i32).collect::<Vec<_>>())?;
        check::<i64>(&ints.iter().map(|&x| x as i64).collect::<Vec<_>>())?;
        check::<u8>(&ints.iter().map(|&x| x.abs() as u8).collect::<Vec<_>>())?;
        check::<u16>(&ints.iter().map(|&x| x.abs() as u16).collect::<Vec<_>>())?;
        check::<u32>(&ints.iter().map(|&x| x.abs() as u32).collect::<Vec<_>>())?;
        check::<u64>(&ints.iter().map(|&x| x.abs() as u64).collect::<Vec<_>>())?;
        check::<bool>(&ints.iter().map(|&x| x > 0.0).collect::<Vec<_>>())?;
    }
}
