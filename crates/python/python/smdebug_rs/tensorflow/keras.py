"""``smdebug_rs.tensorflow.KerasHook``: smdebug's Keras hook for TensorFlow 2 with Keras 3,
writing through the Rust hook.

    import smdebug_rs.tensorflow as smd

    hook = smd.KerasHook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=10),
                         include_collections=["weights", "gradients", "losses", "metrics"])
    model.fit(x_train, y_train, epochs=2, callbacks=[hook])
    model.evaluate(x_test, y_test, callbacks=[hook])

Steps and modes follow Keras's batch callbacks: each ``on_train_batch_begin``,
``on_test_batch_begin`` and ``on_predict_batch_begin`` starts the next step in mode TRAIN,
EVAL or PREDICT; the global step counts on across modes, the mode step per mode. A step that begins
asks the native hook once whether anything can be saved in it (``anything_due()``); where
nothing can, the step's callbacks return at once and the compiled functions copy nothing.

What is saved, under which name (the original's names; see :func:`keras2_name` for how a
Keras 3 variable gets its Keras 2 name):

* ``<layer>/<var>:0`` (``dense/kernel:0``, ``dense/bias:0``) — each variable of the model
  (``model.weights``, collections ``weights`` and ``biases``), read when the step's batch
  begins: **the values step s's forward pass uses** (the original reads them when the
  batch ends, after the update).
* ``gradients/<layer>/<var>Grad`` (``gradients/dense/kernelGrad``) — the gradient the
  optimizer is given for each trainable variable at step s (TRAIN steps): **the gradient
  of step s's batch loss at the weights above**. The optimizer's ``apply`` is wrapped on
  the instance (nothing of Keras or TensorFlow is patched): inside the compiled train
  function too, it copies the gradients into variables of the hook when they are due,
  which are read when the batch ends (on Keras's JAX backend a host callback hands them
  over: see :mod:`smdebug_rs.tensorflow.gradients`).
* ``<optimizer class>/<slot>/<layer>/<var>:0`` and ``<optimizer class>/<name>:0``
  (``Adam/momentum/dense/kernel:0``, ``Adam/iteration:0``; see
  :func:`optimizer_variable_names`) — each variable of the optimizer (collection
  ``optimizer_variables``), read when a TRAIN batch ends: the values after step s's
  update, as the original reads them.
* ``loss`` (collection ``losses``) and each metric of the batch logs (``accuracy``, ``mae``
  …, collection ``metrics``), and ``batch`` (the batch index, as the original adds it):
  **what Keras reported in step s's logs**. At the end of an epoch, as the original does,
  every value of the epoch's logs (``loss``, the metrics, ``val_loss``, ``val_<metric>``)
  and ``batch`` (the epoch's index) are written into the current step (the epoch's last,
  TRAIN, or EVAL after a validation) even when it is not due: there, readers see the
  epoch's values, which follow the batch's in the step.
* ``<layer>/inputs``, ``<layer>/outputs`` (``_<n>`` for several tensors) — the input and
  output of each of ``model.layers`` (collection ``layers``; the first call in a step),
  when ``layers`` (or ``all``) is saved: the layers' ``call`` is wrapped on the instance;
  run eagerly, the values are taken directly; in a compiled function (not under XLA) a
  ``tf.py_function``, run only when they are due, hands them over. The original took
  them only when run eagerly.
* ``inputs``, ``labels``, ``predictions`` (``_<n>`` for several; collections ``inputs`` and
  ``outputs``) — the batch's inputs, labels and predictions, from ``model.compute_metrics``
  (wrapped on the model instance, handed over as the layers' values), and in PREDICT
  steps the predictions of the batch's logs.
* ``save_tensor`` and ``save_scalar`` as ``smdebug_rs.Hook`` has them.

``wrap_tape(tape)`` serves custom ``tf.GradientTape`` loops: entering the tape starts a
TRAIN step; ``tape.gradient(loss, variables)`` saves ``gradients/<layer>/<var>Grad``,
``weights/<layer>/<var>:0`` (the values the tape's forward used) and ``loss``.

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import atexit
import functools
import re
import weakref

import keras
import numpy as np
import tensorflow as tf

from smdebug_rs import modes
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.core.faults import fail, guarded
from smdebug_rs.core.framework_hook import FrameworkHook
from smdebug_rs.core.include import included_collections, json_included_collections
from smdebug_rs.core.logger import get_logger
from smdebug_rs.tensorflow import singleton_utils
from smdebug_rs.tensorflow.collection import Collection
from smdebug_rs.tensorflow.gradients import BACKENDS, DueFlag, GradientTap

__all__ = ["KerasHook", "keras2_name", "gradient_name", "optimizer_variable_names", "tf_worker"]

GRADIENT_PREFIX = "gradients/"
TAPE_WEIGHT_PREFIX = "weights/"
LOSS_KEYS = ("loss", "val_loss")
BATCH_KEY = "batch"
DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.METRICS, CollectionKeys.LOSSES,
                               CollectionKeys.SEARCHABLE_SCALARS]
# The regexes the original adds for wrap_tape loops, at the first tape.
_TAPE_REGEXES = {
    CollectionKeys.WEIGHTS: "^weights/.*/((?!bias).)*$",
    CollectionKeys.LOSSES: ".*loss.*",
    CollectionKeys.GRADIENTS: "^gradient",
}
_MODE_OF_HOOK = {"train": modes.TRAIN, "test": modes.EVAL, "predict": modes.PREDICT}


def keras2_name(variable, model=None):
    """The Keras 2 name smdebug 1.0.34 saved a variable under, from a Keras 3 variable.

    Keras 3 names a variable by its ``path``: ``<layer path>/<name>``, where a layer of a
    ``Sequential`` model has the model's name in its path and a layer of a functional model
    has not (``sequential/dense/kernel``, ``hid/kernel``). Keras 2 named it
    ``<layer>/<name>:0`` (``dense/kernel:0``). The mapping: the path, without the leading
    ``<model.name>/`` of the model the hook watches when it is there, plus ``:0``. So
    ``sequential/dense/kernel`` → ``dense/kernel:0``, ``hid/kernel`` → ``hid/kernel:0``, a
    ``Sequential`` named ``inner`` inside a functional model: ``inner/dense/kernel`` →
    ``inner/dense/kernel:0``. Without a model
    (a ``wrap_tape`` loop with no ``register_model``) the path stays whole
    (``sequential/dense/kernel:0``). A plain ``tf.Variable`` keeps its TensorFlow name."""
    path = getattr(variable, "path", None)
    if path is None:
        name = variable.name
        return name if ":" in name else name + ":0"
    if model is not None:
        prefix = model.name + "/"
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path + ":0"


def gradient_name(variable, model=None):
    """``gradients/<keras2_name without :0>Grad``, the original's gradient names."""
    return GRADIENT_PREFIX + keras2_name(variable, model).split(":")[0] + "Grad"


