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

Wrapped and compiled models (:mod:`smdebug_rs.pytorch.wrappers`,
:mod:`smdebug_rs.pytorch.compiled`): ``register_module`` takes what the script calls —
``torch.compile(model)``, a model whose ``compile()`` was called (before or after
registering), ``DistributedDataParallel``, ``DataParallel``, FSDP — and names the tensors
after the model inside, as an unwrapped run names them. For a compiled model the callbacks
stay registered from the first step on and save nothing inside the compiled region.

Sharded models (FSDP2's ``fully_shard``): a parameter or gradient held as a ``DTensor`` is
saved whole (``full_tensor()``, an all-gather) at the steps that save it, so its
reductions are those of the full tensor. Every rank must then take part in each gather,
which each rank's hook does when every worker writes (``include_workers="all"``); with
``"one"`` the ranks that do not write cannot know which steps save, so sharded tensors are
not saved (a warning, once). Plain tensor hooks do not fire on sharded parameters: their
gradients come from ``register_post_accumulate_grad_hook`` and are gathered, in
registration order on every rank, when the step ends (the next forward, a mode change or
close), never inside the backward pass.

One step per optimizer step (:meth:`Hook.register_optimizer`): for gradient accumulation
and trainers, in TRAIN (and GLOBAL) mode a step starts at the first forward after an
optimizer step, and the gradients saved are each parameter's accumulated ``.grad`` when
the optimizer steps; the default stays the original's one step per forward.

Mixed precision (:mod:`smdebug_rs.pytorch.amp`): gradients of a loss scaled by a
``torch.amp.GradScaler`` are saved unscaled.

Faults never break training: see :mod:`smdebug_rs.core.faults`.
"""

import json

import torch

from smdebug_rs.core.faults import guarded
from smdebug_rs.core.framework_hook import FrameworkHook
from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.reduction_config import ReductionConfig  # noqa: F401 (re-exported)
from smdebug_rs.core.save_config import SaveConfig  # noqa: F401 (re-exported)
from smdebug_rs.hook import worker_from_env
from smdebug_rs.core.modes import ModeKeys
from smdebug_rs.core.include import included_collections, json_included_collections
from smdebug_rs.pytorch import amp, compiled, signals, singleton_utils
from smdebug_rs.pytorch.collection import Collection
from smdebug_rs.pytorch.convert import is_dtensor, is_tensor, to_numpy
from smdebug_rs.pytorch.params import ModuleParams
from smdebug_rs.pytorch.wrappers import is_optimized_module, root_name, unwrap

__all__ = ["Hook", "torch_worker"]

INPUT_TENSOR_SUFFIX = "_input_"
OUTPUT_TENSOR_SUFFIX = "_output_"
GRADIENT_PREFIX = "gradient/"


def world_size():
    """The number of processes of the initialised ``torch.distributed`` group (1 without
    one)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


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
        self._entries = {}       # root module → what takes its step callbacks off
        self._grads = {}         # root module → [(saved name, parameter)] with gradients
        self._pending = []       # (module name, inputs, outputs) from compiled code
        self._optimizers = []    # registered optimizers (one step per optimizer step)
        self._update_open = False  # with optimizers: a TRAIN step has begun
        self._sharded_grads = {}   # saved name → sharded gradient of this step (FSDP2)
        self._gathers = False      # sharded tensors are gathered (_framework_built)
        self._warned_sharded = False
        # The transformer summaries asked for (smdebug_rs.pytorch.signals).
        self._signals = set(included_collections(include_collections, include_regex,
                                                 save_all)) & set(signals.REGEXES)
        self._attention_pending = []  # attention_stats of this forward's calls
        self._attention_saved = False
        self._root_names = set()
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

    def _framework_built(self):
        amp.install()
        native = self._native
        for name in sorted(self._signals):
            collection = self.get_collection(name)
            if not collection.include_regex:
                collection.include(signals.REGEXES[name])
        if signals.OPTIMIZER_VARIABLES in self._signals:
            signals.keep_out_of_weights(self)
        if signals.ATTENTION in self._signals:
            signals.watch_attention(self)
        if native is not None:
            # A sharded tensor is gathered only where every rank's hook writes, so that
            # every rank takes part in each gather.
            self._gathers = self._include_workers == "all" or world_size() == 1

    def _framework_json_config(self, path):
        with open(path) as f:
            params = json.load(f).get("HookParameters", {})
        self._include_workers = str(params.get("include_workers", "one")).lower()
        self._signals = set(json_included_collections(path)) & set(signals.REGEXES)

    def _framework_end_step(self):
        self._save_attention()
        self._flush_sharded_grads()

    def _offer(self, name, tensor):
        if is_dtensor(tensor) and not self._gathers:
            if not self._warned_sharded and self._native.should_save_tensor(name):
                self._warned_sharded = True
                get_logger().warning(
                    "smdebug_rs.pytorch: %s is sharded (FSDP2): sharded tensors are saved "
                    "only with include_workers='all', where every rank takes part in "
                    "gathering them; not saved", name)
            return
        super()._offer(name, tensor)

    def _framework_detach(self):
        signals.unwatch_attention(self)
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for removers in self._entries.values():
            for remove in removers:
                remove()
        self._entries.clear()
        self._params.clear()
        self._pending.clear()

    def _prepare_collections(self):
        # The modules given to Collection.add_module_tensors become regexes now that they
        # are named (the original's _prepare_collections).
        for c in self._native._collections.values():
            if isinstance(c, Collection):
                for r in c._module_regexes():
                    if r not in c.include_regex:
                        c.include(r)

    # -- registering ---------------------------------------------------------------------

    def count_parameters(self, model):
        """The number of trainable parameters of ``model``, each parameter's count logged
        at INFO (the original's helper)."""
        total = 0
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                get_logger().info(f"name:{name} count_params:{parameter.numel()}")
                total += parameter.numel()
        get_logger().info(f"Total Trainable Params: {total}")
        return total

    @guarded()
    def register_module(self, module):
        """Registers ``module`` (the model, or what wraps it: a compiled, DDP or FSDP model):
        callbacks around its forward start each step and save its parameters; forward hooks
        on it and every submodule save inputs and outputs; tensor hooks on its parameters
        that require grad save gradients. A module registered again is left as it is (a
        warning)."""
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"Module type {module.__class__.__name__} must be type "
                            "torch.nn.Module")
        inner = unwrap(module)
        if any(r is inner for r in self._roots):
            get_logger().warning("smdebug_rs.pytorch: %s is registered already",
                                 root_name(inner))
            return
        for name, sub in inner.named_modules():
            sub._module_name = name
            self.module_set.add(sub)
        root = root_name(inner)
        inner._module_name = root
        self._root_names.add(root)
        self._roots.append(inner)
        self._params[inner] = ModuleParams(inner)
        self._entries[inner] = self._attach_entry(inner, module)
        # The modules and parameters of now, as the original registers them (`apply`
        # visits every submodule, then the root); their callbacks are on only in steps
        # that save something, or from now on for a compiled model.
        modules = []
        inner.apply(modules.append)
        grads = [(GRADIENT_PREFIX + pname, p)
                 for pname, p in self._params[inner].items(root) if p.requires_grad]
        self._grads[inner] = grads

        def attach():
            removers = [m.register_forward_hook(self._module_forward).remove for m in modules]
            removers += [self._register_gradient_hook(name, p).remove
                         for name, p in grads if p.requires_grad]
            return removers

        self._add_tensor_hooks(attach)
        self.has_registered_module = True
        compiled.track(self)
        if compiled.is_compiled(module) or compiled.is_compiled(inner):
            self._keep_tensor_hooks()

    def _attach_entry(self, inner, entry):
        """Registers the callbacks that start each step of root ``inner`` (and, for a
        compiled model, save what its forward captured) on ``entry`` (what the script
        calls): around the compiled call of a module whose ``compile()`` ran, else as
        ``entry``'s forward pre-hook (and forward hook, for an ``OptimizedModule``: both
        outside the compiled region). Returns their removers."""
        call = getattr(entry, "_compiled_call_impl", None)
        if call is not None and not is_optimized_module(entry):
            def around(*args, **kwargs):
                self._forward_pre_hook(inner, args)
                try:
                    return call(*args, **kwargs)
                finally:
                    self._forward_end(inner)

            entry._compiled_call_impl = around

            def remove():
                if entry._compiled_call_impl is around:
                    entry._compiled_call_impl = call

            return [remove]
        pre = entry.register_forward_pre_hook(
            lambda _m, inputs: self._forward_pre_hook(inner, inputs))
        if not is_optimized_module(entry):
            # Eager: the forward callbacks save at once, nothing waits for the end (and a
            # forward hook more would slow every call of the root).
            return [pre.remove]
        post = entry.register_forward_hook(lambda _m, _i, _o: self._forward_end(inner))
        return [pre.remove, post.remove]

    @guarded()
    def _on_compiled(self, model, compiled_model):
        """``model`` was compiled (``compiled_model``: ``torch.compile``'s result, or
        ``model`` itself after ``model.compile()``): a root inside it gets its step
        callbacks on the compiled entry point and keeps its tensor callbacks on."""
        if self._closed:
            return
        inner = unwrap(model)
        if not any(r is inner for r in self._roots):
            return
        for remove in self._entries.pop(inner, []):
            remove()
        self._entries[inner] = self._attach_entry(inner, compiled_model)
        self._keep_tensor_hooks()

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
            lambda: [loss_module.register_forward_hook(self._module_forward).remove])
        self.has_registered_loss_module = True

    @guarded()
    def register_optimizer(self, optimizer, step_hooks=True):
        """One step per optimizer step from now on: in TRAIN (and GLOBAL) mode a step
        starts at the first forward after an optimizer step (so every forward and backward
        of an accumulation window belongs to one step), and the gradients saved are each
        registered parameter's ``.grad`` when ``optimizer`` steps (accumulated, unscaled if
        a ``GradScaler`` scaled them) instead of each backward pass's. In EVAL and PREDICT
        steps still start at each forward. Parameters are saved at a step's first forward.

        With ``step_hooks`` (the default) ``optimizer.step()`` drives this through the
        optimizer's step pre- and post-hooks. A trainer whose optimizer steps do not match
        its steps (Lightning runs forward and backward inside ``optimizer.step``; a
        ``GradScaler`` that finds an inf skips ``step()`` while the trainer counts the step)
        passes ``step_hooks=False`` and calls :meth:`save_gradients` before each optimizer
        step and :meth:`end_update` after it, skipped or not."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer={optimizer!r} must be a torch.optim.Optimizer")
        if any(o is optimizer for o in self._optimizers):
            return
        self._optimizers.append(optimizer)
        if step_hooks:
            self._handles.append(optimizer.register_step_pre_hook(
                lambda opt, _args, _kwargs: self.save_gradients(opt)))
            self._handles.append(optimizer.register_step_post_hook(
                lambda _opt, _args, _kwargs: self.end_update()))

    def _per_update(self):
        # Whether this step began at an optimizer step (register_optimizer) in a mode
        # that trains.
        return bool(self._optimizers) and self.mode in (None, ModeKeys.TRAIN,
                                                        ModeKeys.GLOBAL)

    @guarded()
    def save_gradients(self, optimizer):
        """Saves, when due, the accumulated ``.grad`` of each registered parameter that
        ``optimizer`` (registered with :meth:`register_optimizer`) updates, unscaled unless
        ``scaler.unscale_`` ran for it: what the optimizer is about to step with."""
        if not self._due or not self._started or self._closed or not self._per_update():
            return
        owned = {id(p) for group in optimizer.param_groups for p in group["params"]}
        state = signals.OPTIMIZER_VARIABLES in self._signals
        for grads in self._grads.values():
            for name, p in grads:
                if id(p) not in owned:
                    continue
                if p.grad is not None:
                    self._offer(name, amp.unscale_for(p.grad, optimizer))
                if state:
                    param = name[len(GRADIENT_PREFIX):]
                    for key, value in signals.optimizer_variables(optimizer, p, param):
                        self._offer(key, value)

    @guarded()
    def end_update(self):
        """Ends the step of an optimizer update: the next forward in a mode that trains
        starts the next step."""
        self._update_open = False

    # -- the callbacks -------------------------------------------------------------------

    @guarded()
    def _forward_pre_hook(self, module, inputs):
        """Starts the next step (unless one step spans optimizer updates and this forward
        is not the first of one) and saves the parameters step s's forward is about to
        use."""
        if self._closed:
            return
        if not self._started:
            self._prepare_collections()
            self._started = True
        self._save_attention()
        if self._per_update():
            if self._update_open:
                return
            self._update_open = True
        self._flush_sharded_grads()
        self._pending.clear()
        amp.forget()
        self._attention_saved = False
        if not self._start_step():
            return
        for name, p in self._params[module].items(module._module_name):
            self._offer(name, p)

    @guarded()
    def _forward_end(self, module):
        """Saves what the forward callbacks captured inside a compiled region."""
        if not self._pending:
            return
        pending = list(self._pending)
        # Emptied in place: the compiled code appends to this very list.
        self._pending.clear()
        if not self._due or not self._started or self._closed:
            return
        for name, inputs, outputs in pending:
            self._write_all(name, INPUT_TENSOR_SUFFIX, inputs)
            self._write_all(name, OUTPUT_TENSOR_SUFFIX, outputs)
            self._save_output_signals(name, outputs)
        self._save_attention()

    def _module_forward(self, module, inputs, outputs):
        # Traced by dynamo inside a compiled region: there it only reads `_due` and keeps
        # the tensors for `_forward_end` (smdebug_rs.pytorch.compiled).
        if torch.compiler.is_compiling():
            if self._due:
                self._pending.append((module._module_name, inputs, outputs))
            return
        self._forward_hook(module, inputs, outputs)

    @guarded()
    def _forward_hook(self, module, inputs, outputs):
        """Saves a module's inputs and outputs that are due at this step."""
        if not self._due or not self._started or self._closed:
            return
        name = module._module_name
        self._write_all(name, INPUT_TENSOR_SUFFIX, inputs)
        self._write_all(name, OUTPUT_TENSOR_SUFFIX, outputs)
        self._save_output_signals(name, outputs)

    def _save_output_signals(self, name, outputs):
        # The registered model's output: its log-partition, once a step.
        if name not in self._root_names or signals.OUTPUT_LOGITS not in self._signals \
                or signals.LOG_PARTITION in self._written:
            return
        value = signals.log_partition(outputs)
        if value is not None:
            self._written[signals.LOG_PARTITION] = 1
            self._offer(signals.LOG_PARTITION, value)

    def _on_attention(self, query, key, attn_mask, is_causal, scale):
        # Called from every scaled_dot_product_attention (signals.watch_attention), also
        # inside a compiled region: there only torch ops and a list append.
        if torch.compiler.is_compiling():
            if self._due:
                self._attention_pending.append(
                    signals.attention_stats(query, key, attn_mask, is_causal, scale))
            return
        self._attention_call(query, key, attn_mask, is_causal, scale)

    @guarded()
    def _attention_call(self, query, key, attn_mask, is_causal, scale):
        """Keeps the summaries of one attention call of a step that saves, for
        :meth:`_save_attention`."""
        if self._due and self._started and not self._closed:
            self._attention_pending.append(
                signals.attention_stats(query, key, attn_mask, is_causal, scale))

    @guarded()
    def _save_attention(self):
        """Saves the summaries of the attention calls of the step's first forward as
        ``attention_logit_max/<n>`` and ``attention_entropy/<n>``."""
        if not self._attention_pending:
            return
        pending = list(self._attention_pending)
        # Emptied in place: compiled code appends to this very list.
        self._attention_pending.clear()
        if not self._due or self._closed or self._attention_saved:
            return
        self._attention_saved = True
        for n, (logit_max, entropy) in enumerate(pending):
            self._offer(signals.LOGIT_MAX_PREFIX + str(n), logit_max)
            self._offer(signals.ENTROPY_PREFIX + str(n), entropy)

    def _register_gradient_hook(self, name, p):
        if not is_dtensor(p):
            return p.register_hook(self._gradient_hook(name))

        # Tensor hooks never fire on a sharded parameter; its reduced gradient shard is
        # kept and gathered when the step ends (_flush_sharded_grads).
        def accumulated(param):
            if self._due and not self._per_update() and param.grad is not None:
                self._sharded_grads[name] = param.grad

        return p.register_post_accumulate_grad_hook(accumulated)

    def _gradient_hook(self, name):
        def back(grad):
            if self._due and not self._per_update():
                self._on_gradient(name, grad)

        return back

    @guarded()
    def _flush_sharded_grads(self):
        """Saves the sharded gradients kept in this step, gathered in registration order
        (the same on every rank)."""
        kept, self._sharded_grads = self._sharded_grads, {}
        if not kept or not self._due or self._closed:
            return
        for grads in self._grads.values():
            for name, _p in grads:
                if name in kept:
                    self._offer(name, amp.unscale(kept[name]))

    @guarded()
    def _on_gradient(self, name, grad):
        """Saves a parameter's gradient when due (TRAIN and GLOBAL steps), unscaled."""
        if not self._started or self._closed or grad is None:
            return
        self._offer(name, amp.unscale(grad))

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
