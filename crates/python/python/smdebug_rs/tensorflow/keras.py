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

This module is the callback; what it wraps on the optimizer, layers and model is in
:mod:`smdebug_rs.tensorflow.wrappers`, the ``wrap_tape`` loops in
:mod:`smdebug_rs.tensorflow.tape`, the Keras 2 names in :mod:`smdebug_rs.tensorflow.names`
(re-exported here).
"""

import atexit
import re
import weakref

import keras
import numpy as np
import tensorflow as tf

from smdebug_rs import modes
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.core.faults import guarded
from smdebug_rs.core.framework_hook import FrameworkHook
from smdebug_rs.core.include import included_collections, json_included_collections
from smdebug_rs.core.logger import get_logger
from smdebug_rs.tensorflow import singleton_utils
from smdebug_rs.tensorflow.collection import Collection
from smdebug_rs.tensorflow.gradients import BACKENDS, DueFlag, GradientTap
from smdebug_rs.tensorflow.names import (  # noqa: F401 (the prefixes: re-exported)
    GRADIENT_PREFIX,
    TAPE_WEIGHT_PREFIX,
    gradient_name,
    keras2_name,
    optimizer_variable_names,
)
from smdebug_rs.tensorflow.tape import TapeLoops
from smdebug_rs.tensorflow.wrappers import KerasWrappers

__all__ = ["KerasHook", "keras2_name", "gradient_name", "optimizer_variable_names", "tf_worker"]

LOSS_KEYS = ("loss", "val_loss")
BATCH_KEY = "batch"
DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.METRICS, CollectionKeys.LOSSES,
                               CollectionKeys.SEARCHABLE_SCALARS]
_MODE_OF_HOOK = {"train": modes.TRAIN, "test": modes.EVAL, "predict": modes.PREDICT}


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


class KerasHook(KerasWrappers, TapeLoops, FrameworkHook, keras.callbacks.Callback):
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
