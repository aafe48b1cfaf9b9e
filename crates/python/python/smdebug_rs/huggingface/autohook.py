"""Zero code change for the Hugging Face Trainer: ``python -m smdebug_rs run train.py``
installs this when the script imports ``transformers.trainer`` (what ``transformers.Trainer``
loads): ``transformers.Trainer.__init__`` is wrapped so that each trainer made with a hook
configuration present gets the DebuggerCallback (after the callbacks it is given); see
:mod:`smdebug_rs.pytorch.trainer_autohook`. Opt out with ``USE_SMDEBUG=false``."""

import transformers

from smdebug_rs.huggingface import DebuggerCallback
from smdebug_rs.pytorch import singleton_utils
from smdebug_rs.pytorch.trainer_autohook import TrainerPatch

__all__ = ["install", "uninstall", "installed"]


_patch = TrainerPatch("smdebug_rs.huggingface.autohook", lambda trainer_class: DebuggerCallback,
                      lambda cb: isinstance(cb, DebuggerCallback))


def install():
    """Wraps ``transformers.Trainer.__init__``. False (nothing installed) when
    ``USE_SMDEBUG`` is false."""
    if not singleton_utils.use_smdebug():
        return False
    _patch.patch(transformers.Trainer)
    return True


def uninstall():
    """Takes the wrapper off (callbacks already added stay)."""
    _patch.unpatch()


def installed():
    """Whether ``Trainer.__init__`` is wrapped."""
    return _patch.installed()
