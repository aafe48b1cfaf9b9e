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
``_step()``: the previous step's files are published) and asks once whether anything can
be saved in it (``anything_due()``: any collection due in the step's mode). On a step where
nothing is due the modules carry no forward hook of ours and the parameters no gradient
hook (they are attached for the steps that save: see :mod:`smdebug_rs.core.framework_hook`):
no tensor is touched, no name is built, the parameters are not walked. Only what is due
leaves the device: a tensor is detached, copied to the CPU and turned into numpy only after
``should_save_tensor(name)`` said a collection of it is due at this step. The parameter
list of a root module is kept between steps (:class:`~smdebug_rs.pytorch.params.ModuleParams`:
walked again when the module tree changed).

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import torch

from smdebug_rs.core.faults import guarded
from smdebug_rs.core.framework_hook import FrameworkHook
from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.reduction_config import ReductionConfig  # noqa: F401 (re-exported)
from smdebug_rs.core.save_config import SaveConfig  # noqa: F401 (re-exported)
from smdebug_rs.hook import worker_from_env
from smdebug_rs.pytorch import singleton_utils
from smdebug_rs.pytorch.collection import Collection
from smdebug_rs.pytorch.convert import is_tensor, to_numpy
from smdebug_rs.pytorch.params import ModuleParams

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


class Hook(FrameworkHook):
    """smdebug's PyTorch hook, with the original's constructor (:class:`FrameworkHook`).
    The collections, regexes and reductions are PyTorch's
    (``smdebug_rs.Hook(framework="pytorch")``). See the module docstring for names and
    semantics."""

    FRAMEWORK = "pytorch"
    _LOG_NAME = "smdebug_rs.pytorch"
    _COLLECTION = Collection

    def _framework_init(self, include_collections, include_regex, save_all):
        self._roots = []
        self._params = {}        # root module → its ModuleParams
        self.module_set = set()
        self.has_registered_module = False
        self.has_registered_loss_module = False
        self.mode = None

    # Module-level names looked up at each call (tests count conversions by replacing them).
    @staticmethod
    def _framework_worker():
        return torch_worker()

    @staticmethod
    def _framework_singleton():
        return singleton_utils

    @staticmethod
    def _framework_is_tensor(value):
        return is_tensor(value)

    @staticmethod
    def _framework_to_numpy(value):
        return to_numpy(value)

    def _framework_detach(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._params.clear()

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
        self._params[module] = ModuleParams(module)
        self._handles.append(module.register_forward_pre_hook(self._forward_pre_hook))
        # The modules and parameters of now, as the original registers them (`apply`
        # visits every submodule, then the root); their callbacks are on only in steps
        # that save something.
        modules = []
        module.apply(modules.append)
        grads = [(GRADIENT_PREFIX + pname, p)
                 for pname, p in self._params[module].items(root) if p.requires_grad]

        def attach():
            removers = [m.register_forward_hook(self._forward_hook).remove for m in modules]
            removers += [p.register_hook(self._gradient_hook(name)).remove
                         for name, p in grads if p.requires_grad]
            return removers

        self._add_tensor_hooks(attach)
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
        self._add_tensor_hooks(
            lambda: [loss_module.register_forward_hook(self._forward_hook).remove])
        self.has_registered_loss_module = True

    # -- the callbacks -------------------------------------------------------------------

    @guarded()
    def _forward_pre_hook(self, module, inputs):
        """Starts the next step and saves the parameters step s's forward is about to use."""
        if self._closed:
            return
        if not self._started:
            self._prepare_collections()
            self._started = True
        if not self._start_step():
            return
        for name, p in self._params[module].items(module._module_name):
            self._offer(name, p)

    @guarded()
    def _forward_hook(self, module, inputs, outputs):
        """Saves a module's inputs and outputs that are due at this step."""
        if not self._started or self._closed:
            return
        name = module._module_name
        self._write_all(name, INPUT_TENSOR_SUFFIX, inputs)
        self._write_all(name, OUTPUT_TENSOR_SUFFIX, outputs)

    def _gradient_hook(self, name):
        def back(grad):
            if self._due:
                self._on_gradient(name, grad)

        return back

    @guarded()
    def _on_gradient(self, name, grad):
        """Saves a parameter's gradient when due (TRAIN and GLOBAL steps)."""
        if not self._started or self._closed or grad is None:
            return
        self._offer(name, grad)

    # -- calls from the training script --------------------------------------------------

    @guarded()
    def record_tensor_value(self, tensor_name, tensor_value):
        """Saves a tensor computed outside modules (``F.mse_loss(...)``) as
        ``<tensor_name>_output_<n>``, when a collection of that name is due."""
        if not isinstance(tensor_value, torch.Tensor):
            raise TypeError(f"tensor_value={tensor_value!r} must be torch.Tensor")
        if not self._due or not self._started or self._closed:
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
