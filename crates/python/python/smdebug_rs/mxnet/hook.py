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
  positional inputs and its output (tuples and lists walked in order); for the registered
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

Only what is due leaves the device: ``asnumpy()`` runs only after
``should_save_tensor(name)`` said a collection of it is due at this step.

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import atexit
import json
import weakref

import mxnet as mx
from mxnet.gluon.parameter import DeferredInitializationError

from smdebug_rs import modes
from smdebug_rs.core.collection import CollectionKeys
from smdebug_rs.core.faults import fail, guarded
from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.reduction_config import ReductionConfig  # noqa: F401 (re-exported)
from smdebug_rs.core.save_config import SaveConfig  # noqa: F401 (re-exported)
from smdebug_rs.hook import Hook as _NativeHook
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


def _parse_bool(v):
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("true", "1", "yes", "y", "t")


def included_collections(include_collections=None, include_regex=None, save_all=False):
    """The collections a hook saves, as the original computes them: those given (default
    ``losses``) plus ``losses``, ``default`` with ``include_regex``, ``all`` with
    ``save_all``."""
    if include_collections is None:
        names = list(DEFAULT_INCLUDE_COLLECTIONS)
    elif isinstance(include_collections, str):
        names = [include_collections]
    else:
        names = []
        for c in include_collections:
            names.extend([c] if isinstance(c, str) else list(c))
    out = list(dict.fromkeys(names + DEFAULT_INCLUDE_COLLECTIONS))
    if include_regex and CollectionKeys.DEFAULT not in out:
        out.append(CollectionKeys.DEFAULT)
    if save_all and CollectionKeys.ALL not in out:
        out.append(CollectionKeys.ALL)
    return out


def _json_included_collections(path):
    """``included_collections`` of a SageMaker JSON configuration (its
    ``CollectionConfigurations`` names, ``HookParameters.include_regex`` / ``save_all``)."""
    with open(path) as f:
        d = json.load(f)
    params = d.get("HookParameters") or {}
    configs = d.get("CollectionConfigurations")
    names = None
    if configs is not None:
        names = [c["CollectionName"] for c in configs if "CollectionName" in c]
    return included_collections(names, params.get("include_regex"),
                                _parse_bool(params.get("save_all", False)))


