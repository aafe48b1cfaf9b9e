"""Zero code change: attach the Keras hook to a training script that never imports smdebug.

``python -m smdebug_rs run train.py ARGS`` (see ``smdebug_rs/__main__.py``) calls
:func:`install` and then runs the script. What is patched: ``keras.Model.fit``,
``keras.Model.evaluate`` and ``keras.Model.predict`` (set on ``keras.Model`` itself, so every
model class that does not override them gets them; nothing else of Keras or TensorFlow).
Each wrapper adds the hook to the call's ``callbacks`` and calls the method Keras had:

* the hook is the Keras singleton — ``smdebug_rs.tensorflow.get_hook(create_if_not_exists=
  True)``, from SageMaker's JSON configuration (``SMDEBUG_CONFIG_FILE_PATH``, else
  ``/opt/ml/input/config/debughookconfig.json``), made at the first call;
* ``callbacks`` that already hold a ``KerasHook`` (the script made its own) are left as they
  are, and so is a ``keras.callbacks.CallbackList`` (what ``fit`` hands its validation
  ``evaluate``: it holds the hook ``fit`` was given).

Opting out: ``USE_SMDEBUG=false`` (or ``0``, ``no``, ``off``) installs nothing; with no JSON
configuration the first call finds no hook, the wrappers take themselves off and the
script runs as it would without smdebug_rs. Any failure in a wrapper follows the hook's
fault policy (logged once, training unchanged).
"""

from typing import Any
import functools
import inspect

import keras

from smdebug_rs.core.logger import get_logger
from smdebug_rs.tensorflow import singleton_utils
from smdebug_rs.tensorflow.keras import KerasHook

__all__ = ["install", "uninstall", "installed", "PATCHED"]

PATCHED = ("fit", "evaluate", "predict")
_MISSING = object()
# name → what keras.Model.__dict__ held before install (_MISSING: inherited).
_saved: "dict[Any, Any]" = {}


def installed():
    """Whether the wrappers are on ``keras.Model``."""
    return bool(_saved)


def install():
    """Puts the wrappers on ``keras.Model`` (module docstring). Returns False (and installs
    nothing) when ``USE_SMDEBUG`` is false."""
    if not singleton_utils.use_smdebug():
        return False
    if not _saved:
        for name in PATCHED:
            _saved[name] = keras.Model.__dict__.get(name, _MISSING)
            setattr(keras.Model, name, _wrap(getattr(keras.Model, name)))
    return True


def uninstall():
    """Takes the wrappers off ``keras.Model`` (a hook already made stays as it is)."""
    for name, before in _saved.items():
        if before is _MISSING:
            delattr(keras.Model, name)
        else:
            setattr(keras.Model, name, before)
    _saved.clear()


def _wrap(method):
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            args, kwargs = _with_hook(signature, args, kwargs)
        except Exception as e:  # noqa: BLE001 - zero code change must never break training
            get_logger().error("smdebug_rs.tensorflow.autohook: attaching the hook failed"
                               " (%s: %s); the script runs without it", type(e).__name__, e,
                               exc_info=e)
            uninstall()
        return method(*args, **kwargs)

    return wrapper


def _with_hook(signature, args, kwargs):
    """The call's arguments with the hook added to ``callbacks`` (unchanged when there is
    nothing to add)."""
    bound = signature.bind(*args, **kwargs)
    callbacks = bound.arguments.get("callbacks")
    if isinstance(callbacks, keras.callbacks.CallbackList):
        return args, kwargs
    callbacks = list(callbacks or [])
    if any(isinstance(c, KerasHook) for c in callbacks):
        return args, kwargs
    hook = singleton_utils.get_hook(create_if_not_exists=True)
    if hook is None:
        uninstall()
        return args, kwargs
    if not hook.enabled:
        return args, kwargs
    bound.arguments["callbacks"] = callbacks + [hook]
    return bound.args, bound.kwargs
