"""Zero code change for the trainers (``smdebug_rs.lightning.autohook``,
``smdebug_rs.huggingface.autohook``): a trainer class's ``__init__`` is wrapped so that each
trainer made gets the trainer's ``DebuggerCallback``, if the process has a hook
configuration (``USE_SMDEBUG`` not false and a SageMaker JSON configuration:
``SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``, as
``get_hook(create_if_not_exists=True)`` decides).

One callback serves every trainer of the process (a script that validates with one trainer
and fits with another writes one trial), and it writes through the PyTorch singleton:
``smdebug_rs.pytorch.get_hook(create_if_not_exists=True)``, made at the callback's first
use (a hook the script made itself is used as it is). A trainer whose callbacks hold a
``DebuggerCallback`` of the script's own is left as it is. Once a callback is added, the
PyTorch autohook's global module pre-hook steps aside (the trainer's callback registers
the model and drives the steps). A failure in the wrapper is logged and the trainer is
left as it was made.
"""

import functools
import sys

from smdebug_rs.core.logger import get_logger
from smdebug_rs.pytorch import singleton_utils

__all__ = ["TrainerPatch"]


class TrainerPatch:
    """The ``__init__`` wrappers of one kind of trainer. ``add(trainer, callback)`` puts the
    callback in the trainer's callbacks; ``callback_class(trainer_class)`` is the callback
    class for that trainer class; ``ours(callback)`` tells a ``DebuggerCallback``."""

    def __init__(self, label, callback_class, ours, add):
        self.label = label
        self._callback_class = callback_class
        self._ours = ours
        self._add = add
        self._saved = {}       # trainer class → the __init__ it had
        self._callbacks = {}   # callback class → the one instance of the process

    def installed(self):
        """Whether a trainer class is wrapped."""
        return bool(self._saved)

    def patch(self, trainer_class):
        """Wraps ``trainer_class.__init__`` (once)."""
        if trainer_class in self._saved:
            return
        init = trainer_class.__init__
        self._saved[trainer_class] = trainer_class.__dict__.get("__init__")
        patch = self

        @functools.wraps(init)
        def __init__(trainer, *args, **kwargs):
            init(trainer, *args, **kwargs)
            try:
                patch._attach(trainer_class, trainer)
            except Exception as e:  # noqa: BLE001 - zero code change must never break training
                get_logger().error("%s: adding the callback failed (%s: %s); the trainer runs "
                                   "without it", patch.label, type(e).__name__, e, exc_info=e)

        trainer_class.__init__ = __init__

    def unpatch(self):
        """Gives each wrapped class its ``__init__`` back (callbacks added stay)."""
        for cls, init in self._saved.items():
            if init is None:
                del cls.__init__
            else:
                cls.__init__ = init
        self._saved.clear()

    def _attach(self, trainer_class, trainer):
        if not singleton_utils.use_smdebug() or singleton_utils.json_config_path() is None:
            return
        callbacks = getattr(trainer, "callbacks", None)
        if callbacks is None:  # transformers keeps them in its callback handler
            callbacks = trainer.callback_handler.callbacks
        if any(self._ours(cb) for cb in callbacks):
            return
        cls = self._callback_class(trainer_class)
        callback = self._callbacks.get(cls)
        if callback is None:
            callback = self._callbacks[cls] = cls._from_singleton()
        self._add(trainer, callback)
        torch_autohook = sys.modules.get("smdebug_rs.pytorch.autohook")
        if torch_autohook is not None:
            torch_autohook.uninstall()
