"""What the Keras hook wraps on the instances it is given (nothing of Keras or TensorFlow is
patched): the optimizer's ``apply`` (the gradients), each layer's ``call`` (inputs and
outputs) and the model's ``compute_metrics`` (inputs, labels, predictions), and how those
values are handed over from eager and compiled code (:meth:`KerasWrappers._hand_over`).
A mixin of :class:`smdebug_rs.tensorflow.keras.KerasHook`, whose state it uses."""

import functools
import weakref

import numpy as np
import tensorflow as tf

from smdebug_rs.core.faults import fail

__all__ = ["KerasWrappers"]


class KerasWrappers:
    """The wrappers of :class:`~smdebug_rs.tensorflow.keras.KerasHook` (see the module
    docstring)."""

    def _wrap_optimizer_apply(self, opt):
        original = opt.apply
        hook_ref = weakref.ref(self)

        @functools.wraps(original)
        def apply(grads, trainable_variables=None):
            hook = hook_ref()
            if hook is not None:
                hook._tap_gradients(opt, grads, trainable_variables)
            return original(grads, trainable_variables)

        opt.apply = apply
        self._optimizer = opt

    def _tap_gradients(self, opt, grads, variables):
        # Runs in the train function (traced or eager). A failure here leaves training
        # alone (the fault policy).
        if self._fault is not None or self._gradients is None:
            return
        try:
            if variables is None:
                variables = opt._trainable_variables
            self._gradients.take(grads, variables)
        except Exception as e:  # noqa: BLE001 - the fault policy
            fail(self, "optimizer.apply", e)

    def _wrap_layer(self, layer):
        if "call" in layer.__dict__:
            return
        original = layer.call
        hook_ref = weakref.ref(self)
        name = layer.name

        @functools.wraps(original)
        def call(*args, **kwargs):
            out = original(*args, **kwargs)
            hook = hook_ref()
            if hook is None or hook._fault is not None:
                return out
            inputs = args[0] if args else next(iter(kwargs.values()), None)
            hook._hand_over([(f"{name}/inputs", inputs), (f"{name}/outputs", out)])
            return out

        object.__setattr__(layer, "call", call)
        self._wrapped_layers.append(layer)

    def _wrap_compute_metrics(self, model):
        # Keras's train and test steps call model.compute_metrics(x, y, y_pred, …): the
        # model's inputs, labels and predictions, named as the original names them.
        if "compute_metrics" in model.__dict__:
            return
        original = model.compute_metrics
        hook_ref = weakref.ref(self)

        @functools.wraps(original)
        def compute_metrics(*args, **kwargs):
            hook = hook_ref()
            if hook is not None and hook._fault is None:
                names = ("x", "y", "y_pred")
                vals = list(args[:3]) + [kwargs.get(n) for n in names[len(args[:3]):]]
                hook._hand_over([("inputs", vals[0]), ("labels", vals[1]),
                                 ("predictions", vals[2])])
            return original(*args, **kwargs)

        object.__setattr__(model, "compute_metrics", compute_metrics)
        self._wrapped_model = model

    def _hand_over(self, groups):
        """Hands ``[(prefix, structure)]`` of this step's tensors to the hook under the
        original's names (``prefix`` for one tensor, ``prefix_<i>`` for several): run
        eagerly, directly when due; while a compiled function is traced, a py_function
        under ``tf.cond(_tap_due_var)``, so a step that saves none of them runs none. A
        failure leaves training alone (the fault policy)."""
        if self._fault is not None:
            return
        try:
            names, tensors = [], []
            for prefix, value in groups:
                flat = [t for t in tf.nest.flatten(value)
                        if isinstance(t, (tf.Tensor, tf.Variable, np.ndarray))]
                if len(flat) == 1:
                    names.append(prefix)
                else:
                    names += [f"{prefix}_{i}" for i in range(len(flat))]
                tensors += flat
            if not tensors:
                return
            if tf.executing_eagerly():
                if self._tap_due:
                    self._pending.extend(zip(names, tensors))
                return
            if not self._tap_traced or self._tap_due_var is None:
                return
            hook_ref = weakref.ref(self)

            def record(*values):
                hook = hook_ref()
                if hook is not None and hook._fault is None:
                    hook._pending.extend(zip(names, [v.numpy() for v in values]))
                return True

            def tap():
                return tf.py_function(record, tensors, Tout=tf.bool)

            tf.cond(self._tap_due_var.variable, tap, lambda: tf.constant(False))
        except Exception as e:  # noqa: BLE001 - the fault policy
            fail(self, "handing over " + ", ".join(p for p, _ in groups), e)
