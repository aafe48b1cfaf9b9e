"""Zero code change for the trainers (``smdebug_rs.lightning.autohook``,
``smdebug_rs.huggingface.autohook``): a trainer class's ``__init__`` is wrapped so that each
trainer made gets the trainer's ``DebuggerCallback``, if the process has a hook
configuration (``USE_SMDEBUG`` not false and a SageMaker JSON configuration:
``SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``, as
``get_hook(create_if_not_exists=True)`` decides): it is put at the end of the trainer's
``callbacks`` argument, as if the script had passed it.

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
import inspect
import sys

from smdebug_rs.core.logger import get_logger
from smdebug_rs.pytorch import singleton_utils

__all__ = ["TrainerPatch"]


class TrainerPatch:
    """The ``__init__`` wrappers of one kind of trainer: the callback is put at the end of
    the ``callbacks`` argument, where a script's own would be (trainers order some of their
    callbacks around those they are given, and a callback that changes the logs it is
    given, like transformers' printer, must come after). ``callback_class(trainer_class)``
    is the callback class for a trainer class; ``ours(callback)`` tells a
    ``DebuggerCallback``."""

    def __init__(self, label, callback_class, ours):
        self.label = label
        self._callback_class = callback_class
        self._ours = ours
        self._saved = {}       # trainer class → what its __dict__ held as __init__
        self._callbacks = {}   # callback class → the one instance of the process

    def installed(self):
        """Whether a trainer class is wrapped."""
        return bool(self._saved)

    def patch(self, trainer_class):
        """Wraps ``trainer_class.__init__`` (once)."""
        if trainer_class in self._saved:
            return
        init = trainer_class.__init__
        signature = inspect.signature(init)
        self._saved[trainer_class] = trainer_class.__dict__.get("__init__")
        patch = self

        @functools.wraps(init)
        def __init__(trainer, *args, **kwargs):
            try:
                args, kwargs = patch._with_callback(trainer_class, signature, trainer, args,
                                                    kwargs)
            except Exception as e:  # noqa: BLE001 - zero code change must never break training
                get_logger().error("%s: adding the callback failed (%s: %s); the trainer runs "
                                   "without it", patch.label, type(e).__name__, e, exc_info=e)
            init(trainer, *args, **kwargs)

        trainer_class.__init__ = __init__

    def unpatch(self):
        """Gives each wrapped class its ``__init__`` back (callbacks added stay; trainers
        made after a new ``patch`` get a new one)."""
        for cls, init in self._saved.items():
            if init is None:
                del cls.__init__
            else:
                cls.__init__ = init
        self._saved.clear()
        self._callbacks.clear()

    def _with_callback(self, trainer_class, signature, trainer, args, kwargs):
        if not singleton_utils.use_smdebug() or singleton_utils.json_config_path() is None:
            return args, kwargs
        bound = signature.bind(trainer, *args, **kwargs)
        given = bound.arguments.get("callbacks")
        if given is None:
            given = []
        elif not isinstance(given, (list, tuple)):
            given = [given]  # Lightning takes one callback as it is
        if any(self._ours(cb) for cb in given):
            return args, kwargs
        cls = self._callback_class(trainer_class)
        callback = self._callbacks.get(cls)
        if callback is None:
            callback = self._callbacks[cls] = cls._from_singleton()
        bound.arguments["callbacks"] = list(given) + [callback]
        torch_autohook = sys.modules.get("smdebug_rs.pytorch.autohook")
        if torch_autohook is not None:
            torch_autohook.uninstall()
        return bound.args[1:], bound.kwargs
