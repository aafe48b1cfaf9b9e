"""The gradients a Keras 3 optimizer's ``apply`` is given, taken for the ``KerasHook`` at
the steps that save them, inside the backend's compiled train function:

* TensorFlow: each gradient is copied into a variable of the hook (its slot) under
  ``tf.cond`` of a due flag (a ``tf.Variable``), so a step that saves none copies none; the
  hook reads the slots when the batch ends. Under a strategy of several replicas
  (MirroredStrategy) the slots are sum-on-read variables (see :class:`GradientTap`).
* JAX: the train step is a pure function, so nothing can be written into a variable from
  it; ``jax.debug.callback`` hands the gradients to the host at every step, where they are
  kept only when due (the flag is a Python bool there).

Other backends (PyTorch) give no gradients through this path.
"""

import weakref

import tensorflow as tf

#: The Keras backends whose gradients :class:`GradientTap` takes.
BACKENDS = ("tensorflow", "jax")


class DueFlag:
    """Whether something is due at this step, as a Python bool and, for TensorFlow's
    compiled functions, as a ``tf.Variable(bool)`` they read (``tf.cond``): :meth:`set`
    assigns the variable only when the value changes, so the steps between two due ones run
    no TensorFlow op for it. ``name=None``: the Python bool alone."""

    def __init__(self, name=None):
        self.variable = None if name is None else tf.Variable(False, trainable=False, name=name)
        self.value = False

    def set(self, value):
        if value != self.value:
            if self.variable is not None:
                self.variable.assign(value)
            self.value = value


def var_key(v):
    """A variable's key in a model: a Keras variable's path (unique in a model; the same
    object in eager code and in a trace, and under mixed precision, where ``.value`` is a
    cast), a tf.Variable itself."""
    path = getattr(v, "path", None)
    return path if path is not None else id(v)


class GradientTap:
    """Takes the gradient of each of ``variables`` (``[(name, variable)]``) that the
    optimizer is given, on Keras backend ``backend`` (one of :data:`BACKENDS`), when
    :attr:`due` is set. ``strategy``: the model's ``tf.distribute`` strategy (TensorFlow)."""

    def __init__(self, variables, backend, strategy=None):
        self.backend = backend
        self.names = {var_key(v): name for name, v in variables}
        self._taken = {}  # name -> value, handed over by the JAX callback
        if backend == "tensorflow":
            self.due = DueFlag("smdebug_rs_gradients_due")
            strategy = strategy or tf.distribute.get_strategy()
            # Under several replicas the optimizer's apply runs once per replica with the
            # replica's gradient, which Keras's loss scaling makes a share of the one
            # applied: each replica writes its share into its copy of a sum-on-read
            # variable, whose value is then the applied gradient.
            sync = {}
            if getattr(strategy, "num_replicas_in_sync", 1) > 1:
                sync = dict(synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM)
            with strategy.scope():
                self._slots = {
                    name: tf.Variable(tf.zeros(v.shape, dtype=v.dtype), trainable=False,
                                      name="smdebug_rs_gradient", **sync)
                    for name, v in variables}
        else:
            self.due = DueFlag()
            self._slots = None

    def take(self, grads, variables):
        """In the optimizer's ``apply`` (traced or eager): the gradients of the variables
        this tap knows, copied when due (TensorFlow) or handed over (JAX)."""
        pairs = []
        for g, v in zip(grads, variables):
            name = self.names.get(var_key(v))
            if g is None or name is None:
                continue
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            pairs.append((name, g))
        if not pairs:
            return
        if self._slots is None:
            self._hand_over(pairs)
            return
        slots = self._slots

        def copy():
            for name, g in pairs:
                slots[name].assign(tf.cast(g, slots[name].dtype))
            return tf.constant(True)

        tf.cond(self.due.variable, copy, lambda: tf.constant(False))

    def _hand_over(self, pairs):
        import jax

        names = [n for n, _ in pairs]
        tap_ref = weakref.ref(self)

        def record(*values):
            tap = tap_ref()
            if tap is not None and tap.due.value:
                tap._taken.update(zip(names, values))

        jax.debug.callback(record, *[g for _, g in pairs])

    def values(self):
        """``[(name, value)]`` of the gradients taken at this step (when it was due); the
        due flag is cleared."""
        if self._slots is not None:
            taken = list(self._slots.items())
        else:
            import jax

            jax.effects_barrier()  # the step's callback has run
            taken, self._taken = list(self._taken.items()), {}
        self.due.set(False)
        return taken
