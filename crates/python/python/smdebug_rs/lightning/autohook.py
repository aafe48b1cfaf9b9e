"""Zero code change for Lightning: ``python -m smdebug_rs run train.py`` installs this when
the script imports ``lightning.pytorch`` (or ``pytorch_lightning``): the ``Trainer`` class's
``__init__`` is wrapped so that each trainer made with a hook configuration present gets
the DebuggerCallback (after the callbacks it is given); see
:mod:`smdebug_rs.pytorch.trainer_autohook`. Opt out with ``USE_SMDEBUG=false``."""

import sys

from smdebug_rs.lightning.callback import PACKAGES, LightningDebugger, callback_class
from smdebug_rs.pytorch import singleton_utils
from smdebug_rs.pytorch.trainer_autohook import TrainerPatch

__all__ = ["install", "uninstall", "installed"]

_CLASS_OF_PACKAGE = {package: name for name, package in PACKAGES.items()}


def _callback_class(trainer_class):
    package = "pytorch_lightning" if trainer_class.__module__.startswith(
        "pytorch_lightning") else "lightning.pytorch"
    return callback_class(_CLASS_OF_PACKAGE[package])


_patch = TrainerPatch("smdebug_rs.lightning.autohook", _callback_class,
                      lambda cb: isinstance(cb, LightningDebugger))


def install():
    """Wraps ``Trainer.__init__`` of each Lightning package imported so far. False (nothing
    installed) when ``USE_SMDEBUG`` is false."""
    if not singleton_utils.use_smdebug():
        return False
    for package in PACKAGES.values():
        module = sys.modules.get(package)
        if module is not None:
            _patch.patch(module.Trainer)
    return True


def uninstall():
    """Takes the wrappers off (callbacks already added stay)."""
    _patch.unpatch()


def installed():
    """Whether a ``Trainer.__init__`` is wrapped."""
    return _patch.installed()
