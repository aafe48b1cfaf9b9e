//! The largest singular value of a small dense matrix, without LAPACK.
//!
//! σ_max(A)² is the largest eigenvalue of the Gram matrix G = AᵀA (or AAᵀ, whichever is
//! smaller). The largest eigenvalue is perfectly conditioned (its absolute error is about
//! ε‖G‖ = ε σ_max²), so forming G loses nothing that matters for σ_max, unlike the small
//! singular values. G's eigenvalues come from the cyclic Jacobi method, which converges
//! quadratically and needs no shifts, deflation or iteration-count heuristics.

/// Largest singular value of the `rows × cols` row-major matrix `a` (finite values only,
/// at least one row and one column).
pub(crate) fn spectral_norm(a: &[f64], rows: usize, cols: usize) -> f64 {
    debug_assert_eq!(a.len(), rows * cols);
    // Scaling by the largest magnitude keeps G free of overflow and underflow.
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    let k = rows.min(cols);
    let mut g = vec![0.0f64; k * k];
    if cols <= rows {
        // G = AᵀA (cols × cols), accumulated row by row for sequential access.
        for r in 0..rows {
            let row = &a[r * cols..(r + 1) * cols];
            for i in 0..cols {
                let ai = row[i] / scale;
                if ai == 0.0 {
                    continue;
                }
                for j in i..cols {
                    g[i * k + j] += ai * (row[j] / scale);
                }
            }
        }
    } else {
        // G = AAᵀ (rows × rows).
        for i in 0..rows {
            let ri = &a[i * cols..(i + 1) * cols];
            for j in i..rows {
                let rj = &a[j * cols..(j + 1) * cols];
                g[i * k + j] = ri
                    .iter()
                    .zip(rj)
                    .map(|(x, y)| (x / scale) * (y / scale))
                    .sum();
            }
        }
    }
    for i in 0..k {
        for j in 0..i {
            g[i * k + j] = g[j * k + i];
        }
    }
    let lambda = largest_eigenvalue(&mut g, k);
    lambda.max(0.0).sqrt() * scale
}

/// Largest eigenvalue of the symmetric `k × k` matrix `g` (destroyed), by cyclic Jacobi.
fn largest_eigenvalue(g: &mut [f64], k: usize) -> f64 {
    const MAX_SWEEPS: usize = 64;
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..k)
            .flat_map(|i| (0..k).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| g[i * k + j] * g[i * k + j])
            .sum();
        let diag: f64 = (0..k).map(|i| g[i * k + i] * g[i * k + i]).sum();
        if off <= f64::EPSILON * f64::EPSILON * diag || off == 0.0 {
            break;
        }
        for p in 0..k {
            for q in p + 1..k {
                let apq = g[p * k + q];
                if apq == 0.0 {
                    continue;
                }
                let app = g[p * k + p];
                let aqq = g[q * k + q];
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..k {
                    let grp = g[r * k + p];
                    let grq = g[r * k + q];
                    g[r * k + p] = c * grp - s * grq;
                    g[r * k + q] = s * grp + c * grq;
                }
                for r in 0..k {
                    let gpr = g[p * k + r];
                    let gqr = g[q * k + r];
                    g[p * k + r] = c * gpr - s * gqr;
                    g[q * k + r] = s * gpr + c * gqr;
                }
            }
        }
    }
    (0..k)
        .map(|i| g[i * k + i])
        .fold(f64::NEG_INFINITY, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // numpy: np.linalg.norm([[1,-2],[3,4]], 2) == 5.116672736016927
        let v = spectral_norm(&[1.0, -2.0, 3.0, 4.0], 2, 2);
        assert!((v - 5.116_672_736_016_927).abs() < 1e-13, "{v}");
        // A single row is a vector: its 2-norm.
        let v = spectral_norm(&[3.0, 4.0, 0.0], 1, 3);
        assert!((v - 5.0).abs() < 1e-14);
        let v = spectral_norm(&[3.0, 4.0, 0.0], 3, 1);
        assert!((v - 5.0).abs() < 1e-14);
        // Diagonal: the largest magnitude.
        let v = spectral_norm(&[2.0, 0.0, 0.0, 0.0, -7.0, 0.0, 0.0, 0.0, 1.0], 3, 3);
        assert!((v - 7.0).abs() < 1e-14);
        assert_eq!(spectral_norm(&[0.0; 4], 2, 2), 0.0);
        // No overflow for huge entries.
        let v = spectral_norm(&[1e300, 1e300, 1e300, 1e300], 2, 2);
        assert!((v / 2e300 - 1.0).abs() < 1e-14);
    }
}
