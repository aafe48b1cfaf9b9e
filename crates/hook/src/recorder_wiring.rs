//! The flight recorder on the writer thread: which tensors go into the ring, the check for
//! NaN and infinities, the polls for the trigger objects, what a firing writes and the
//! manifest that lists the firings. The ring itself is [`Ring`] (`recorder.rs`); the writer
//! thread (`writer.rs`) writes what a firing hands it.

use crate::encode::non_finite;
use crate::error::WriterError;
use crate::job::{Deferred, TensorJob};
use crate::lent::LentTensor;
use crate::recorder::{FlightRecorder, KeptStep, Ring, Trigger};
use crate::wall_time::now;
use smdebug_config::{Mode, PyValue};
use smdebug_record::TensorValue;
use smdebug_reduce::{Health, TensorView};
use smdebug_storage::{BlockingStore, Bytes};
use std::collections::VecDeque;
use std::time::Instant;

/// Most published steps remembered (a firing never rewrites a step the save config wrote).
const PUBLISHED_STEPS: usize = 64;

/// The flight recorder's settings and the keys it polls and writes.
#[derive(Debug, Clone)]
pub(crate) struct RecorderWiring {
    /// Its settings.
    pub cfg: FlightRecorder,
    /// The stop-signal object the hook watches.
    pub stop_key: String,
    /// The recorder's own trigger object.
    pub trigger_key: String,
    /// Where the manifest goes.
    pub manifest_key: String,
}

/// What a firing at a step hands the writer to write.
#[derive(Debug)]
pub(crate) struct Firing {
    /// The kept tensors of the step the firing is at, for that step's own files.
    pub this_step: Option<KeptStep>,
    /// Earlier kept steps no file holds yet, oldest first: each becomes a step of its own.
    pub earlier: Vec<KeptStep>,
    /// Kept steps left as they are (the save config published them, or they come after
    /// the firing's step).
    pub already: Vec<i64>,
    /// Tensors left out of the ring since the last firing.
    pub left_out: u64,
}

/// The flight recorder's state on the writer thread.
#[derive(Debug)]
pub(crate) struct Recorder {
    /// Its settings and keys.
    wiring: RecorderWiring,
    /// The kept steps.
    ring: Ring,
    /// The non-finite trigger fired already.
    fired_non_finite: bool,
    /// The stop signal was seen already (it stays; it fires once).
    seen_stop: bool,
    /// The step whose recorded tensors are written as they arrive (a trigger fired in it).
    live_step: Option<i64>,
    /// When the signal was last polled.
    last_poll: Option<Instant>,
    /// The last step the signal was polled at.
    last_poll_step: i64,
    /// The manifest entries so far (rewritten whole at every firing).
    manifest: Vec<PyValue>,
    /// A firing's manifest waits for its last step to be published.
    manifest_due: bool,
    /// The last steps published (a firing never rewrites a step the save config wrote).
    published: VecDeque<i64>,
}

impl Recorder {
    /// A recorder holding nothing yet.
    pub fn new(wiring: RecorderWiring) -> Self {
        Recorder {
            ring: Ring::new(wiring.cfg.clone()),
            wiring,
            fired_non_finite: false,
            seen_stop: false,
            live_step: None,
            last_poll: None,
            last_poll_step: i64::MIN,
            manifest: Vec::new(),
            manifest_due: false,
            published: VecDeque::new(),
        }
    }

    /// Whether `step` is the step a trigger fired in: its recorded tensors are written, not
    /// kept.
    pub fn live(&self, step: i64) -> bool {
        self.live_step == Some(step)
    }

    /// Whether the manifest of a firing waits to be written.
    pub fn manifest_due(&self) -> bool {
        self.manifest_due
    }

    /// A job of global step `step` arrives: a step a trigger fired in ends before it. True
    /// when the manifest is to be written now.
    pub fn step_begins(&mut self, step: i64) -> bool {
        if self.live_step.is_some_and(|l| l < step) {
            self.live_step = None;
            return self.manifest_due;
        }
        false
    }

    /// `step` was published. True when the manifest is to be written now (its firing's last
    /// step is out).
    pub fn published(&mut self, step: i64) -> bool {
        self.published.push_back(step);
        if self.published.len() > PUBLISHED_STEPS {
            self.published.pop_front();
        }
        self.manifest_due && self.live_step <= Some(step)
    }

