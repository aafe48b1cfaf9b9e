//! The flight recorder: the last N steps of chosen collections, kept in full in memory on
//! the writer thread within a byte budget, even at steps the save config does not save, and
//! written into the trial as ordinary steps when a trigger fires (docs/src/format.md,
//! "Flight recorder").
//!
//! The training thread only hands the tensors it was given to the writer thread, as it does
//! for saved ones; the ring, the non-finite check and the polls for the trigger signal all
//! happen on the writer thread.
//!
//! This file holds the recorder's settings ([`FlightRecorder`]), what fires it
//! ([`Trigger`]) and the ring of kept steps ([`Ring`]); `recorder_wiring.rs` runs them on
//! the writer thread.

use smdebug_config::Mode;
use smdebug_record::TensorValue;
use std::collections::VecDeque;
use std::time::Duration;

/// Settings of the flight recorder ([`crate::HookBuilder::flight_recorder`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FlightRecorder {
    /// Steps kept before the current one: a trigger at step S writes steps S−N..S.
    pub steps: usize,
    /// Most bytes of tensor data held. The oldest steps go first; a tensor that does not
    /// fit even alone is not kept (the manifest says how many were left out).
    pub byte_budget: usize,
    /// The collections recorded (among the ones the hook saves); empty: all of them.
    pub collections: Vec<String>,
    /// Fire when the writer thread sees a NaN or infinity in a recorded tensor (once: the
    /// first bad step is the one that matters).
    pub on_non_finite: bool,
    /// Fire when the stop signal ([`smdebug_index::stop_signal_key`]) or the recorder's own
    /// trigger object ([`smdebug_index::FLIGHT_RECORDER_TRIGGER_FILE`]) appears in the
    /// trial, as a rule action writes it from another process, locally or on object
    /// storage.
    pub on_signal: bool,
    /// The least time between two polls for the signal (polled by the writer thread, at
    /// most once per step).
    pub signal_interval: Duration,
}

impl Default for FlightRecorder {
    /// 10 steps, 256 MiB, every saved collection, both automatic triggers, polls every
    /// second.
    fn default() -> Self {
        FlightRecorder {
            steps: 10,
            byte_budget: 256 << 20,
            collections: Vec::new(),
            on_non_finite: true,
            on_signal: true,
            signal_interval: Duration::from_secs(1),
        }
    }
}

/// What made the recorder write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A recorded tensor held NaN or infinities.
    NonFinite,
    /// A signal object appeared (its key).
    Signal(String),
    /// [`crate::Hook::trigger_flight_recorder`].
    Explicit,
}

impl Trigger {
    /// The manifest's `trigger` value.
    pub fn name(&self) -> &'static str {
        match self {
            Trigger::NonFinite => "non-finite",
            Trigger::Signal(_) => "signal",
            Trigger::Explicit => "explicit",
        }
    }
}

/// Bytes of memory the elements of `v` hold (strings count 16 bytes each).
fn nbytes(v: &TensorValue) -> usize {
    v.len() * v.dtype().item_size().unwrap_or(16)
}

/// One recorded tensor.
#[derive(Debug)]
pub(crate) struct Kept {
    pub name: String,
    /// A copy: a lent tensor is copied when it arrives, so that the framework gets its
    /// buffer back at once.
    pub value: TensorValue,
    /// The normal path already wrote its raw value at this step.
    pub raw_written: bool,
}

/// One recorded step.
#[derive(Debug)]
pub(crate) struct KeptStep {
    pub step: i64,
    pub mode: Mode,
    pub mode_step: i64,
    pub wall_time: f64,
    pub tensors: Vec<Kept>,
}

/// The ring: the last N + 1 steps of recorded tensors within the byte budget, owned by the
/// writer thread (the trigger state around it: `recorder_wiring.rs`).
#[derive(Debug)]
pub(crate) struct Ring {
    pub cfg: FlightRecorder,
    pub steps: VecDeque<KeptStep>,
    pub bytes: usize,
    /// Tensors left out because they did not fit the budget, since the last write.
    pub left_out: u64,
    /// The copies of the last step pushed out of the ring, for the next step's copies of
    /// lent tensors of the same dtype and size to be written into (counted in `bytes`).
    spare: Vec<TensorValue>,
}

impl Ring {
    pub fn new(cfg: FlightRecorder) -> Ring {
        Ring {
            cfg,
            steps: VecDeque::new(),
            bytes: 0,
            left_out: 0,
            spare: Vec::new(),
        }
    }

    /// Starts `step` unless it is the newest kept step already; pushes out the oldest steps
    /// beyond N + 1 (the copies of the last one pushed out become the spares).
    fn roll(&mut self, (step, mode, mode_step, wall_time): (i64, Mode, i64, f64)) {
        if self.steps.back().is_some_and(|s| s.step == step) {
            return;
        }
        self.steps.push_back(KeptStep {
            step,
            mode,
            mode_step,
            wall_time,
            tensors: Vec::new(),
        });
        while self.steps.len() > self.cfg.steps + 1 {
            self.drop_spares();
            if let Some(s) = self.steps.pop_front() {
                self.spare.extend(s.tensors.into_iter().map(|k| k.value));
            }
        }
    }

