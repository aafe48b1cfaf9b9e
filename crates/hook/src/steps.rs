//! [`StepClock`]: smdebug's step and mode counting.

use smdebug_config::Mode;

/// The global step, the current mode and each mode's own step, counted as smdebug counts
/// them: every counter starts at `init_step`, a mode's first step is `init_step + 1`, and a
/// step in any mode but GLOBAL also sets GLOBAL's step to the global step.
///
/// It also remembers the mode and mode step the current step began in
/// ([`StepClock::step_mode`]): everything the step saves is stamped with them, whenever
/// it is written. A mode entered by `set_mode` counts from the next step on; stamping a
/// step's late writes (its `save_tensor` values and cached scalars, written when it ends)
/// with that mode would give the step a mode it never ran in, at mode step −1, which the
/// original's reader refuses.
#[derive(Debug)]
pub(crate) struct StepClock {
    /// The global step (`init_step` before the first [`StepClock::advance`]).
    step: i64,
    /// Where every counter starts: −1 for callback hooks, 0 for session hooks.
    init_step: i64,
    /// The current mode.
    mode: Mode,
    /// Each mode's step, by [`Mode::index`]; `None` for a mode never entered.
    mode_steps: [Option<i64>; 4],
    /// The mode and mode step the current step began in.
    step_mode: (Mode, i64),
    /// Whether the first step has started (tensors can be saved only then).
    started: bool,
}

impl StepClock {
    /// A clock before the first step, in mode GLOBAL.
    pub fn new(init_step: i64) -> Self {
        let mut mode_steps = [None; 4];
        mode_steps[Mode::Global.index()] = Some(init_step);
        StepClock {
            step: init_step,
            init_step,
            mode: Mode::Global,
            mode_steps,
            step_mode: (Mode::Global, init_step),
            started: false,
        }
    }

    /// The global step.
    pub fn step(&self) -> i64 {
        self.step
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The current step of the current mode.
    pub fn mode_step(&self) -> i64 {
        self.mode_steps[self.mode.index()].unwrap_or(self.init_step)
    }

    /// The mode and mode step the current step began in (before the first step, GLOBAL
    /// at `init_step`): what the step's data are stamped with, and whose save configs
    /// decide what it saves.
    pub fn step_mode(&self) -> (Mode, i64) {
        self.step_mode
    }

    /// Whether the first step has started.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Switches the mode from the next step on; a mode seen for the first time starts its
    /// counter at `init_step`.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        let slot = &mut self.mode_steps[mode.index()];
        if slot.is_none() {
            *slot = Some(self.init_step);
        }
    }

    /// Starts the next step: the global step and the current mode's step advance.
    pub fn advance(&mut self) {
        self.step += 1;
        let mi = self.mode.index();
        self.mode_steps[mi] = Some(self.mode_steps[mi].unwrap_or(self.init_step) + 1);
        if self.mode != Mode::Global {
            self.mode_steps[Mode::Global.index()] = Some(self.step);
        }
        self.step_mode = (self.mode, self.mode_step());
        self.started = true;
    }
}
