//! `--steps A:B` and `--last N`: the steps a command that reads a trial loads. Only the
//! index files of those steps are listed and read (docs/src/scale.md).
use smdebug_trial::{StepRange, TrialOptions};

/// The step selection shared by `dump`, `inspect` and `rules` (`export` has its own
/// `--steps`, parsed the same way).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StepArgs {
    /// Load only global steps A <= step < B (`A:B`, `A:`, `:B`, or one step `N`); the
    /// index files of other steps are not even listed.
    #[arg(long, value_name = "A:B")]
    pub steps: Option<StepRange>,
    /// Load only the last N steps (before the end of `--steps`, if given) that exist when
    /// the trial is opened, found without listing the older index folders.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub last: Option<u64>,
}

impl StepArgs {
    /// `options` loading only the selected steps.
    pub fn apply(&self, options: TrialOptions) -> TrialOptions {
        TrialOptions {
            range_steps: self
                .steps
                .and_then(StepRange::to_range_steps)
                .or(options.range_steps),
            last_steps: self
                .last
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                .or(options.last_steps),
            ..options
        }
    }
}

/// Steps as runs, `0-2,5,7-8` (`none` when empty); after `max_runs` runs the rest is counted,
/// `… (12 runs)`, so that a message about a long trial stays one line.
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
