"""``smdebug_rs.huggingface``: a ``transformers.TrainerCallback`` that follows the Hugging
Face ``Trainer`` with one :class:`smdebug_rs.pytorch.Hook`.

    from transformers import Trainer
    from smdebug_rs.huggingface import DebuggerCallback

    cb = DebuggerCallback(out_dir="/tmp/run", include_collections=["weights", "losses"])
    Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb]).train()

``DebuggerCallback`` takes the PyTorch hook's constructor arguments, or ``json_file_path=``
(a SageMaker JSON configuration), or ``hook=``. What it does (docs/src/python.md, "Hugging
Face Trainer"):

* the model (``Trainer.model``, unwrapped) is registered (``register_module``) when the
  trainer is made (or at ``on_train_begin``), the trainer's torch optimizer (inside
  accelerate's wrapper) with ``register_optimizer`` at ``on_train_begin``: a TRAIN step is
  one optimizer step, so TRAIN mode steps follow ``state.global_step`` (the optimizer's
  step hooks run from ``on_pre_optimizer_step`` and ``on_optimizer_step``, so that a step a
  ``GradScaler`` skips ends one too);
* modes: ``train`` TRAIN, ``evaluate`` (during training too) EVAL, ``predict`` PREDICT: the
  trainer's ``evaluate`` and ``predict`` are wrapped on the trainer object (found from the
  callback's caller when the trainer calls ``on_init_end``);
* ``loss_output_<n>``: the ``loss`` of each model output (each forward: the micro-batches
  of a step continue the count);
* ``scalar/<key>`` for each number the trainer logs (``on_log``: ``loss``,
  ``learning_rate``, ``grad_norm``, ``eval_loss`` …; not its speed measurements,
  ``*_runtime`` and ``*_per_second``), in the step the hook is in then;
* the hook is closed at the end of ``train`` (``on_train_end``), and when ``train`` raises.

A failure inside a callback method is logged once and closes the hook; training goes on.
"""

import sys

import transformers

from smdebug_rs import modes
from smdebug_rs.core.faults import guarded
from smdebug_rs.pytorch.trainer_callback import TrainerHook

__all__ = ["DebuggerCallback"]

# How far up from a callback method the trainer's frame is looked for (the method, the
# fault wrapper, CallbackHandler.call_event and on_<event>, then the Trainer's).
_FRAMES_UP = 8
_WRAPPED = "_smdebug_rs_callback"


# The trainer's speed measurements (train_runtime, eval_samples_per_second, …): wall-clock
# figures, not the training's state.
_SPEED_SUFFIXES = ("_runtime", "_per_second")


def _loss_of_output(outputs):
    if isinstance(outputs, dict):  # ModelOutput is an OrderedDict
        return outputs.get("loss")
    return None


class DebuggerCallback(TrainerHook, transformers.TrainerCallback):
    """``DebuggerCallback(out_dir=None, export_tensorboard=False, tensorboard_dir=None,
    reduction_config=None, save_config=None, include_regex=None, include_collections=None,
    save_all=False, include_workers="one", *, json_file_path=None, hook=None)``: see the
    module docstring."""

    _trainer = None  # the Trainer, once a callback method has found it
    _LOG_NAME = "smdebug_rs.huggingface"
    _loss_of_output = staticmethod(_loss_of_output)

    # -- the trainer ---------------------------------------------------------------------

    def _find_trainer(self):
        """The trainer calling this callback method (looked for in the callers' frames, and
        attached the first time), else the one attached last."""
        frame = sys._getframe(1)
        for _ in range(_FRAMES_UP):
            if frame is None:
                break
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, transformers.Trainer):
                self.attach_trainer(candidate)
                return candidate
            frame = frame.f_back
        return self._trainer

    def attach_trainer(self, trainer):
        """Follows ``trainer``: its model is registered, its ``train``, ``evaluate`` and
        ``predict`` are wrapped on the object (modes, closing when ``train`` raises). The
        callback does it itself when the trainer first calls it (``on_init_end``, or
        ``on_train_begin`` for a callback added later); call it for a trainer the callback
        was added to after it trained or evaluated already."""
        self._trainer = trainer
        if getattr(trainer, _WRAPPED, None) is self:
            return
        setattr(trainer, _WRAPPED, self)
        trainer.train = self._wrap_train(trainer.train)
        trainer.evaluate = self._wrap_in_mode(trainer.evaluate, modes.EVAL)
        trainer.predict = self._wrap_in_mode(trainer.predict, modes.PREDICT)
        self._follow_model(trainer.model)

    def _wrap_train(self, train):
        def call(*args, **kwargs):
            try:
                return train(*args, **kwargs)
            except BaseException:
                self._close_after_failure()
                raise

        call.__wrapped__ = train
        return call

    def _wrap_in_mode(self, method, mode):
        def call(*args, **kwargs):
            before = self._enter_mode(mode)
            try:
                return method(*args, **kwargs)
            finally:
                self._leave_mode(before)

        call.__wrapped__ = method
        return call

    @guarded()
    def _enter_mode(self, mode):
        hook = self._hook()
        if hook is None:
            return None
        before = hook.mode
        self._mode(mode)
        return before

    @guarded()
    def _leave_mode(self, before):
        if before is not None:
            self._mode(before)

    @guarded()
    def _close_after_failure(self):
        self._close()

    # -- the callback methods ------------------------------------------------------------

    @guarded()
    def on_init_end(self, args, state, control, model=None, **kwargs):
        if self._find_trainer() is None and model is not None:
            self._follow_model(model)

    @guarded()
    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        trainer = self._find_trainer()
        if trainer is not None:
            model, optimizer = trainer.model, trainer.optimizer
        if model is not None:
            self._follow_model(model)
        self._follow_optimizers([optimizer] if optimizer is not None else [])
        self._mode(modes.TRAIN)

    @guarded()
    def on_step_begin(self, args, state, control, **kwargs):
        self._mode(modes.TRAIN)

    @guarded()
    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        # After clipping (which unscales a GradScaler's gradients) and before
        # optimizer.step, which a GradScaler skips when it finds an inf or NaN.
        for optimizer in self._optimizers:
            self._before_optimizer_step(optimizer)

    @guarded()
    def on_optimizer_step(self, args, state, control, **kwargs):
        self._after_optimizer_step()

    @guarded()
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs:
            self._save_scalars({k: v for k, v in logs.items()
                                if not str(k).endswith(_SPEED_SUFFIXES)})

    @guarded()
    def on_train_end(self, args, state, control, **kwargs):
        self._close()
