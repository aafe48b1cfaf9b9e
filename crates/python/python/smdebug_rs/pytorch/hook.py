"""``smdebug_rs.pytorch.Hook``: smdebug's PyTorch module hook, writing through the Rust hook.

    import smdebug_rs.pytorch as smd

    hook = smd.Hook(out_dir="/tmp/run", save_config=smd.SaveConfig(save_interval=100),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)          # a forward pre-hook on model starts each step
    hook.register_loss(criterion)        # an nn.modules.loss._Loss
    for x, y in loader:
        loss = criterion(model(x), y)    # weights, inputs/outputs, the loss are saved here
        loss.backward()                  # gradients are saved here
        opt.step()
    hook.close()

What is saved under which name (as smdebug 1.0.34's PyTorch hook names it; ``<Root>`` is
the registered module's class name, ``module._get_name()``):

* ``<Root>_<param>`` — each parameter of the registered module (``named_parameters()``,
  frozen ones too), saved when the root module's forward starts: **the values step s's
  forward uses**, before the optimizer changes them.
* ``gradient/<Root>_<param>`` — the gradient of each parameter that requires grad when
  ``register_module`` runs, from a tensor hook during ``backward()``: **the gradients of
  step s's loss** (per backward call; on TRAIN/GLOBAL steps only, as the original).
* ``<module>_input_<n>`` / ``<module>_output_<n>`` — the tensors among a module's
  positional inputs and its output (tuples and lists walked in order; other objects are
  passed over), ``<module>`` its ``named_modules()`` name, the root its class name. A module
  called again in the same step continues the count (``relu_output_0``, ``relu_output_1``).
* ``<LossClass>_output_0`` (and ``_input_<n>``) of a registered loss module: **the loss
  computed at step s**.
* ``<name>_output_<n>`` from ``record_tensor_value(name, tensor)``; ``save_tensor`` and
  ``save_scalar`` as ``smdebug_rs.Hook`` has them.

Steps: each forward call of a registered root module starts the next step (the native
``_step()``: the previous step's files are published). Only what is due leaves the device:
a tensor is detached, copied to the CPU and turned into numpy only after
``should_save_tensor(name)`` said a collection of it is due at this step.

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import torch

from smdebug_rs.core.faults import fail, guarded
from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.reduction_config import ReductionConfig  # noqa: F401 (re-exported)
from smdebug_rs.core.save_config import SaveConfig  # noqa: F401 (re-exported)
from smdebug_rs.hook import Hook as _NativeHook
from smdebug_rs.hook import worker_from_env
from smdebug_rs.pytorch import singleton_utils
from smdebug_rs.pytorch.collection import Collection
from smdebug_rs.pytorch.convert import is_tensor, to_numpy

__all__ = ["Hook", "torch_worker"]

INPUT_TENSOR_SUFFIX = "_input_"
OUTPUT_TENSOR_SUFFIX = "_output_"
GRADIENT_PREFIX = "gradient/"


def torch_worker():
    """``(worker name, number of workers)``: ``worker_<rank>`` and the world size of an
    initialised ``torch.distributed`` process group (as the original's hook asks
    ``dist.get_rank()``), else from the launcher's environment
    (:func:`smdebug_rs.hook.worker_from_env`)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return f"worker_{dist.get_rank()}", dist.get_world_size()
    return worker_from_env()


