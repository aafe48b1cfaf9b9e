//! Steps written as runs (`0-2,5,7-8`), the form every message about steps uses.

/// Steps as runs, `0-2,5,7-8` (`none` when empty); after `max_runs` runs the rest is
/// counted, `… (12 runs)`, so that a message about a long trial stays one line. `steps` is
/// sorted ascending.
///
/// ```
/// assert_eq!(smdebug_diagnose::step_runs(&[0, 1, 2, 5, 7, 8], usize::MAX), "0-2,5,7-8");
/// ```
pub fn step_runs(steps: &[i64], max_runs: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let mut j = i;
        while j + 1 < steps.len() && steps[j + 1] == steps[j].saturating_add(1) {
            j += 1;
        }
        parts.push(if i == j {
            steps[i].to_string()
        } else {
            format!("{}-{}", steps[i], steps[j])
        });
        i = j + 1;
    }
    if parts.is_empty() {
        return "none".into();
    }
    if parts.len() > max_runs {
        let n = parts.len();
        parts.truncate(max_runs);
        parts.push(format!("… ({n} runs)"));
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::step_runs;

    #[test]
    fn runs() {
        assert_eq!(step_runs(&[0, 1, 2, 5, 7, 8], usize::MAX), "0-2,5,7-8");
        assert_eq!(step_runs(&[], usize::MAX), "none");
        assert_eq!(step_runs(&[1, 3, 5], 2), "1,3,… (3 runs)");
        assert_eq!(
            step_runs(&[i64::MAX - 1, i64::MAX], 8),
            format!("{}-{}", i64::MAX - 1, i64::MAX)
        );
    }
}
