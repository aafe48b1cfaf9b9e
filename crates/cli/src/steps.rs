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