    /// Polls `store` for the recorder's trigger object, then (until it was seen once) for
    /// the stop signal: once per step, and no more often than the settings' interval. The
    /// key of the object found, if any.
    pub fn poll_signal(&mut self, store: &BlockingStore, step: i64) -> Option<String> {
        let cfg = &self.wiring.cfg;
        if !cfg.on_signal
            || self.last_poll_step == step
            || self
                .last_poll
                .is_some_and(|t| t.elapsed() < cfg.signal_interval)
        {
            return None;
        }
        self.last_poll = Some(Instant::now());
        self.last_poll_step = step;
        let w = &self.wiring;
        let key = match store.exists(&w.trigger_key) {
            Ok(true) => Some(w.trigger_key.clone()),
            Ok(false) if !self.seen_stop => match store.exists(&w.stop_key) {
                Ok(true) => Some(w.stop_key.clone()),
                Ok(false) => None,
                Err(e) => {
                    tracing::warn!("polling {}: {e}", w.stop_key);
                    None
                }
            },
            Ok(false) => None,
            Err(e) => {
                tracing::warn!("polling {}: {e}", w.trigger_key);
                None
            }
        }?;
        if key == w.stop_key {
            self.seen_stop = true;
        }
        Some(key)
    }

    /// After the firing for signal object `key`: the recorder's own trigger object is
    /// deleted, so that the next firing of the rule that wrote it fires the recorder again.
    pub fn served(&self, store: &BlockingStore, key: &str) {
        if key == self.wiring.trigger_key {
            if let Err(e) = store.delete(key) {
                tracing::warn!("deleting {key}: {e}");
            }
        }
    }

    /// Starts a firing at `step`: takes the steps S−N..S out of the ring (S = `step`) and
    /// makes `step` live, so that its recorded tensors are written as they arrive.
    pub fn begin_firing(&mut self, step: i64) -> Firing {
        // At a step's first job (the signal's poll) the ring still holds N + 1 steps
        // before S.
        let oldest = step - self.wiring.cfg.steps as i64;
        let mut firing = Firing {
            this_step: None,
            earlier: Vec::new(),
            already: Vec::new(),
            left_out: std::mem::take(&mut self.ring.left_out),
        };
        for s in self.ring.take().into_iter().filter(|s| s.step >= oldest) {
            if s.step == step {
                firing.this_step = Some(s);
            } else if self.published.contains(&s.step) || s.step > step {
                firing.already.push(s.step);
            } else {
                firing.earlier.push(s);
            }
        }
        self.live_step = Some(step);
        firing
    }

    /// Ends a firing: its manifest entry. `at`: the mode and mode step of `step`, when
    /// known; `written`: the steps written, in order.
    pub fn end_firing(
        &mut self,
        trigger: Trigger,
        why: String,
        step: i64,
        at: Option<(Mode, i64)>,
        firing: Firing,
        written: Vec<i64>,
    ) {
        let (mode, mode_step) = (at.map(|a| a.0), at.map(|a| a.1));
        let entry = PyValue::Object(vec![
            ("trigger".into(), PyValue::Str(trigger.name().into())),
            (
                "signal".into(),
                match &trigger {
                    Trigger::Signal(k) => PyValue::Str(k.clone()),
                    _ => PyValue::Null,
                },
            ),
            ("reason".into(), PyValue::Str(why)),
            ("step".into(), PyValue::Int(step)),
            (
                "mode".into(),
                mode.map_or(PyValue::Null, |m| PyValue::Str(m.name().into())),
            ),
            (
                "mode_step".into(),
                mode_step.map_or(PyValue::Null, PyValue::Int),
            ),
            (
                "steps".into(),
                PyValue::Array(written.into_iter().map(PyValue::Int).collect()),
            ),
            (
                "steps_already_saved".into(),
                PyValue::Array(firing.already.into_iter().map(PyValue::Int).collect()),
            ),
            (
                "tensors_left_out".into(),
                PyValue::Int(firing.left_out as i64),
            ),
            ("wall_time".into(), PyValue::Float(now())),
        ]);
        self.manifest.push(entry);
        self.manifest_due = true;
        tracing::info!("flight recorder fired ({}) at step {step}", trigger.name());
    }