def optimizer_variable_names(optimizer, model=None):
    """``[(name, variable)]`` of ``optimizer.variables``, named in the form of the Keras 2
    optimizers (``Adam/m/dense/kernel:0``, ``Adam/iteration:0``) from Keras 3's names.

    Keras 3 names a slot variable ``<variable path, / as _>_<slot>``
    (``sequential_dense_kernel_momentum``) and the others by their own name (``iteration``,
    ``learning_rate``). A slot variable of a model variable becomes
    ``<optimizer class>/<slot>/<keras2_name of the variable>``
    (``Adam/momentum/dense/kernel:0``, ``Adam/velocity/dense/kernel:0``,
    ``SGD/momentum/dense_1/bias:0``), the others ``<optimizer class>/<name>:0``
    (``Adam/iteration:0``, ``Adam/learning_rate:0``). Keras 3's slot names are kept (Keras
    2's Adam said ``m`` and ``v``)."""
    cls = type(optimizer).__name__
    variables = optimizer.variables
    if callable(variables):  # tf.keras 2 optimizers: a method
        variables = variables()
    owners = {}
    for v in (model.trainable_weights if model is not None else []):
        path = getattr(v, "path", None)
        if path is not None:
            owners[path.replace("/", "_") + "_"] = v
    named = []
    for ov in variables:
        name = ov.name.split(":")[0]
        # The longest prefix: `seq_dense_1_kernel_` must not be taken for `seq_dense_`.
        prefix = max((p for p in owners if name.startswith(p) and len(name) > len(p)),
                     key=len, default=None)
        if prefix is None:
            named.append((f"{cls}/{name}:0", ov))
        else:
            slot = name[len(prefix):]
            named.append((f"{cls}/{slot}/{keras2_name(owners[prefix], model)}", ov))
    return named


