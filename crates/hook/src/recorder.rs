//! The flight recorder: the last N steps of chosen collections, kept in full in memory on
//! the writer thread within a byte budget, even at steps the save config does not save, and
//! written into the trial as ordinary steps when a trigger fires (docs/src/format.md,
//! "Flight recorder").
//!
//! The training thread only hands the tensors it was given to the writer thread, as it does
//! for saved ones; the ring, the non-finite check and the polls for the trigger signal all
//! happen on the writer thread.

use crate::error::WriterError;
use crate::lent::LentTensor;
use smdebug_config::Mode;
use smdebug_record::TensorValue;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

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

/// A recorded tensor's elements: a copy, or the handle a framework lent.
pub(crate) enum KeptValue {
    /// A value the hook owns.
    Value(TensorValue),
    /// A lent tensor, copied only if the recorder writes it.
    Lent(Box<dyn LentTensor>),
}

impl std::fmt::Debug for KeptValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptValue::Value(v) => f.debug_tuple("Value").field(v).finish(),
            KeptValue::Lent(t) => write!(f, "Lent({} elements)", t.len()),
        }
    }
}

impl KeptValue {
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        match self {
            KeptValue::Value(v) => v.is_empty(),
            KeptValue::Lent(t) => t.is_empty(),
        }
    }

    /// Bytes of memory its elements hold.
    fn nbytes(&self) -> usize {
        match self {
            KeptValue::Value(v) => v.len() * v.dtype().item_size().unwrap_or(16),
            KeptValue::Lent(t) => t.nbytes(),
        }
    }

    /// The value to write (a lent tensor is copied now).
    pub fn into_value(self, name: &str, step: i64) -> Result<TensorValue, WriterError> {
        match self {
            KeptValue::Value(v) => Ok(v),
            KeptValue::Lent(t) => t.to_value().map_err(|message| WriterError::Convert {
                name: name.to_owned(),
                step,
                message,
            }),
        }
    }
}

/// One recorded tensor.
#[derive(Debug)]
pub(crate) struct Kept {
    pub name: String,
    pub value: KeptValue,
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

/// The ring and the trigger state, owned by the writer thread.
#[derive(Debug)]
pub(crate) struct Ring {
    pub cfg: FlightRecorder,
    pub steps: VecDeque<KeptStep>,
    pub bytes: usize,
    /// Tensors left out because they did not fit the budget, since the last write.
    pub left_out: u64,
    /// The non-finite trigger fired already.
    pub fired_non_finite: bool,
    /// The stop signal was seen already (it stays; it fires once).
    pub seen_stop: bool,
    /// The step whose recorded tensors are written as they arrive (a trigger fired in it).
    pub live_step: Option<i64>,
    /// When the signal was last polled.
    pub last_poll: Option<Instant>,
    /// The last step the signal was polled at.
    pub last_poll_step: i64,
    /// The manifest entries so far (rewritten whole at every firing).
    pub manifest: Vec<smdebug_config::PyValue>,
}

impl Ring {
    pub fn new(cfg: FlightRecorder) -> Ring {
        Ring {
            cfg,
            steps: VecDeque::new(),
            bytes: 0,
            left_out: 0,
            fired_non_finite: false,
            seen_stop: false,
            live_step: None,
            last_poll: None,
            last_poll_step: i64::MIN,
            manifest: Vec::new(),
        }
    }

    /// Keeps `value` as part of `step`; evicts the oldest steps beyond N + 1 or the budget.
    pub fn keep(
        &mut self,
        at: (i64, Mode, i64, f64),
        name: String,
        value: KeptValue,
        raw_written: bool,
    ) {
        let (step, mode, mode_step, wall_time) = at;
        if self.steps.back().is_none_or(|s| s.step != step) {
            self.steps.push_back(KeptStep {
                step,
                mode,
                mode_step,
                wall_time,
                tensors: Vec::new(),
            });
            while self.steps.len() > self.cfg.steps + 1 {
                self.pop_front();
            }
        }
        let size = value.nbytes();
        while self.bytes + size > self.cfg.byte_budget && self.steps.len() > 1 {
            self.pop_front();
        }
        if self.bytes + size > self.cfg.byte_budget {
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
            self.bytes -= s.tensors.iter().map(|k| k.value.nbytes()).sum::<usize>();
        }
    }

    /// Takes every kept step (the recorder then starts over, empty).
    pub fn take(&mut self) -> Vec<KeptStep> {
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
            r.keep(
                (step, Mode::Train, step, 0.0),
                "a".into(),
                KeptValue::Value(v(5)),
                false,
            );
            assert!(r.bytes <= 100);
        }
        let steps: Vec<i64> = r.steps.iter().map(|s| s.step).collect();
        assert_eq!(steps, [7, 8, 9]);
        // 4 tensors of 20 bytes fit, the fifth pushes the oldest step out.
        for step in 10..12 {
            for _ in 0..3 {
                r.keep(
                    (step, Mode::Train, step, 0.0),
                    "b".into(),
                    KeptValue::Value(v(5)),
                    false,
                );
                assert!(r.bytes <= 100, "{}", r.bytes);
            }
        }
        assert_eq!(r.steps.iter().map(|s| s.step).collect::<Vec<_>>(), [11]);
        // Larger than the whole budget: left out.
        r.keep(
            (12, Mode::Train, 12, 0.0),
            "c".into(),
            KeptValue::Value(v(30)),
            false,
        );
        assert_eq!(r.left_out, 1);
        assert!(r.bytes <= 100);
    }
}
