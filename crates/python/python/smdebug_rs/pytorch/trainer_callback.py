"""What the trainer callbacks share (``smdebug_rs.lightning.DebuggerCallback``,
``smdebug_rs.huggingface.DebuggerCallback``): one :class:`smdebug_rs.pytorch.Hook`, made
from the hook's constructor arguments, a SageMaker JSON configuration or given ready, that
follows the trainer: its model and optimizers registered, its mode, its loss and its logged
numbers, closed at the end of training.

The hook is made at the callback's first use inside the trainer (not in the callback's
constructor), once the trainer has initialised ``torch.distributed``, so that the process
group names the worker.

Every callback method is ``@guarded`` (:mod:`smdebug_rs.core.faults`): a failure is logged
once (naming the callback method), the hook is closed (the steps written so far form a
finished trial) and every later call returns at once. The training goes on unchanged.
"""

from typing import Any
import numbers

import torch

from smdebug_rs.core.faults import fail
from smdebug_rs.pytorch import singleton_utils
from smdebug_rs.pytorch.hook import Hook

__all__ = ["TrainerHook", "torch_optimizer", "LOSS_NAME"]

#: ``record_tensor_value`` name of the trainer's loss: saved as ``loss_output_<n>``, which the
#: ``losses`` collection (``[Ll]oss_(?!input).*output``) holds.
LOSS_NAME = "loss"


def torch_optimizer(optimizer):
    """The ``torch.optim.Optimizer`` inside a trainer's wrapper (accelerate's
    ``AcceleratedOptimizer``, Lightning's ``LightningOptimizer``: their ``.optimizer``), or
    ``optimizer`` itself. Step hooks registered on a wrapper would never run: the wrappers
    call the inner optimizer's ``step``."""
    seen = 0
    while not _is_plain_optimizer(optimizer) and seen < 4:
        inner = getattr(optimizer, "optimizer", None)
        if inner is None:
            break
        optimizer, seen = inner, seen + 1
    return optimizer


def _is_plain_optimizer(optimizer):
    # A wrapper subclasses Optimizer too (AcceleratedOptimizer) but holds the real one.
    return isinstance(optimizer, torch.optim.Optimizer) and not isinstance(
        getattr(optimizer, "optimizer", None), torch.optim.Optimizer)


