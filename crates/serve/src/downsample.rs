//! Long curves thinned on the server to what a chart can draw: per pixel bucket the first,
//! last, smallest and largest point (M4), so that a spike survives and a 100,000-step curve
//! costs the page a few thousand points.

/// The indices of `steps`/`values` to keep for a chart `width` buckets wide, in order.
///
/// Points are bucketed by step (the x axis), not by index, so an uneven save schedule keeps
/// its shape. A bucket with a gap (`None`) keeps its first gap, so a line is still broken
/// where the data is. Everything is kept when there are at most `4 * width` points.
///
/// ```
/// let steps: Vec<i64> = (0..100_000).collect();
/// let values: Vec<Option<f64>> = steps.iter().map(|&s| Some((s % 1000) as f64)).collect();
/// let keep = smdebug_serve::downsample(&steps, &values, 500);
/// assert!(keep.len() <= 2000);
/// assert_eq!(keep[0], 0);
/// assert_eq!(*keep.last().unwrap(), 99_999);
/// // Every bucket of 200 steps spans a whole sawtooth tooth or part of one: its top is kept.
/// assert!(keep.iter().any(|&i| values[i] == Some(999.0)));
/// ```
pub fn downsample(steps: &[i64], values: &[Option<f64>], width: usize) -> Vec<usize> {
    let n = steps.len().min(values.len());
    let width = width.max(1);
    if n <= width.saturating_mul(4) {
        return (0..n).collect();
    }
    let first = steps[0] as i128;
    let span = (steps[n - 1] as i128 - first + 1).max(1);
    let bucket_of = |s: i64| (((s as i128 - first).max(0) * width as i128) / span) as usize;
    let mut keep = Vec::with_capacity(width * 4);
    let mut i = 0;
    while i < n {
        let b = bucket_of(steps[i]);
        let start = i;
        let (mut lo, mut hi, mut gap) = (None::<usize>, None::<usize>, None::<usize>);
        while i < n && bucket_of(steps[i]) == b {
            match values[i] {
                Some(v) => {
                    if lo.is_none_or(|j| v < values[j].unwrap_or(f64::INFINITY)) {
                        lo = Some(i);
                    }
                    if hi.is_none_or(|j| v > values[j].unwrap_or(f64::NEG_INFINITY)) {
                        hi = Some(i);
                    }
                }
                None => {
                    gap.get_or_insert(i);
                }
            }
            i += 1;
        }
        let mut picked = [Some(start), lo, hi, gap, Some(i - 1)];
        picked.sort_unstable();
        for j in picked.into_iter().flatten() {
            if keep.last() != Some(&j) {
                keep.push(j);
            }
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept_whole() {
        let steps = [0, 5, 10];
        let values = [Some(1.0), None, Some(2.0)];
        assert_eq!(downsample(&steps, &values, 100), [0, 1, 2]);
    }

    #[test]
    fn spikes_and_gaps_survive_and_order_is_kept() {
        let steps: Vec<i64> = (0..100_000).collect();
        let mut values: Vec<Option<f64>> = vec![Some(1.0); steps.len()];
        values[54_321] = Some(1e9);
        values[77_777] = None;
        values[12_345] = Some(-5.0);
        let keep = downsample(&steps, &values, 300);
        assert!(keep.len() <= 1200, "{}", keep.len());
        assert!(keep.windows(2).all(|w| w[0] < w[1]));
        for must in [0, 12_345, 54_321, 77_777, 99_999] {
            assert!(keep.contains(&must), "{must}");
        }
    }

    #[test]
    fn buckets_follow_steps_not_indices() {
        // 10,000 dense steps then 10,000 sparse ones far away: the sparse half keeps its
        // share of the width.
        let mut steps: Vec<i64> = (0..10_000).collect();
        steps.extend((0..10_000).map(|i| 1_000_000 + i * 100));
        let values: Vec<Option<f64>> = steps.iter().map(|&s| Some(s as f64)).collect();
        let keep = downsample(&steps, &values, 100);
        let sparse = keep.iter().filter(|&&i| i >= 10_000).count();
        assert!(sparse > keep.len() / 2, "{sparse} of {}", keep.len());
    }
}
