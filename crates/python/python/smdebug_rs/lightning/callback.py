"""The Lightning callback's body, for ``lightning.pytorch`` and for ``pytorch_lightning``
(the same code published twice: each package has its own ``Callback`` class). See
:mod:`smdebug_rs.lightning` for what it saves and when."""

from typing import Any
import importlib

from smdebug_rs import modes
from smdebug_rs.core.faults import guarded
from smdebug_rs.pytorch.trainer_callback import TrainerHook

__all__ = ["LightningDebugger", "callback_class", "PACKAGES"]

#: The Lightning packages, by the name of the class made for each.
PACKAGES = {"DebuggerCallback": "lightning.pytorch", "PLDebuggerCallback": "pytorch_lightning"}

# TrainerFn values (a str enum in both packages).
_FITTING = "fit"


class LightningDebugger(TrainerHook):
    """``DebuggerCallback(out_dir=None, export_tensorboard=False, tensorboard_dir=None,
    reduction_config=None, save_config=None, include_regex=None, include_collections=None,
    save_all=False, include_workers="one", *, json_file_path=None, hook=None)``: the
    :class:`smdebug_rs.pytorch.Hook` arguments, or a SageMaker JSON configuration
    (``json_file_path``, as ``Hook.create_from_json_file``), or a hook made already."""

    _global_step = 0  # the trainer's global step at its last optimizer step
    _LOG_NAME = "smdebug_rs.lightning"

    # -- the model and its optimizers ----------------------------------------------------

    @guarded()
    def setup(self, trainer, pl_module, stage):
        self._follow_model(pl_module)

    @guarded()
    def on_fit_start(self, trainer, pl_module):
        # The strategy made the optimizers just before (trainer._run).
        self._follow_model(pl_module)
        self._follow_optimizers(trainer.optimizers)
        self._global_step = trainer.global_step

    # -- modes ---------------------------------------------------------------------------

    @guarded()
    def on_train_start(self, trainer, pl_module):
        self._mode(modes.TRAIN)

    @guarded()
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._mode(modes.TRAIN)

    @guarded()
    def on_validation_start(self, trainer, pl_module):
        self._mode(modes.EVAL)

    @guarded()
    def on_validation_end(self, trainer, pl_module):
        self._save_scalars(trainer.logged_metrics, only_changed=True)
        if trainer.state.fn == _FITTING:
            self._mode(modes.TRAIN)

    @guarded()
    def on_test_start(self, trainer, pl_module):
        self._mode(modes.EVAL)

    @guarded()
    def on_predict_start(self, trainer, pl_module):
        self._mode(modes.PREDICT)

    # -- what is saved -------------------------------------------------------------------

    @guarded()
    def on_before_backward(self, trainer, pl_module, loss):
        # The loss whose backward makes the gradients: training_step's loss divided by
        # accumulate_grad_batches; with a GradScaler, Lightning hands it over scaled (a
        # power of two: the division is exact).
        scaler = getattr(trainer.precision_plugin, "scaler", None)
        if scaler is not None and scaler.is_enabled():
            loss = loss.detach() / scaler.get_scale()
        self._save_loss(loss)

    @guarded()
    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        # Lightning calls it once training_step, zero_grad and backward ran in the closure
        # optimizer.step calls: the gradients are accumulated and, with a GradScaler,
        # unscaled; clipping comes after.
        self._before_optimizer_step(optimizer)
        self._save_learning_rates()

    @guarded()
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._save_scalars(trainer.logged_metrics, only_changed=True)
        if trainer.global_step != self._global_step:  # this batch stepped an optimizer
            self._global_step = trainer.global_step
            self._after_optimizer_step()

    # -- the end -------------------------------------------------------------------------

    @guarded()
    def teardown(self, trainer, pl_module, stage):
        if stage == _FITTING:
            self._close()

    @guarded()
    def on_exception(self, trainer, pl_module, exception):
        self._close()


_classes: "dict[Any, Any]" = {}


def callback_class(name):
    """The callback class ``name`` of :data:`PACKAGES`: :class:`LightningDebugger` on that
    package's ``Callback`` (its import is the first cost, so it is made when asked for)."""
    cls = _classes.get(name)
    if cls is None:
        base = importlib.import_module(PACKAGES[name]).Callback
        cls = type(name, (LightningDebugger, base), {
            "__module__": "smdebug_rs.lightning", "__qualname__": name,
            "__doc__": f"A ``{PACKAGES[name]}.Callback``: {LightningDebugger.__doc__}"})
        _classes[name] = cls
    return cls