    /// The manifest of `worker`: every firing so far, and its key.
    pub fn manifest(&mut self, worker: &str) -> (String, Bytes) {
        self.manifest_due = false;
        let doc = PyValue::Object(vec![
            ("worker".into(), PyValue::Str(worker.to_owned())),
            ("recordings".into(), PyValue::Array(self.manifest.clone())),
        ]);
        let text = smdebug_config::pyjson::to_string(&doc);
        (self.wiring.manifest_key.clone(), Bytes::from(text))
    }

    /// Keeps a copy of a lent tensor nothing else writes now, made from its view into a
    /// buffer of the step the ring let go last, and checked for NaN and infinities piece by
    /// piece as it is copied (through [`LentTensor::to_value`] when the tensor cannot lend
    /// a view). The reason to fire the non-finite trigger, if it is to fire.
    pub fn keep_lent(
        &mut self,
        t: TensorJob,
        lent: Box<dyn LentTensor>,
    ) -> Result<Option<String>, WriterError> {
        let check = self.wiring.cfg.on_non_finite && !self.fired_non_finite;
        let at = (t.step, t.mode, t.mode_step, t.wall_time);
        let ring = &mut self.ring;
        let mut bad = None;
        let mut copy = None;
        let viewed = lent.with_view(&mut |v| {
            let (len, dtype) = (v.shape().iter().product::<usize>(), v.dtype());
            if !ring.make_room(at, len * dtype.item_size()) {
                // Left out (the budget cannot hold it): checked in place, not copied.
                bad = check.then(|| non_finite(&v)).flatten();
                return;
            }
            let spare = ring.take_spare(len, dtype);
            let mut finite = true;
            // Checked piece by piece as it is copied: one pass over the tensor's memory.
            let mut inspect = |piece: TensorView<'_>| finite = finite && piece.all_finite();
            let inspect: &mut dyn FnMut(TensorView<'_>) =
                if check { &mut inspect } else { &mut |_| {} };
            copy = Some(TensorValue::from_reduce_view(&v, spare, inspect));
            if !finite {
                bad = non_finite(&v);
            }
        });
        if !viewed {
            // No view: the copy it takes is kept instead.
            let mut t = t;
            t.value = Deferred::Lent(lent).make(&t.name, t.step)?;
            return Ok(self.keep_value(t, None));
        }
        // The handle goes back at once: a framework's allocator reuses its buffer while it
        // is still in the cache (held for N steps, every step's buffers would be new to it).
        drop(lent);
        Ok(self.keep(t, copy, bad))
    }

    /// Keeps a recorded tensor of a step that is not live. `health`: the tensor's summary
    /// when the caller computed one. The reason to fire the non-finite trigger, if it is to
    /// fire.
    pub fn keep_value(&mut self, t: TensorJob, health: Option<Health>) -> Option<String> {
        let bad = match health {
            _ if !self.wiring.cfg.on_non_finite || self.fired_non_finite => None,
            Some(h) => Some(h).filter(|h| !h.all_finite()),
            None => t.value.reduce_view().and_then(|v| non_finite(&v)),
        };
        let mut t = t;
        // An empty placeholder (no heap allocation) stands in for the moved value.
        let empty = TensorValue::from(ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[0])));
        let value = std::mem::replace(&mut t.value, empty);
        self.keep(t, Some(value), bad)
    }

    /// Puts a recorded tensor's value into the ring (`None`: it was left out, too large for
    /// the budget). When `bad` (the summary of a tensor found to hold NaN or infinities) is
    /// given, the non-finite trigger is spent and the reason to fire it comes back.
    fn keep(
        &mut self,
        t: TensorJob,
        value: Option<TensorValue>,
        bad: Option<Health>,
    ) -> Option<String> {
        let why = bad.as_ref().map(|h| {
            format!(
                "tensor {} holds {} NaN, {} +Inf, {} -Inf of {} elements at step {} ({} step {})",
                t.name,
                h.nan,
                h.pos_inf,
                h.neg_inf,
                h.elements,
                t.step,
                t.mode.name(),
                t.mode_step
            )
        });
        match value {
            Some(value) => self.ring.keep(
                (t.step, t.mode, t.mode_step, t.wall_time),
                t.name,
                value,
                t.raw,
            ),
            None => self.ring.left_out += 1,
        }
        if why.is_some() {
            self.fired_non_finite = true;
        }
        why
    }
}