def tf_worker():
    """``(worker name, number of workers)``: ``worker_<rank>`` of an initialised Horovod
    job (``horovod.tensorflow``), else ``("worker_0", 1)``."""
    try:
        import horovod.tensorflow as hvd

        if hvd.is_initialized():
            return f"worker_{hvd.rank()}", hvd.size()
    except Exception:  # noqa: BLE001 - no Horovod, or not initialised
        pass
    return "worker_0", 1


def _to_numpy(value):
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    if hasattr(value, "numpy"):
        return value.numpy()
    if keras.ops.is_tensor(value):  # another backend's tensor (a jax.Array)
        return keras.ops.convert_to_numpy(value)
    return value


def _sync_state(model):
    # On the JAX backend the model's state lives outside its variables during an epoch
    # (their values are dropped after each step): Keras's callbacks sync it back before
    # they read a variable. A no-op elsewhere.
    sync = getattr(model, "jax_state_sync", None)
    if sync is not None:
        sync()


class KerasHook(FrameworkHook, keras.callbacks.Callback):
    """smdebug's Keras hook: ``KerasHook(out_dir, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one")``,
    the original's arguments and defaults (``metrics``, ``losses`` and ``sm_metrics``
    saved, every 500 steps, unless told otherwise). A ``keras.callbacks.Callback``: pass it
    to ``fit``, ``evaluate`` and ``predict``. The collections and regexes are TensorFlow 2's
    (``smdebug_rs.Hook(framework="tensorflow2")``). See the module docstring for names and
    semantics; what every framework hook has is :class:`FrameworkHook`'s."""

    FRAMEWORK = "tensorflow2"
    _LOG_NAME = "smdebug_rs.tensorflow"
    _COLLECTION = Collection

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None,
                 dry_run=False, reduction_config=None, save_config=None, include_regex=None,
                 include_collections=None, save_all=False, include_workers="one", *,
                 _json_file=None):
        keras.callbacks.Callback.__init__(self)
        self._prepared = False      # names given to the collections (before step 0)
        self._hooked_model = None   # the model whose optimizer and layers are wrapped
        self._optimizer = None
        self._user_optimizer = None
        self._gradients = None      # GradientTap of the optimizer, or None
        self._opt_vars = []         # [(name, variable)] of the optimizer's variables
        self._opt_vars_of = None    # (optimizer, number of variables) they were named for
        self._step_mode = None
        self._pending = []          # (name, value) handed over during this step
        self._tap_names = []        # names the layer and model wrappers hand over
        self._tap_due = False       # any of them due at this step
        self._tap_due_var = None    # the same as a DueFlag, for traced functions
        self._weight_names = None   # (model, [(name, variable)]) of the watched model
        self._tap_traced = False    # taken from compiled functions (not under XLA)
        self._wrapped_layers = []
        self._wrapped_model = None
        self._tape_prepared = False
        self.tape = None
        self.registered_model = None
        self.mode = modes.GLOBAL
        FrameworkHook.__init__(self, out_dir, export_tensorboard, tensorboard_dir, dry_run,
                               reduction_config, save_config, include_regex,
                               include_collections, save_all, include_workers,
                               _json_file=_json_file)
        atexit.register(_close_at_exit, weakref.ref(self))

    @staticmethod
    def _framework_worker():
        return tf_worker()

    @staticmethod
    def _framework_singleton():
        return singleton_utils

    @staticmethod
    def _framework_is_tensor(value):
        return hasattr(value, "numpy") or isinstance(value, tf.IndexedSlices) \
            or keras.ops.is_tensor(value)

    @staticmethod
    def _framework_to_numpy(value):
        return _to_numpy(value)

    def _framework_init(self, include_collections, include_regex, save_all):
        self.include_collections = included_collections(
            include_collections, include_regex, save_all, DEFAULT_INCLUDE_COLLECTIONS)

    def _framework_json_config(self, path):
        self.include_collections = json_included_collections(path, DEFAULT_INCLUDE_COLLECTIONS)

    def _framework_end_step(self):
        self._end_step_values()

    def _framework_detach(self):
        self._detach()

    def _may_save(self, *collections):
        inc = self.include_collections
        if CollectionKeys.ALL in inc or any(c in inc for c in collections):
            return True
        # A custom collection or `default` with regexes may take any name.
        known = {CollectionKeys.METRICS, CollectionKeys.LOSSES,
                 CollectionKeys.SEARCHABLE_SCALARS, CollectionKeys.WEIGHTS,
                 CollectionKeys.BIASES, CollectionKeys.GRADIENTS, CollectionKeys.LAYERS,
                 CollectionKeys.INPUTS, CollectionKeys.OUTPUTS,
                 CollectionKeys.OPTIMIZER_VARIABLES, CollectionKeys.DEFAULT}
        if any(c not in known for c in inc):
            return True
        return CollectionKeys.DEFAULT in inc and bool(
            self.get_collection(CollectionKeys.DEFAULT).include_regex)

    # -- Keras callbacks -----------------------------------------------------------------

    @guarded()
    def set_model(self, model):
        """Keras hands the model over (``fit``, ``evaluate``, ``predict``)."""
        super().set_model(model)

    @guarded()
    def register_model(self, model):
        """The model whose variables are named and saved (Keras calls ``set_model``; a
        ``wrap_tape`` loop may call this so that names lose the model's prefix)."""
        self.registered_model = model

    def _watched_model(self):
        m = getattr(self, "_model", None)
        return m if m is not None else self.registered_model

    def _prepare(self, model):
        """Before the first step: the model's variable and gradient names go into the
        collections by name (``weights``/``biases``, ``gradients``), ``loss``/``val_loss``
        into ``losses``, ``batch`` into ``metrics``, as the original files them."""
        self._prepared = True
        if model is None:
            return
        weights = self.get_collection(CollectionKeys.WEIGHTS)
        biases = self.get_collection(CollectionKeys.BIASES)
        bias_regex = list(biases.include_regex)
        probe = Collection("probe", include_regex=bias_regex)
        for v in model.weights:
            name = keras2_name(v, model)
            (biases if probe.matches(name) else weights).add_tensor_name(name)
        grads = self.get_collection(CollectionKeys.GRADIENTS)
        for v in model.trainable_weights:
            grads.add_tensor_name(gradient_name(v, model))
        losses = self.get_collection(CollectionKeys.LOSSES)
        for k in LOSS_KEYS:
            losses.add_tensor_name(k)
        self.get_collection(CollectionKeys.METRICS).add_tensor_name(BATCH_KEY)
        layers = self.get_collection(CollectionKeys.LAYERS)
        if not layers.include_regex and self._may_save(CollectionKeys.LAYERS):
            # An empty `layers` collection means every layer (the original's rule).
            for layer in model.layers:
                layers.include("^" + re.escape(layer.name) + "/(inputs|outputs)(_[0-9]+)?$")
        # The model's inputs, labels and predictions (the original's names).
        inputs = self.get_collection(CollectionKeys.INPUTS)
        if not inputs.include_regex and self._may_save(CollectionKeys.INPUTS):
            inputs.include("^inputs(_[0-9]+)?$")
        outputs = self.get_collection(CollectionKeys.OUTPUTS)
        if not outputs.include_regex and self._may_save(CollectionKeys.OUTPUTS):
            outputs.include("^(labels|predictions)(_[0-9]+)?$")

    def _attach(self, model):
        """Wraps the optimizer's ``apply`` (gradients) and, when saved, the layers' calls,
        once per model. Returns whether the train function must be traced again."""
        if self._hooked_model is model:
            return False
        self._detach()
        self._hooked_model = model
        retrace = False
        opt = self._user_optimizer or getattr(model, "optimizer", None)
        backend = keras.backend.backend()
        if opt is not None and self._may_save(CollectionKeys.GRADIENTS) \
                and model.trainable_weights:
            if backend in BACKENDS:
                self._gradients = GradientTap(
                    [(gradient_name(v, model), v) for v in model.trainable_weights], backend,
                    getattr(model, "distribute_strategy", None))
                self._wrap_optimizer_apply(opt)
                retrace = True
            else:
                self._not_on_backend("gradients", backend)
        layers = self._may_save(CollectionKeys.LAYERS)
        model_io = self._may_save(CollectionKeys.INPUTS, CollectionKeys.OUTPUTS)
        if (layers or model_io) and backend != "tensorflow":
            self._not_on_backend("layer inputs and outputs, model inputs, labels and "
                                 "predictions", backend)
            layers = model_io = False
        if layers or model_io:
            # In a compiled function (not under XLA, which cannot call back into Python)
            # due values are handed over through tf.py_function.
            self._tap_traced = getattr(model, "jit_compile", False) is not True
            self._tap_due_var = DueFlag("smdebug_rs_tap_due")
            retrace = True
        if layers:
            for layer in model.layers:
                self._wrap_layer(layer)
                self._tap_names += [f"{layer.name}/inputs", f"{layer.name}/inputs_0",
                                    f"{layer.name}/outputs", f"{layer.name}/outputs_0"]
        if model_io:
            self._wrap_compute_metrics(model)
            self._tap_names += ["inputs", "inputs_0", "labels", "labels_0", "predictions",
                                "predictions_0"]
        return retrace

    def _not_on_backend(self, what, backend):
        get_logger().warning("%s: %s are not saved on the Keras backend %r (they are on "
                             "TensorFlow)", self._LOG_NAME, what, backend)

    def _detach(self):
        self._due = False
        opt, self._optimizer = self._optimizer, None
        if opt is not None and "apply" in opt.__dict__:
            try:
                del opt.apply
            except AttributeError:
                pass
        for layer in self._wrapped_layers:
            if "call" in layer.__dict__:
                try:
                    object.__delattr__(layer, "call")
                except AttributeError:
                    pass
        self._wrapped_layers = []
        model, self._wrapped_model = self._wrapped_model, None
        if model is not None and "compute_metrics" in model.__dict__:
            try:
                object.__delattr__(model, "compute_metrics")
            except AttributeError:
                pass
        self._tap_names = []
        self._hooked_model = None

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

    def _begin_mode(self, mode):
        self._weight_names = None
        model = self._watched_model()
        if model is None or self._closed:
            return
        if not self._prepared:
            self._prepare(model)
        if not self._attach(model):
            return
        # The function of this fit (evaluate, predict) was made before on_*_begin and may
        # have been traced before the wrappers were put on: it is made anew (traced
        # lazily, at its first call), the other two are dropped so Keras makes them
        # again when they are next needed.
        makers = {modes.TRAIN: ("train_function", model.make_train_function),
                  modes.EVAL: ("test_function", model.make_test_function),
                  modes.PREDICT: ("predict_function", model.make_predict_function)}
        for m, (attr, make) in makers.items():
            if m == mode:
                make(force=True)
            else:
                setattr(model, attr, None)

    @guarded()
    def on_train_begin(self, logs=None):
        self._begin_mode(modes.TRAIN)

    @guarded()
    def on_test_begin(self, logs=None):
        self._begin_mode(modes.EVAL)

    @guarded()
    def on_predict_begin(self, logs=None):
        self._begin_mode(modes.PREDICT)

    def _batch_begin(self, mode):
        if self._closed:
            return
        if not self._prepared:
            self._prepare(self._watched_model())
        native = self._native
        self._end_step_values()
        if mode != self.mode:
            native.set_mode(mode)
            self.mode = mode
        # One answer for the step: where nothing can be saved, every callback of the step
        # returns at once (and the compiled functions copy and hand over nothing).
        self._start_step()
        self._started = True
        self._step_mode = mode
        model = self._watched_model()
        if model is None or not self._due:
            if self._gradients is not None:
                self._gradients.due.set(False)
            self._tap_due = False
            if self._tap_due_var is not None:
                self._tap_due_var.set(False)
            return
        synced = False
        for name, v in self._named_weights(model):
            if native.should_save_tensor(name):
                if not synced:
                    _sync_state(model)
                    synced = True
                self._save(name, v)
        if self._gradients is not None:
            self._gradients.due.set(mode == modes.TRAIN and any(
                native.should_save_tensor(n) for n in self._gradients.names.values()))
        self._tap_due = any(native.should_save_tensor(n) for n in self._tap_names)
        if self._tap_due_var is not None:
            self._tap_due_var.set(self._tap_due)

    def _named_weights(self, model):
        # Named once per model and mode (a fit builds its model before on_train_begin).
        if self._weight_names is None or self._weight_names[0] is not model:
            self._weight_names = (model, [(keras2_name(v, model), v) for v in model.weights])
        return self._weight_names[1]

    def _batch_end(self, batch, logs):
        if self._closed or not self._due:
            return
        native = self._native
        if self._step_mode == modes.TRAIN and self._gradients is not None \
                and self._gradients.due.value:
            for name, value in self._gradients.values():
                if native.should_save_tensor(name):
                    self._save(name, value)
        if self._step_mode == modes.TRAIN and self._may_save(CollectionKeys.OPTIMIZER_VARIABLES):
            self._save_optimizer_variables()
        if self._step_mode == modes.PREDICT and logs and "outputs" in logs:
            # predict_step has no compute_metrics: the batch's predictions come in the logs.
            self._hand_over([("predictions", logs["outputs"])])
        self._save_logs(batch, logs)
        self._end_step_values()

    def _save_optimizer_variables(self):
        # The original's _write_optimizer_variables: when the TRAIN batch ends, the values
        # after the step's update. Keras builds the optimizer's variables at the first
        # train step: they are named (into `optimizer_variables`) when first seen and again
        # if they change.
        model = self._watched_model()
        opt = self._user_optimizer or getattr(model, "optimizer", None)
        if opt is None:
            return
        variables = opt.variables() if callable(opt.variables) else opt.variables
        if self._opt_vars_of != (opt, len(variables)):
            self._opt_vars = optimizer_variable_names(opt, model)
            self._opt_vars_of = (opt, len(variables))
            coll = self.get_collection(CollectionKeys.OPTIMIZER_VARIABLES)
            for name, _ in self._opt_vars:
                coll.add_tensor_name(name)
        native = self._native
        due = [(name, v) for name, v in self._opt_vars if native.should_save_tensor(name)]
        if due:
            _sync_state(model)
        for name, v in due:
            self._save(name, v)

    def _save_logs(self, batch, logs):
        if logs is None:
            return
        native = self._native
        metrics_due = native.should_save_tensor(BATCH_KEY)
        if metrics_due:
            self._save(BATCH_KEY, batch)
        for key, value in logs.items():
            if key in LOSS_KEYS:
                if native.should_save_tensor(key):
                    self._save(key, value)
            elif key != "outputs" and "smdebug_" not in key and metrics_due:
                # Metric names are known only from the logs, after the first step: they
                # join `metrics` through save_tensor (written at the end of this step).
                self._saving = key
                native.save_tensor(key, value, CollectionKeys.METRICS)
                self._saving = None

    def _end_step_values(self):
        # What the layer and model wrappers handed over during the step: the first value
        # of each name (a layer called twice keeps its first call's).
        pending, self._pending = self._pending, []
        if not pending or self._native is None:
            return
        seen = set()
        for name, value in pending:
            if name in seen:
                continue
            seen.add(name)
            if self._native.should_save_tensor(name):
                self._save(name, value)

    @guarded()
    def on_train_batch_begin(self, batch, logs=None):
        self._batch_begin(modes.TRAIN)

    @guarded()
    def on_test_batch_begin(self, batch, logs=None):
        self._batch_begin(modes.EVAL)

    @guarded()
    def on_predict_batch_begin(self, batch, logs=None):
        self._batch_begin(modes.PREDICT)

    @guarded()
    def on_train_batch_end(self, batch, logs=None):
        self._batch_end(batch, logs)

    @guarded()
    def on_test_batch_end(self, batch, logs=None):
        self._batch_end(batch, logs)

    @guarded()
    def on_predict_batch_end(self, batch, logs=None):
        self._batch_end(batch, logs)

    @guarded()
    def on_epoch_end(self, epoch, logs=None):
        """The original's forced save at the end of an epoch: each value of the epoch's
        logs (the metrics, ``val_<metric>``, then ``loss`` and ``val_loss``) and ``batch``
        (the epoch's index, as the original sets it) are written into the current step
        (the epoch's last, TRAIN, or EVAL after a validation), whether or not that step
        is due, into ``metrics`` and ``losses``. In a due step they follow the batch's
        values of the same names, so readers take the epoch's."""
        if self._closed or self._native.step_num < 0 or logs is None:
            return
        native = self._native
        values = dict(logs)
        values[BATCH_KEY] = epoch
        forced = [(k, v, CollectionKeys.METRICS) for k, v in values.items()
                  if k not in LOSS_KEYS and k != "outputs" and "smdebug_" not in k]
        forced += [(k, values[k], CollectionKeys.LOSSES) for k in LOSS_KEYS if k in values]
        for key, value, collection in forced:
            self._saving = key  # named in the log if converting or saving fails
            native.save_forced(key, _to_numpy(value), collection)
            self._saving = None

    def _save(self, name, value):
        # Only called for names due at this step: the device → host copy happens here.
        self._saving = name  # named in the log if converting or saving fails
        self._native.save(name, _to_numpy(value))
        self._saving = None

    # -- custom loops --------------------------------------------------------------------

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

    # -- calls from the training script --------------------------------------------------

    @guarded()
    def save_tensor(self, tensor_name, tensor_value, collections_to_write="default"):
        """A custom tensor: added to the collection (the last one of a list) and written
        raw at the end of the step in which it was given, if that step saves anything (the
        value is copied now)."""
        if self._closed:
            return
        value = np.asarray(_to_numpy(tensor_value))
        if value.dtype == object:
            get_logger().warning("%s: the value of %s could not be converted into a numpy "
                                 "value", self._LOG_NAME, tensor_name)
            return
        self._native.save_tensor(tensor_name, value, collections_to_write)

    def add_to_collection(self, collection_name, variable):
        """Adds ``variable`` to collection ``collection_name`` (``Collection.add``; a Keras
        variable is named as the hook names the weights of the model it watches)."""
        coll = self.get_collection(collection_name)
        if isinstance(variable, (str, list, tuple, set)):
            coll.add(variable)
        else:
            coll.add_tensor_name(keras2_name(variable, self._hooked_model or
                                             self.registered_model))

    def record_tensor_value(self, tensor_name, tensor_value):
        """Deprecated in the original in favour of :meth:`save_tensor`: the value saved in
        the ``metrics`` collection."""
        get_logger().warning("%s: record_tensor_value has been deprecated. Please use the "
                             "save_tensor API", self._LOG_NAME)
        self.save_tensor(tensor_name, tensor_value, CollectionKeys.METRICS)

    @guarded(default=False)
    def should_save_layer(self, layer_name):
        """Whether the layer's outputs are due at this step."""
        return not self._closed and self._native.step_num >= 0 and (
            self._native.should_save_tensor(f"{layer_name}/outputs"))


def _close_at_exit(ref):
    hook = ref()
    if hook is not None and hook._native is not None and not hook._closed:
        hook.close()