class TrainerHook:
    """The hook side of a trainer callback, with the callbacks' constructor: the
    :class:`smdebug_rs.pytorch.Hook` arguments, or a SageMaker JSON configuration
    (``json_file_path``, as ``Hook.create_from_json_file``), or a hook made already. A
    subclass adds the trainer's ``@guarded`` callback methods, which use the ``_follow_*``,
    ``_mode``, ``_save_*`` and ``_close`` helpers.

    The attributes :mod:`smdebug_rs.core.faults` needs: ``_fault``, ``_saving`` and
    ``_native``, which here holds the :class:`smdebug_rs.pytorch.Hook` the callback writes
    through (a fault closes it and drops it)."""

    _LOG_NAME = "smdebug_rs.pytorch"

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None,
                 reduction_config=None, save_config=None, include_regex=None,
                 include_collections=None, save_all=False, include_workers="one", *,
                 json_file_path=None, hook=None):
        super().__init__()  # the trainer's callback class, next in the subclass's MRO
        self._hook_init(hook, json_file_path, dict(
            out_dir=out_dir, export_tensorboard=export_tensorboard,
            tensorboard_dir=tensorboard_dir, reduction_config=reduction_config,
            save_config=save_config, include_regex=include_regex,
            include_collections=include_collections, save_all=save_all,
            include_workers=include_workers))

    def _hook_init(self, hook, json_file_path, hook_args):
        self._fault = None
        self._saving = None
        self._native = hook
        self._made = hook is not None
        self._use_singleton = False
        self._json_file_path = json_file_path
        self._hook_args = hook_args
        self._models = []
        self._optimizers = []
        self._metrics = {}   # name → the last value object saved (a trainer re-logs old ones)

    @classmethod
    def _from_singleton(cls):
        """The callback zero code change adds: it writes through the PyTorch singleton
        (``get_hook(create_if_not_exists=True)``: the script's own hook, else one from the
        JSON configuration), looked up at its first use."""
        callback = cls()
        callback._use_singleton = True
        return callback

    @property
    def hook(self):
        """The :class:`smdebug_rs.pytorch.Hook` this callback follows the trainer with (None
        before the trainer first used the callback, and after a fault)."""
        return self._native

    @property
    def fault(self):
        """The first failure of a callback method (``.where``, ``.error``), or None."""
        return self._fault

    def _hook(self):
        """The hook, made at the first call; None once it is closed or off."""
        if not self._made:
            self._made = True
            if self._use_singleton:
                self._native = singleton_utils.get_hook(create_if_not_exists=True)
            elif self._json_file_path is not None:
                self._native = Hook.create_from_json_file(self._json_file_path)
            else:
                self._native = Hook(**self._hook_args)
        hook = self._native
        if hook is None or not hook.enabled:
            return None
        return hook

    def _follow_model(self, model):
        """Registers ``model`` (the root module: its steps, parameters, gradients, module
        inputs and outputs) and a forward hook saving the loss its output carries, if
        ``_loss_of_output`` finds one (once per model)."""
        hook = self._hook()
        if hook is None or any(m is model for m in self._models):
            return
        self._models.append(model)
        if model not in hook.module_set:
            hook.register_module(model)
        loss_of = self._loss_of_output
        if loss_of is not None:
            def save_output_loss(module, inputs, outputs):
                self._on_model_output(loss_of(outputs))

            model.register_forward_hook(save_output_loss)

    #: ``outputs → loss tensor or None``: how a trainer's model output carries the loss
    #: (None: the callback saves the loss some other way).
    _loss_of_output: Any = None

    def _on_model_output(self, loss):
        # A forward hook of the trainer's model: never raises into torch.
        if loss is None or self._fault is not None:
            return
        try:
            self._save_loss(loss)
        except Exception as e:  # noqa: BLE001 - the fault policy
            fail(self, "the model's forward hook", e)

    def _follow_optimizers(self, optimizers):
        """Registers each torch optimizer (unwrapped, once) with ``Hook.register_optimizer``:
        in TRAIN mode one step is then one optimizer step. Without the optimizer's own step
        hooks (``step_hooks=False``): the callback saves the gradients and ends the step at
        the trainer's own optimizer-step callbacks (:meth:`_before_optimizer_step`,
        :meth:`_after_optimizer_step`), because the optimizer's hooks would run at the
        wrong moments or not at all: Lightning runs the forward and backward passes inside
        ``optimizer.step`` (a closure, after the pre-hooks), and a ``GradScaler`` that finds
        an inf or NaN skips ``optimizer.step`` (no hooks run) while the trainer still counts
        the step (its global step goes on)."""
        hook = self._hook()
        if hook is None:
            return
        for optimizer in optimizers or ():
            optimizer = torch_optimizer(optimizer)
            if any(o is optimizer for o in self._optimizers):
                continue
            self._optimizers.append(optimizer)
            hook.register_optimizer(optimizer, step_hooks=False)

    def _before_optimizer_step(self, optimizer):
        """Saves the gradients ``optimizer`` steps with, when the trainer is about to step
        it."""
        hook = self._hook()
        if hook is not None:
            hook.save_gradients(torch_optimizer(optimizer))

    def _after_optimizer_step(self):
        """Ends the step (the next forward starts the next) once the trainer has made an
        optimizer step, skipped or not."""
        hook = self._hook()
        if hook is not None:
            hook.end_update()

    def _mode(self, mode):
        """Switches the hook to ``mode`` (nothing when it is in it already)."""
        hook = self._hook()
        if hook is not None and hook.mode != mode:
            hook.set_mode(mode)

    def _save_loss(self, loss):
        """The trainer's loss tensor as ``loss_output_<n>`` of the current step."""
        hook = self._hook()
        if hook is not None and isinstance(loss, torch.Tensor):
            hook.record_tensor_value(LOSS_NAME, loss.detach())

    def _save_scalars(self, values, only_changed=False):
        """``scalar/<name>`` for each number (or one-element tensor) of ``values``; with
        ``only_changed``, only those whose value object is not the one saved last time (a
        trainer's dict of logged metrics keeps the old ones)."""
        hook = self._hook()
        if hook is None:
            return
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    continue
            elif not isinstance(value, numbers.Real) or isinstance(value, bool):
                continue
            key = str(name)
            if only_changed:
                if self._metrics.get(key) is value:
                    continue
                self._metrics[key] = value
            hook.save_scalar(key, value.detach() if isinstance(value, torch.Tensor) else value)

    def _save_learning_rates(self):
        """``scalar/learning_rate`` (the first optimizer's first parameter group), and
        ``learning_rate_<i>_<j>`` for optimizer i's group j otherwise."""
        rates = {}
        for i, optimizer in enumerate(self._optimizers):
            for j, group in enumerate(optimizer.param_groups):
                lr = group.get("lr")
                if isinstance(lr, torch.Tensor):
                    lr = lr.item()
                if lr is not None:
                    rates["learning_rate" if i == j == 0 else f"learning_rate_{i}_{j}"] = lr
        hook = self._hook()
        if hook is not None:
            for name, lr in rates.items():
                hook.save_scalar(name, float(lr))

    def _close(self):
        """Closes the hook (the trial ends); later calls do nothing."""
        hook = self._native
        if hook is not None and hook.enabled:
            hook.close()
