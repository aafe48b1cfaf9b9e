"""Custom training loops for the Keras hook: ``wrap_tape`` (a ``tf.GradientTape`` whose
entry starts a TRAIN step and whose ``gradient`` saves the gradients, the variables and the
loss) and ``wrap_optimizer``. A mixin of :class:`smdebug_rs.tensorflow.keras.KerasHook`,
whose state it uses."""

import functools
import weakref

import tensorflow as tf

from smdebug_rs import modes
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.core.faults import fail, guarded
from smdebug_rs.core.logger import get_logger
from smdebug_rs.tensorflow.names import GRADIENT_PREFIX, TAPE_WEIGHT_PREFIX, keras2_name

__all__ = ["TapeLoops"]

# The regexes the original adds for wrap_tape loops, at the first tape.
_TAPE_REGEXES = {
    CollectionKeys.WEIGHTS: "^weights/.*/((?!bias).)*$",
    CollectionKeys.LOSSES: ".*loss.*",
    CollectionKeys.GRADIENTS: "^gradient",
}


class TapeLoops:
    """``wrap_tape`` and ``wrap_optimizer`` of
    :class:`~smdebug_rs.tensorflow.keras.KerasHook` (see the module docstring)."""

    def wrap_optimizer(self, optimizer):
        """Returns ``optimizer``; the hook wraps its ``apply`` (and so ``apply_gradients``)
        on the instance at the next ``fit`` in place of ``model.optimizer`` (which ``fit``
        wraps by itself). In a ``wrap_tape`` loop the gradients come from the tape."""
        if self._fault is None:
            self._user_optimizer = optimizer
        return optimizer

    def wrap_tape(self, tape):
        """Returns ``tape`` (a ``tf.GradientTape``) wrapped on the instance: entering it
        starts a TRAIN step, ``tape.gradient(loss, variables)`` saves the gradients
        (``gradients/<layer>/<var>Grad``), the variables (``weights/<layer>/<var>:0``,
        as they were when the gradient was taken) and ``loss``. Use it for each tape:
        ``with hook.wrap_tape(tf.GradientTape()) as tape:``."""
        try:
            if self._fault is not None:
                return tape
            from tensorflow.python.eager.backprop import GradientTape

            if not isinstance(tape, GradientTape):
                get_logger().warning("%s: unsupported tape %r: gradients, loss and weights "
                                     "are not found", self._LOG_NAME, tape)
                return tape
            self.set_mode(modes.TRAIN)
            push, gradient = tape._push_tape, tape.gradient
            hook_ref = weakref.ref(self)

            @functools.wraps(push)
            def _push_tape(*args, **kwargs):
                result = push(*args, **kwargs)
                hook = hook_ref()
                if hook is not None:
                    hook._tape_step()
                return result

            @functools.wraps(gradient)
            def _gradient(target, sources, *args, **kwargs):
                grads = gradient(target, sources, *args, **kwargs)
                hook = hook_ref()
                if hook is not None:
                    hook._tape_gradient(target, sources, grads)
                return grads

            tape._push_tape = _push_tape
            tape.gradient = _gradient
            self.tape = tape
        except Exception as e:  # noqa: BLE001 - the fault policy
            fail(self, "wrap_tape", e)
        return tape

    @guarded()
    def _tape_step(self):
        if self._closed:
            return
        if not self._tape_prepared:
            # The original's regexes for tape loops, before the first step.
            for coll, regex in _TAPE_REGEXES.items():
                c = self.get_collection(coll)
                if regex not in c.include_regex:
                    c.include(regex)
            self._tape_prepared = True
            self._prepared = True
        self._end_step_values()
        if self.mode != modes.TRAIN:
            self._native.set_mode(modes.TRAIN)
            self.mode = modes.TRAIN
        self._native.step()
        self._started = True
        self._step_mode = modes.TRAIN

    @guarded()
    def _tape_gradient(self, loss, sources, grads):
        if self._closed or not self._tape_prepared:
            return
        if not tf.executing_eagerly():
            return
        native = self._native
        model = self._watched_model()
        if isinstance(sources, (list, tuple)) and isinstance(grads, (list, tuple)):
            for g, v in zip(grads, sources):
                if not hasattr(v, "numpy") or not hasattr(v, "name"):
                    continue
                name = keras2_name(v, model)
                gname = GRADIENT_PREFIX + name.split(":")[0] + "Grad"
                if g is not None and native.should_save_tensor(gname):
                    self._save(gname, g)
                wname = TAPE_WEIGHT_PREFIX + name
                if native.should_save_tensor(wname):
                    self._save(wname, v)
        if hasattr(loss, "numpy") and native.should_save_tensor("loss"):
            self._save("loss", loss)
