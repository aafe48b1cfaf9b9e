"""``smdebug_rs.mxnet.Hook``: smdebug's MXNet Gluon block hook, writing through the Rust hook.

    import smdebug_rs.mxnet as smd

    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=100),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_block(net)             # a forward pre-hook on net starts each step
    hook.register_block(loss_fn)         # a gluon.loss.Loss: its output is the loss
    for x, y in batches:
        with autograd.record():
            loss = loss_fn(net(x), y)    # weights, outputs, the loss are saved here
        loss.backward()
        trainer.step(batch_size)         # gradients are saved when the step ends
    hook.close()

What is saved under which name (as smdebug 1.0.34's MXNet hook names it, from Gluon's
names):

* ``<param.name>`` (``dense0_weight``, ``hybridsequential0_dense0_bias``) — each parameter
  of the registered block (``collect_params()``), saved when the block's forward starts:
  **the values step s's forward uses**, before the trainer changes them (a parameter still
  waiting for deferred initialisation then is saved when the block's forward ends, with
  the values it was just given).
* ``gradient/<param.name>`` — the gradient of each parameter whose ``grad_req`` is not
  ``"null"``, read when step s ends (the next forward of the block, a ``set_mode`` that
  changes the mode, or ``close``): **the gradients of step s's backward** (TRAIN and
  GLOBAL steps only).
* ``<block.name>_input_<n>`` / ``<block.name>_output_<n>`` — the NDArrays among a block's
  positional inputs and its output (tuples and lists walked in order), copied to the host
  on MXNet's engine when the block's forward returns (the values it computed) and read when
  the step ends, so that saving them does not wait for the forward pass; for the registered
  block only, or for it and every child when a collection beyond weights, biases,
  gradients and losses is saved (as the original decides). A block called again in the
  same step continues the count.
* ``<lossblock.name>_output_0`` (``softmaxcrossentropyloss0_output_0``) — a registered loss
  block's output: **the loss computed at step s**.
* ``save_tensor`` and ``save_scalar`` as ``smdebug_rs.Hook`` has them.

The original writes a step's parameters and gradients at the next forward (or at close):
its weights at step s are those after step s's update, and the last TRAIN step before
``set_mode(EVAL)`` gets none. See docs/src/python.md ("MXNet") for this and the other
differences.

Steps: each forward call of the registered block ends the open step (its gradients), starts
the next one and asks once whether anything can be saved in it (``anything_due()``: any
collection due in the step's mode). On a step where nothing is due the blocks carry no
forward hook of ours (they are attached for the steps that save: see
:mod:`smdebug_rs.core.framework_hook`) and the step's start returns at once: no NDArray is
touched, no name is built, the parameters are not walked, neither when the step starts nor
for its gradients when it ends. Only what is due leaves the device: ``asnumpy()`` runs only
after ``should_save_tensor(name)`` said a collection of it is due at this step.

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import atexit
import weakref

import mxnet as mx
from mxnet.gluon.parameter import DeferredInitializationError

from smdebug_rs import modes
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.core.faults import guarded
from smdebug_rs.core.framework_hook import FrameworkHook
from smdebug_rs.core.include import included_collections as _included_collections
from smdebug_rs.core.include import json_included_collections
from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.reduction_config import ReductionConfig  # noqa: F401 (re-exported)
from smdebug_rs.core.save_config import SaveConfig  # noqa: F401 (re-exported)
from smdebug_rs.mxnet import singleton_utils
from smdebug_rs.mxnet.collection import Collection
from smdebug_rs.mxnet.convert import is_ndarray, to_numpy

__all__ = ["Hook", "mxnet_worker"]

INPUT_TENSOR_SUFFIX = "_input_"
OUTPUT_TENSOR_SUFFIX = "_output_"
GRADIENT_PREFIX = "gradient/"

DEFAULT_INCLUDE_COLLECTIONS = [CollectionKeys.LOSSES]
# Saving only these needs no hook on the children of the registered block (the original's
# COLLECTIONS_NOT_REQUIRING_RECURSIVE_HOOK).
COLLECTIONS_NOT_REQUIRING_RECURSIVE_HOOK = {
    CollectionKeys.WEIGHTS, CollectionKeys.BIASES, CollectionKeys.GRADIENTS,
    CollectionKeys.LOSSES,
}
_NO_GRADIENT_MODES = (modes.EVAL, modes.PREDICT)


def mxnet_worker():
    """``(worker name, number of workers)``: ``worker_<rank>`` and the size of an
    initialised Horovod job (``horovod.mxnet``), as the original asks; else
    ``("worker_0", 1)``."""
    try:
        import horovod.mxnet as hvd

        if hvd.size():
            return f"worker_{hvd.rank()}", hvd.size()
    except (ImportError, ValueError):
        pass
    return "worker_0", 1


def included_collections(include_collections=None, include_regex=None, save_all=False):
    """The collections a hook saves, as the original computes them: those given (default
    ``losses``) plus ``losses``, ``default`` with ``include_regex``, ``all`` with
    ``save_all``."""
    return _included_collections(include_collections, include_regex, save_all,
                                 DEFAULT_INCLUDE_COLLECTIONS)


def _json_included_collections(path):
    """``included_collections`` of a SageMaker JSON configuration."""
    return json_included_collections(path, DEFAULT_INCLUDE_COLLECTIONS)


class Hook(FrameworkHook):
    """smdebug's MXNet hook, with the original's constructor (:class:`FrameworkHook`).
    The collections, regexes and reductions are MXNet's
    (``smdebug_rs.Hook(framework="mxnet")``). See the module docstring for names and
    semantics."""

    FRAMEWORK = "mxnet"
    _LOG_NAME = "smdebug_rs.mxnet"
    _COLLECTION = Collection

    def _framework_init(self, include_collections, include_regex, save_all):
        self._root = None        # the block whose forward started the open step
        self._step_mode = modes.GLOBAL
        self._deferred = []      # its parameters not initialised when the step started
        self._copies = []        # (name, host copy queued) of the open step's block tensors
        self.registered_blocks = set()
        self._params = {}        # root block → its parameters (see _params_of)
        self.model = None
        self.last_block = None
        self.mode = modes.GLOBAL
        self.include_collections = included_collections(include_collections, include_regex,
                                                        save_all)

    def _framework_built(self):
        # As the original's _cleanup at exit: the last step's gradients, then the trial's
        # end. Registered after the native hook's own exit handler, so it runs first.
        atexit.register(_close_at_exit, weakref.ref(self))

    # Module-level names looked up at each call (tests count conversions by replacing them).
    @staticmethod
    def _framework_worker():
        return mxnet_worker()

    @staticmethod
    def _framework_singleton():
        return singleton_utils

    @staticmethod
    def _framework_is_tensor(value):
        return is_ndarray(value)

    @staticmethod
    def _framework_to_numpy(value):
        return to_numpy(value)

    def _framework_detach(self):
        for h in self._handles:
            h.detach()
        self._handles.clear()
        self._params.clear()

    def _framework_json_config(self, path):
        self.include_collections = _json_included_collections(path)

    def _framework_end_step(self):
        self._end_step()

    def _is_recursive_needed(self):
        # The original's rule: hooks on every child when `default` has regexes and is
        # saved, or when a collection beyond weights, biases, gradients, losses is saved.
        inc = self.include_collections
        if CollectionKeys.DEFAULT in inc and \
                self._native.get_collection(CollectionKeys.DEFAULT).include_regex:
            return True
        return any(c not in COLLECTIONS_NOT_REQUIRING_RECURSIVE_HOOK for c in inc)

    # -- registering ---------------------------------------------------------------------

    @guarded()
    def register_block(self, block):
        """Registers a Gluon block: the model (a forward pre-hook starts each step and saves
        its parameters; a forward hook on it, or on it and every child when the
        collections saved need them, saves inputs and outputs) or a ``gluon.loss.Loss``
        (a forward hook: its output is the loss). Anything else is logged and ignored, a
        block registered again is left as it is (a warning), as the original."""
        if not isinstance(block, mx.gluon.Block):
            get_logger().error("%s: the given block type %s is unsupported", self._LOG_NAME,
                               block.__class__.__name__)
            return
        if block in self.registered_blocks:
            get_logger().warning("%s: the hook is already registered to block %s",
                                 self._LOG_NAME, block.name)
            return
        if isinstance(block, mx.gluon.loss.Loss):
            self._add_forward_hook(block)
            return
        self.model = block
        recursive = self._is_recursive_needed()
        self._handles.append(block.register_forward_pre_hook(self._forward_pre_hook))
        if recursive:
            block.apply(self._recursive_apply)
        else:
            self._add_forward_hook(block)

    def _recursive_apply(self, block):
        if block in self.registered_blocks:
            get_logger().warning("%s: the hook is already registered to block %s",
                                 self._LOG_NAME, block.name)
            return
        self._add_forward_hook(block)

    def _add_forward_hook(self, block):
        # On only in steps that save something (FrameworkHook._add_tensor_hooks).
        self._add_tensor_hooks(lambda: [block.register_forward_hook(self._forward_hook).detach])
        self.registered_blocks.add(block)

    def register_hook(self, block):
        """``register_block`` (the name the original's framework patches call)."""
        self.register_block(block)

    # -- the callbacks -------------------------------------------------------------------

    @guarded()
    def _forward_pre_hook(self, block, inputs):
        """Ends the open step (its gradients), starts the next one and saves the parameters
        this forward is about to use."""
        if self._closed:
            return
        self._end_step()
        due = self._start_step()
        self._started = True
        self._root = block
        self.last_block = block
        self._step_mode = self.mode
        if not due:
            return
        for p in self._params_of(block):
            self._offer_param(p)

    def _params_of(self, block):
        # Gluon makes a block's Parameter objects with the block (deferred initialisation
        # fills them in later), so the list is taken at its first forward: walking the
        # children with collect_params() at every step cost more than the rest of the hook.
        params = self._params.get(block)
        if params is None:
            params = self._params[block] = list(block.collect_params().values())
        return params

    def _offer_param(self, p):
        if not self._native.should_save_tensor(p.name):
            return
        self._saving = p.name  # named in the log if reading it fails
        try:
            value = p.data(p.list_ctx()[0])
        except DeferredInitializationError:
            self._saving = None
            self._deferred.append(p)  # shapes known after this forward: saved then
            return
        except RuntimeError as e:  # not initialised: skipped, as the original
            self._saving = None
            get_logger().warning("%s: could not save parameter %s (%s)", self._LOG_NAME,
                                 p.name, e)
            return
        self._save(p.name, value)

    def _offer(self, name, tensor):
        # A block's input or output that is due: a copy to the host is queued on MXNet's
        # engine (after what computes the tensor, before anything that writes it later) and
        # read when the step ends. Reading the tensor now would make the training thread
        # wait, in the middle of the step, for the forward pass computing it.
        if self._native.should_save_tensor(name):
            self._saving = name  # named in the log if queueing the copy fails
            with mx.autograd.pause():
                self._copies.append((name, tensor.copyto(mx.cpu())))
            self._saving = None

    def _end_step(self):
        # The block tensors copied during the open step, and the gradients of its backward,
        # while the native hook is still at it.
        copies, self._copies = self._copies, []
        for name, copy in copies:
            self._save(name, copy)
        root, self._root = self._root, None
        self._deferred = []
        if root is None or not self._due or self._step_mode in _NO_GRADIENT_MODES:
            return
        native = self._native
        for p in self._params_of(root):
            if p.grad_req == "null":
                continue
            name = GRADIENT_PREFIX + p.name
            if not native.should_save_tensor(name):
                continue
            self._saving = name  # named in the log if reading it fails
            try:
                grad = p.grad(p.list_ctx()[0])
            except RuntimeError as e:
                self._saving = None
                get_logger().warning("%s: could not save the gradient of %s (%s)",
                                     self._LOG_NAME, p.name, e)
                continue
            self._save(name, grad)

    @guarded()
    def _forward_hook(self, block, inputs, outputs):
        """Saves a block's inputs and outputs that are due at this step."""
        if not self._started or self._closed:
            return
        if self._deferred and block is self._root:
            deferred, self._deferred = self._deferred, []
            for p in deferred:
                self._offer_param(p)
        name = block.name
        self._write_all(name, INPUT_TENSOR_SUFFIX, inputs)
        self._write_all(name, OUTPUT_TENSOR_SUFFIX, outputs)

    def _save(self, name, value):
        # Only called for names due at this step: the device → host copy happens here.
        self._saving = name  # named in the log if converting or saving fails
        self._native.save(name, to_numpy(value))
        self._saving = None

    # -- calls from the training script --------------------------------------------------

    @guarded()
    def save_tensor(self, tensor_name, tensor_value, collections_to_write="default"):
        """A custom tensor: added to the collection (the last one of a list) and written
        raw at the end of the step in which it was given, if that step saves anything (the
        value is copied now). A value numpy cannot take is logged and skipped, as the
        original."""
        if self._closed:
            return
        value = to_numpy(tensor_value)
        if value.dtype == object:
            get_logger().warning("%s: the value of %s could not be converted into a numpy "
                                 "value", self._LOG_NAME, tensor_name)
            return
        self._native.save_tensor(tensor_name, value, collections_to_write)


def _close_at_exit(ref):
    hook = ref()
    if hook is not None and hook._native is not None and not hook._closed:
        hook.close()
