//! Running one piece of work per trial, a bounded number at a time.

use crate::discover::TrialRef;
use crate::error::{FleetError, Result};
use smdebug_trial::parallel::for_each_owned;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one trial's work gave.
#[derive(Debug)]
pub struct TrialOutcome<R, E> {
    /// The trial.
    pub trial: TrialRef,
    /// Its result; a failed trial does not stop the others (unless the run is strict).
    pub result: std::result::Result<R, E>,
}

/// Runs a closure per trial of a fleet, in parallel with at most `jobs` trials in progress
/// at once (memory stays bounded whatever the fleet size), results in trial order.
///
/// A trial's error is reported by name in its [`TrialOutcome`] and the others go on; a
/// strict runner stops starting trials after the first error and returns it as
/// [`FleetError::Trial`] (the first failed trial in trial order among those that ran).
///
/// ```
/// use smdebug_fleet::{Runner, TrialRef};
/// let trials: Vec<TrialRef> = ["a", "b", "c"]
///     .map(|n| TrialRef { name: n.into(), location: format!("/data/{n}") })
///     .to_vec();
/// let work = |t: &TrialRef| if t.name == "b" { Err("corrupt") } else { Ok(t.name.len()) };
/// let outcomes = Runner::new(2).run(&trials, work)?;
/// assert_eq!(outcomes[1].trial.name, "b");
/// assert_eq!(outcomes[1].result, Err("corrupt"));
/// assert_eq!(outcomes[2].result, Ok(1));
/// let err = Runner::new(2).strict(true).run(&trials, work).unwrap_err();
/// assert_eq!(err.to_string(), "trial b: corrupt");
/// # Ok::<(), smdebug_fleet::FleetError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    jobs: usize,
    strict: bool,
}

impl Runner {
    /// A runner with at most `jobs` trials in progress (0 counts as 1), not strict.
    pub fn new(jobs: usize) -> Self {
        Runner {
            jobs: jobs.max(1),
            strict: false,
        }
    }

    /// Whether a trial's error ends the run.
    pub fn strict(self, strict: bool) -> Self {
        Runner { strict, ..self }
    }

    /// The bound on trials in progress.
    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// Whether the runner is strict.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Calls `work` once per trial (see the type's docs). Without `strict`, every trial
    /// runs and the outcomes come back in trial order.
    pub fn run<R, E, F>(&self, trials: &[TrialRef], work: F) -> Result<Vec<TrialOutcome<R, E>>>
    where
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>> + Send,
        F: Fn(&TrialRef) -> std::result::Result<R, E> + Sync,
    {
        let mut outcomes = Vec::with_capacity(trials.len());
        self.run_each(trials, work, |o| {
            outcomes.push(o);
            Ok::<(), FleetError>(())
        })?;
        Ok(outcomes)
    }

    /// [`run`](Self::run) that hands each outcome to `emit` in trial order as soon as it and
    /// those before it are done (trials run on threads of their own through
    /// [`smdebug_trial::parallel::for_each_owned`], this thread only emitting), so a
    /// command's output follows its trials instead of waiting for the last. A strict runner returns the first failed
    /// trial's error (in trial order) instead of emitting it, after emitting the outcomes
    /// before it; `emit`'s own first error ends the run too.
    ///
    /// ```
    /// use smdebug_fleet::{Runner, TrialRef};
    /// let trials: Vec<TrialRef> = ["a", "b"]
    ///     .map(|n| TrialRef { name: n.into(), location: n.into() })
    ///     .to_vec();
    /// let mut names = Vec::new();
    /// Runner::new(2).run_each(&trials, |t| Ok::<_, String>(t.name.len()), |o| {
    ///     names.push(o.trial.name);
    ///     Ok::<(), smdebug_fleet::FleetError>(())
    /// })?;
    /// assert_eq!(names, ["a", "b"]);
    /// # Ok::<(), smdebug_fleet::FleetError>(())
    /// ```
    pub fn run_each<R, E, X, F, G>(
        &self,
        trials: &[TrialRef],
        work: F,
        mut emit: G,
    ) -> std::result::Result<(), X>
    where
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>> + Send,
        X: From<FleetError>,
        F: Fn(&TrialRef) -> std::result::Result<R, E> + Sync,
        G: FnMut(TrialOutcome<R, E>) -> std::result::Result<(), X>,
    {
        let failed = AtomicBool::new(false);
        let work = |_, trial: &TrialRef| {
            if self.strict && failed.load(Ordering::Relaxed) {
                return None;
            }
            let result = work(trial);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            Some(TrialOutcome {
                trial: trial.clone(),
                result,
            })
        };
        let each = trials.iter().collect();
        for_each_owned(each, self.jobs, "smdebug-fleet", work, |_, outcome| {
            let Some(outcome) = outcome else {
                return Ok(());
            };
            match outcome.result {
                Err(e) if self.strict => Err(X::from(FleetError::Trial {
                    trial: outcome.trial.name,
                    source: e.into(),
                })),
                _ => emit(outcome),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A trial's outcome is emitted while a later trial is still running: `c` waits for
    /// `a` to be emitted, which output held until the end would never do.
    #[test]
    fn outcomes_are_emitted_as_they_are_done() {
        let trials: Vec<TrialRef> = ["a", "b", "c"]
            .map(|n| TrialRef {
                name: n.into(),
                location: String::new(),
            })
            .to_vec();
        let emitted_a = AtomicBool::new(false);
        let mut order = Vec::new();
        Runner::new(2)
            .run_each(
                &trials,
                |t| -> std::result::Result<bool, String> {
                    if t.name != "c" {
                        return Ok(true);
                    }
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while !emitted_a.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Ok(emitted_a.load(Ordering::SeqCst))
                },
                |o| {
                    if o.trial.name == "a" {
                        emitted_a.store(true, Ordering::SeqCst);
                    }
                    order.push((o.trial.name, o.result));
                    Ok::<(), FleetError>(())
                },
            )
            .unwrap();
        let names: Vec<&str> = order.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(order[2].1, Ok(true), "c ended before a was emitted");
    }

    #[test]
    fn strict_stops_starting_trials() {
        let trials: Vec<TrialRef> = (0..50)
            .map(|i| TrialRef {
                name: format!("t{i:02}"),
                location: String::new(),
            })
            .collect();
        let ran = AtomicUsize::new(0);
        let err = Runner::new(1)
            .strict(true)
            .run(&trials, |t| {
                ran.fetch_add(1, Ordering::SeqCst);
                if t.name == "t03" {
                    Err("broken")
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert!(
            matches!(&err, FleetError::Trial { trial, .. } if trial == "t03"),
            "{err}"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 4);
    }
}
