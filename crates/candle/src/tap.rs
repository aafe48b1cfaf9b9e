//! Wrapper modules that record their input and output (candle has no forward hooks).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use candle_core::{Module, Result as CResult, Tensor as CTensor};

#[derive(Debug, Default)]
struct TapState {
    armed: bool,
    /// Every name a wrapper of this tap has produced: lets the hook decide whether to arm
    /// the tap for a step without running the model.
    names: BTreeSet<Arc<str>>,
    /// `names` as a list, shared with the hook until a new name appears (the hook reads it
    /// at every step; the set rarely changes after the first step).
    names_list: Option<Arc<[Arc<str>]>>,
    pending: Vec<(Arc<str>, CTensor)>,
}

/// Where [`Recorded`] modules leave their inputs and outputs until
/// [`crate::CandleHook::record_taps`] saves them. Cloning a tap shares it.
///
/// An armed tap keeps a reference to each recorded tensor (a candle `Tensor` clone is a
/// reference-count increment, not a copy); a disarmed one records nothing. The hook arms a
/// tap at [`crate::CandleHook::step`] only when one of its names is due, so steps that save
/// nothing cost one flag check per wrapped module.
#[derive(Debug, Clone, Default)]
pub struct Tap(Arc<Mutex<TapState>>);

impl Tap {
    /// A new, armed tap (armed so the first step learns the names).
    pub fn new() -> Self {
        let tap = Tap::default();
        tap.lock().armed = true;
        tap
    }

    fn lock(&self) -> MutexGuard<'_, TapState> {
        // A panic while holding the lock leaves a plain list behind, still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the wrappers record at this step.
    pub fn is_armed(&self) -> bool {
        self.lock().armed
    }

    pub(crate) fn set_armed(&self, armed: bool) {
        self.lock().armed = armed;
    }

    /// The names the wrappers have produced so far.
    pub fn names(&self) -> Vec<String> {
        self.lock().names.iter().map(|n| n.to_string()).collect()
    }

    /// The names, as a list shared until a new name appears (no copy per step).
    pub(crate) fn names_shared(&self) -> Arc<[Arc<str>]> {
        let mut s = self.lock();
        if s.names_list.is_none() {
            s.names_list = Some(s.names.iter().cloned().collect());
        }
        s.names_list.clone().unwrap_or_else(|| Arc::new([]))
    }

    /// Moves what was recorded into `into` (which keeps its capacity for the next step).
    pub(crate) fn take_into(&self, into: &mut Vec<(Arc<str>, CTensor)>) {
        into.append(&mut self.lock().pending);
    }

    /// Empties what was recorded.
    pub(crate) fn clear(&self) {
        self.lock().pending.clear();
    }

    /// Records `t` under `name` if the tap is armed (also usable for tensors computed
    /// outside any module).
    pub fn record(&self, name: &str, t: &CTensor) {
        let mut s = self.lock();
        let name = match s.names.get(name) {
            Some(n) => n.clone(),
            None => {
                let n: Arc<str> = Arc::from(name);
                s.names.insert(n.clone());
                s.names_list = None;
                n
            }
        };
        if s.armed {
            s.pending.push((name, t.clone()));
        }
    }
}

/// A module wrapped so that its forward records `<path>_output_0` (and, if asked,
/// `<path>_input_0`) into a [`Tap`], as the PyTorch hook's forward hook names them.
#[derive(Debug, Clone)]
pub struct Recorded<M> {
    inner: M,
    input_name: Option<String>,
    output_name: String,
    tap: Tap,
}

impl<M> Recorded<M> {
    /// Wraps `inner` (module path `path`), recording its output; with `record_input` also
    /// its input.
    pub fn new(inner: M, path: &str, tap: &Tap, record_input: bool) -> Self {
        Self {
            inner,
            input_name: record_input.then(|| format!("{path}_input_0")),
            output_name: format!("{path}_output_0"),
            tap: tap.clone(),
        }
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: Module> Module for Recorded<M> {
    fn forward(&self, xs: &CTensor) -> CResult<CTensor> {
        let ys = self.inner.forward(xs)?;
        if let Some(n) = &self.input_name {
            self.tap.record(n, xs);
        }
        self.tap.record(&self.output_name, &ys);
        Ok(ys)
    }
}
