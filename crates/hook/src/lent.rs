//! [`LentTensor`]: a framework tensor the hook holds by reference instead of copying.

use smdebug_record::TensorValue;
use smdebug_reduce::TensorView;

/// A tensor a framework lends to the hook ([`crate::Hook::save_lent`]): a handle to elements
/// that nothing writes to again (an activation, a gradient, a loss; not a parameter the
/// optimizer updates in place), e.g. a clone of a reference-counted framework tensor.
///
/// The hook never copies it on the training thread. The writer thread copies it once, when
/// something is written of it or the flight recorder keeps it, and then drops the handle:
/// the framework gets its buffer back as soon as the writer has caught up, while it is still
/// in the cache. The flight recorder copies through [`LentTensor::with_view`] into the
/// buffers of the steps it lets go, checking each piece for NaN and infinities as it is
/// copied, so keeping the last N steps allocates nothing from step to step.
pub trait LentTensor: Send + 'static {
    /// Its elements.
    fn len(&self) -> usize;

    /// Whether it has no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` once with a borrowed view of the elements, in their logical (C) order, and
    /// returns true; or returns false without calling it when the elements cannot be lent as
    /// a view (another device, a dtype smdebug does not write, a strided layout), in which
    /// case the hook uses [`LentTensor::to_value`].
    fn with_view(&self, f: &mut dyn FnMut(TensorView<'_>)) -> bool;

    /// A copy of the elements as the hook's tensor type; the error message names what
    /// failed (it becomes [`crate::WriterError::Convert`]).
    fn to_value(&self) -> Result<TensorValue, String>;
}