class Hook:
    """smdebug's PyTorch hook: ``Hook(out_dir=None, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one")``,
    the original's arguments and defaults (only ``losses`` saved, every 500 steps, unless
    told otherwise). The collections, regexes and reductions are PyTorch's
    (``smdebug_rs.Hook(framework="pytorch")``). See the module docstring for names and
    semantics."""

    _LOG_NAME = "smdebug_rs.pytorch"

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
        self._roots = []
        self.module_set = set()
        self.has_registered_module = False
        self.has_registered_loss_module = False
        self.out_dir = None if out_dir is None else str(out_dir)
        self.worker = "worker_0"
        self.mode = None
        self._build(out_dir, export_tensorboard, tensorboard_dir, dry_run, reduction_config,
                    save_config, include_regex, include_collections, save_all,
                    include_workers, _json_file)
        singleton_utils.set_hook(self)

    @guarded()
    def _build(self, out_dir, export_tensorboard, tensorboard_dir, dry_run, reduction_config,
               save_config, include_regex, include_collections, save_all, include_workers,
               json_file):
        worker, num_workers = torch_worker()
        if json_file is not None:
            native = _NativeHook.create_from_json_file(
                json_file[0], framework="pytorch", worker=worker, num_workers=num_workers)
        else:
            native = _NativeHook(
                out_dir, export_tensorboard=export_tensorboard,
                tensorboard_dir=tensorboard_dir, dry_run=dry_run,
                reduction_config=reduction_config, save_config=save_config,
                include_regex=include_regex, include_collections=include_collections,
                save_all=save_all, include_workers=include_workers, framework="pytorch",
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
        """The global step (-1 before the first forward of a registered module)."""
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
        if not isinstance(collection, Collection):
            collection = Collection._adopt(collection)
        self._native.add_collection(collection)

    def _prepare_collections(self):
        # The modules given to Collection.add_module_tensors become regexes now that they
        # are named (the original's _prepare_collections).
        for c in self._native._collections.values():
            if isinstance(c, Collection):
                for r in c._module_regexes():
                    if r not in c.include_regex:
                        c.include(r)

    # -- registering ---------------------------------------------------------------------

    @guarded()
    def register_module(self, module):
        """Registers ``module`` (the model): a forward pre-hook on it starts each step and
        saves its parameters; forward hooks on it and every submodule save inputs and
        outputs; tensor hooks on its parameters that require grad save gradients. A module
        registered again is left as it is (a warning)."""
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"Module type {module.__class__.__name__} must be type "
                            "torch.nn.Module")
        if any(r is module for r in self._roots):
            get_logger().warning("smdebug_rs.pytorch: %s is registered already",
                                 module._get_name())
            return
        for name, sub in module.named_modules():
            sub._module_name = name
            self.module_set.add(sub)
        root = module._get_name()
        module._module_name = root
        self._roots.append(module)
        self._handles.append(module.register_forward_pre_hook(self._forward_pre_hook))
        # `apply` visits the root and every submodule, as the original registers them.
        module.apply(lambda m: self._handles.append(m.register_forward_hook(self._forward_hook)))
        for name, p in module.named_parameters():
            if p.requires_grad:
                self._handles.append(p.register_hook(self._gradient_hook(root + "_" + name)))
        self.has_registered_module = True

    def register_hook(self, module):
        """``register_module`` (the name the original's framework patches call)."""
        self.register_module(module)

    @guarded()
    def register_loss(self, loss_module):
        """Registers a loss module (``torch.nn.modules.loss._Loss``): its output is saved as
        ``<LossClass>_output_0``, the losses collection's name."""
        if not isinstance(loss_module, torch.nn.modules.loss._Loss):
            raise TypeError(f"loss_module={loss_module} must be subclass of "
                            "`torch.nn.modules.loss._Loss`")
        if loss_module in self.module_set:
            return
        loss_module._module_name = loss_module._get_name()
        self.module_set.add(loss_module)
        self._handles.append(loss_module.register_forward_hook(self._forward_hook))
        self.has_registered_loss_module = True

    # -- the callbacks -------------------------------------------------------------------

    @guarded()
    def _forward_pre_hook(self, module, inputs):
        """Starts the next step and saves the parameters step s's forward is about to use."""
        if self._closed:
            return
        native = self._native
        if not self._started:
            self._prepare_collections()
            self._started = True
        native.step()
        self._written.clear()
        root = module._module_name
        for name, p in module.named_parameters():
            self._offer(root + "_" + name, p)

    @guarded()
    def _forward_hook(self, module, inputs, outputs):
        """Saves a module's inputs and outputs that are due at this step."""
        if not self._started or self._closed:
            return
        name = module._module_name
        self._write_all(name, INPUT_TENSOR_SUFFIX, inputs)
        self._write_all(name, OUTPUT_TENSOR_SUFFIX, outputs)

    def _gradient_hook(self, pname):
        name = GRADIENT_PREFIX + pname

        def back(grad):
            self._on_gradient(name, grad)

        return back

    @guarded()
    def _on_gradient(self, name, grad):
        """Saves a parameter's gradient when due (TRAIN and GLOBAL steps)."""
        if not self._started or self._closed or grad is None:
            return
        self._offer(name, grad)

    def _offer(self, name, tensor):
        # The conversion (and any device → host copy) happens only when the name is due.
        native = self._native
        if native.should_save_tensor(name):
            self._saving = name  # named in the log if converting or saving fails
            native.save(name, to_numpy(tensor))
            self._saving = None

    def _write_all(self, name, suffix, value):
        key = name + suffix
        self._written[key] = self._write(name + suffix, value, self._written.get(key, 0))

    def _write(self, prefix, value, idx):
        # The original's CallbackHook._write: tensors take the next index; tuples and lists
        # are walked in order; anything else is passed over.
        if is_tensor(value):
            self._offer(prefix + str(idx), value)
            return idx + 1
        if isinstance(value, (tuple, list)):
            for v in value:
                idx = self._write(prefix, v, idx)
        return idx

    # -- calls from the training script --------------------------------------------------

    @guarded()
    def record_tensor_value(self, tensor_name, tensor_value):
        """Saves a tensor computed outside modules (``F.mse_loss(...)``) as
        ``<tensor_name>_output_<n>``, when a collection of that name is due."""
        if not isinstance(tensor_value, torch.Tensor):
            raise TypeError(f"tensor_value={tensor_value!r} must be torch.Tensor")
        if not self._started or self._closed:
            return
        self._write_all(tensor_name, OUTPUT_TENSOR_SUFFIX, tensor_value)

    @guarded()
    def save_tensor(self, tensor_name, tensor_value, collections_to_write="default"):
        """The original's custom tensor: added to the collection (the last one of a list)
        and written raw at the end of the step in which it was given, if that step saves
        anything (the value is copied now)."""
        if self._closed:
            return
        self._native.save_tensor(tensor_name, to_numpy(tensor_value), collections_to_write)

    @guarded()
    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        """``scalar/<name>``: a number or a one-element tensor (its dtype and shape kept)."""
        if self._closed:
            return
        if isinstance(value, torch.Tensor):
            value = to_numpy(value)
        self._native.save_scalar(name, value, sm_metric, timestamp)

    @guarded()
    def set_mode(self, mode):
        """``smd.modes.TRAIN`` / ``EVAL`` / ``PREDICT`` / ``GLOBAL`` for the next steps."""
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
        """Ends the trial (last step published, collections file, end marker) and removes
        the hook's module and tensor hooks. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._native.close()

    def __repr__(self):
        state = "on" if self.enabled else ("off: " + repr(self._fault) if self._fault
                                           else "closed")
        return f"<smdebug_rs.pytorch.Hook out_dir={self.out_dir!r} worker={self.worker} {state}>"