    /// Makes room for `size` more bytes in `at`'s step: lets the spares go, then the oldest
    /// steps but the current one. False when even that is not enough (the tensor is then
    /// left out, and nothing of it may be copied).
    pub fn make_room(&mut self, at: (i64, Mode, i64, f64), size: usize) -> bool {
        self.roll(at);
        if self.bytes + size > self.cfg.byte_budget {
            self.drop_spares();
        }
        while self.bytes + size > self.cfg.byte_budget && self.steps.len() > 1 {
            self.pop_front();
        }
        self.bytes + size <= self.cfg.byte_budget
    }

    /// A spare copy of `len` elements of `dtype` to write the copy of a new tensor into (no
    /// longer counted in `bytes`: [`Ring::keep`] counts it again).
    pub fn take_spare(&mut self, len: usize, dtype: smdebug_reduce::DType) -> Option<TensorValue> {
        let i = self
            .spare
            .iter()
            .position(|s| s.len() == len && s.reduce_view().is_some_and(|v| v.dtype() == dtype))?;
        let v = self.spare.swap_remove(i);
        self.bytes -= nbytes(&v);
        Some(v)
    }

    fn drop_spares(&mut self) {
        for v in self.spare.drain(..) {
            self.bytes -= nbytes(&v);
        }
    }

    /// Keeps `value` as part of `at`'s step; evicts the oldest steps beyond N + 1 or the
    /// budget, or leaves the value out when it does not fit even alone.
    pub fn keep(
        &mut self,
        at: (i64, Mode, i64, f64),
        name: String,
        value: TensorValue,
        raw_written: bool,
    ) {
        let size = nbytes(&value);
        if !self.make_room(at, size) {
            self.left_out += 1;
            return;
        }
        self.bytes += size;
        if let Some(s) = self.steps.back_mut() {
            s.tensors.push(Kept {
                name,
                value,
                raw_written,
            });
        }
    }

    fn pop_front(&mut self) {
        if let Some(s) = self.steps.pop_front() {
            self.bytes -= s.tensors.iter().map(|k| nbytes(&k.value)).sum::<usize>();
        }
    }

    /// Takes every kept step (the recorder then starts over, empty).
    pub fn take(&mut self) -> Vec<KeptStep> {
        self.spare.clear();
        self.bytes = 0;
        self.steps.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: usize) -> TensorValue {
        TensorValue::from(ndarray::Array1::<f32>::zeros(n).into_dyn())
    }

    #[test]
    fn keeps_n_plus_one_steps_within_the_budget() {
        let mut r = Ring::new(FlightRecorder {
            steps: 2,
            byte_budget: 100,
            ..Default::default()
        });
        for step in 0..10 {
            r.keep((step, Mode::Train, step, 0.0), "a".into(), v(5), false);
            assert!(r.bytes <= 100);
        }
        let steps: Vec<i64> = r.steps.iter().map(|s| s.step).collect();
        assert_eq!(steps, [7, 8, 9]);
        // 4 tensors of 20 bytes fit, the fifth pushes the oldest step out.
        for step in 10..12 {
            for _ in 0..3 {
                r.keep((step, Mode::Train, step, 0.0), "b".into(), v(5), false);
                assert!(r.bytes <= 100, "{}", r.bytes);
            }
        }
        assert_eq!(r.steps.iter().map(|s| s.step).collect::<Vec<_>>(), [11]);
        // Larger than the whole budget: left out.
        r.keep((12, Mode::Train, 12, 0.0), "c".into(), v(30), false);
        assert_eq!(r.left_out, 1);
        assert!(r.bytes <= 100);
    }

    #[test]
    fn the_step_let_go_lends_its_buffers_within_the_budget() {
        let mut r = Ring::new(FlightRecorder {
            steps: 1,
            byte_budget: 100,
            ..Default::default()
        });
        let at = |step| (step, Mode::Train, step, 0.0);
        for step in 0..2 {
            assert!(r.make_room(at(step), 20));
            assert!(r.take_spare(5, smdebug_reduce::DType::F32).is_none());
            r.keep(at(step), "a".into(), v(5), false);
        }
        // Step 2 lets step 0 go: its 20 bytes stay counted, as a spare, until taken.
        assert!(r.make_room(at(2), 20));
        assert_eq!(r.bytes, 40);
        assert!(r.take_spare(5, smdebug_reduce::DType::I32).is_none());
        assert!(r.take_spare(4, smdebug_reduce::DType::F32).is_none());
        let spare = r.take_spare(5, smdebug_reduce::DType::F32).unwrap();
        assert_eq!((spare.len(), r.bytes), (5, 20));
        r.keep(at(2), "a".into(), spare, false);
        assert_eq!(r.bytes, 40);
        // A large tensor: the spares go first, then the oldest steps; one over the whole
        // budget is refused before anything of it is copied.
        assert!(r.make_room(at(3), 20));
        assert_eq!(r.spare.len(), 1);
        assert!(r.make_room(at(3), 70));
        assert!(r.spare.is_empty());
        assert_eq!(r.bytes, 20);
        assert!(!r.make_room(at(3), 101));
        assert_eq!(r.steps.iter().map(|s| s.step).collect::<Vec<_>>(), [3]);
        assert_eq!(r.bytes, 0);
    }
}
