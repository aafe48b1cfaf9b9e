//! What the trial benches share: the read loops that time the phases of the Python peer's
//! benchmark the same way in each bench target.

use smdebug_config::Mode;
use smdebug_trial::Trial;

/// `value(step, worker)` of every tensor, step and worker, one call each, as a Python user's
/// loop reads a trial; the number of elements read.
pub fn every_value_one_call_each(trial: &Trial) -> usize {
    let mut n = 0;
    for name in trial.tensor_names().unwrap() {
        let t = trial.tensor(&name).unwrap();
        for step in t.steps(Mode::Global, false).unwrap() {
            for w in t.workers(step, Mode::Global).unwrap() {
                n += t.value(step, Mode::Global, Some(&w)).unwrap().len();
            }
        }
    }
    n
}