class Hook:
    """smdebug's MXNet hook: ``Hook(out_dir=None, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one")``,
    the original's arguments and defaults (only ``losses`` saved, every 500 steps, unless
    told otherwise). The collections, regexes and reductions are MXNet's
    (``smdebug_rs.Hook(framework="mxnet")``). See the module docstring for names and
    semantics."""

    _LOG_NAME = "smdebug_rs.mxnet"

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None,
                 dry_run=False, reduction_config=None, save_config=None, include_regex=None,
                 include_collections=None, save_all=False, include_workers="one", *,
                 _json_file=None):
        self._fault = None
        self._saving = None
        self._native = None
        self._closed = False
        self._started = False
        self._written = {}
        self._handles = []
        self._root = None        # the block whose forward started the open step
        self._step_mode = modes.GLOBAL
        self._deferred = []      # its parameters not initialised when the step started
        self.registered_blocks = set()
        self.model = None
        self.last_block = None
        self.out_dir = None if out_dir is None else str(out_dir)
        self.worker = "worker_0"
        self.mode = modes.GLOBAL
        self.include_collections = included_collections(include_collections, include_regex,
                                                        save_all)
        self._build(out_dir, export_tensorboard, tensorboard_dir, dry_run, reduction_config,
                    save_config, include_regex, include_collections, save_all,
                    include_workers, _json_file)
        singleton_utils.set_hook(self)
        # As the original's _cleanup at exit: the last step's gradients, then the trial's end.
        atexit.register(_close_at_exit, weakref.ref(self))

    @guarded()
    def _build(self, out_dir, export_tensorboard, tensorboard_dir, dry_run, reduction_config,
               save_config, include_regex, include_collections, save_all, include_workers,
               json_file):
        worker, num_workers = mxnet_worker()
        if json_file is not None:
            self.include_collections = _json_included_collections(json_file[0])
            native = _NativeHook.create_from_json_file(
                json_file[0], framework="mxnet", worker=worker, num_workers=num_workers)
        else:
            native = _NativeHook(
                out_dir, export_tensorboard=export_tensorboard,
                tensorboard_dir=tensorboard_dir, dry_run=dry_run,
                reduction_config=reduction_config, save_config=save_config,
                include_regex=include_regex, include_collections=include_collections,
                save_all=save_all, include_workers=include_workers, framework="mxnet",
                worker=worker, num_workers=num_workers)
        self._native = native
        self.out_dir = native.out_dir
        self.worker = native.worker

    @classmethod
    def create_from_json_file(cls, json_file_path=None):
        """The hook of a SageMaker job, from ``json_file_path``, else
        ``$SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``.
        ``FileNotFoundError`` if there is no such file (``get_hook`` relies on it); any other
        problem with it is a fault (logged once, the hook off)."""
        path = singleton_utils.json_config_path(json_file_path)
        if path is None:
            raise FileNotFoundError(
                f"no hook configuration: {json_file_path or 'SMDEBUG_CONFIG_FILE_PATH'} "
                "names no file and /opt/ml/input/config/debughookconfig.json is absent")
        return cls(_json_file=(path,))

    # -- state ---------------------------------------------------------------------------

    @property
    def enabled(self):
        """False once closed or switched off by a fault."""
        return self._native is not None and not self._closed

    @property
    def fault(self):
        """The first failure (``.where``, ``.error``) that switched the hook off, or None."""
        return self._fault

    @property
    def step(self):
        """The global step (-1 before the first forward of a registered block)."""
        native = self._native
        if native is None or native.closed:
            return -1
        return native.step_num

    @property
    def dry_run(self):
        return self._native is not None and self._native.dry_run

    # -- collections ---------------------------------------------------------------------

    def get_collection(self, name, create=True):
        """Collection ``name`` (created if missing), a :class:`Collection`. Change it
        before the first step. With the hook off, a detached collection."""
        if self._native is not None:
            try:
                return Collection._adopt(self._native.get_collection(name))
            except Exception as e:  # noqa: BLE001 - the fault policy
                fail(self, "get_collection", e)
        return Collection(name)

    def get_collections(self):
        """``{name: Collection}`` of the collections touched through this hook."""
        if self._native is None:
            return {}
        return {k: Collection._adopt(c) for k, c in self._native._collections.items()}

    @guarded()
    def add_collection(self, collection):
        """Adds (or replaces) a collection object (before the first step)."""
        self._native.add_collection(Collection._adopt(collection))

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
            self._handles.append(block.register_forward_hook(self._forward_hook))
            self.registered_blocks.add(block)
            return
        self.model = block
        recursive = self._is_recursive_needed()
        self._handles.append(block.register_forward_pre_hook(self._forward_pre_hook))
        if recursive:
            block.apply(self._recursive_apply)
        else:
            self._handles.append(block.register_forward_hook(self._forward_hook))
            self.registered_blocks.add(block)

    def _recursive_apply(self, block):
        if block in self.registered_blocks:
            get_logger().warning("%s: the hook is already registered to block %s",
                                 self._LOG_NAME, block.name)
            return
        self._handles.append(block.register_forward_hook(self._forward_hook))
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
        self._native.step()
        self._started = True
        self._written.clear()
        self._root = block
        self.last_block = block
        self._step_mode = self.mode
        self._deferred = []
        for p in block.collect_params().values():
            self._offer_param(p)

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

    def _end_step(self):
        # The gradients of the open step's backward, while the native hook is still at it.
        root, self._root = self._root, None
        self._deferred = []
        if root is None or self._step_mode in _NO_GRADIENT_MODES:
            return
        native = self._native
        for p in root.collect_params().values():
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

    def _write_all(self, name, suffix, value):
        key = name + suffix
        self._written[key] = self._write(key, value, self._written.get(key, 0))

    def _write(self, prefix, value, idx):
        # The original's CallbackHook._write: NDArrays take the next index; tuples and lists
        # are walked in order; anything else is passed over.
        if is_ndarray(value):
            name = prefix + str(idx)
            if self._native.should_save_tensor(name):
                self._save(name, value)
            return idx + 1
        if isinstance(value, (tuple, list)):
            for v in value:
                idx = self._write(prefix, v, idx)
        return idx

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

    @guarded()
    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        """``scalar/<name>``: a number or a one-element NDArray (its dtype and shape kept)."""
        if self._closed:
            return
        if is_ndarray(value):
            value = to_numpy(value)
        self._native.save_scalar(name, value, sm_metric, timestamp)

    @guarded()
    def set_mode(self, mode):
        """``smd.modes.TRAIN`` / ``EVAL`` / ``PREDICT`` / ``GLOBAL`` for the next steps. A
        change of mode ends the open step's gradients first (saved in the mode they were
        computed in)."""
        if self._closed:
            return
        if mode != self.mode and self._started:
            self._end_step()
        self._native.set_mode(mode)
        self.mode = mode

    @guarded(default=False)
    def should_stop(self):
        """True once a rule (or a person) put the stop signal into the trial."""
        return not self._closed and self._native.should_stop()

    @guarded()
    def flush(self):
        """Waits until everything given so far is written."""
        if not self._closed:
            self._native.flush()

    @guarded()
    def close(self):
        """Ends the trial (the last step's gradients, the step published, collections file,
        end marker) and detaches the hook's block hooks. A second call does nothing."""
        if self._closed:
            return
        if self._started:
            self._end_step()
        self._closed = True
        for h in self._handles:
            h.detach()
        self._handles.clear()
        self._native.close()

    def __repr__(self):
        state = "on" if self.enabled else ("off: " + repr(self._fault) if self._fault
                                           else "closed")
        return f"<smdebug_rs.mxnet.Hook out_dir={self.out_dir!r} worker={self.worker} {state}>"


def _close_at_exit(ref):
    hook = ref()
    if hook is not None and hook._native is not None and not hook._closed:
        hook.close()
