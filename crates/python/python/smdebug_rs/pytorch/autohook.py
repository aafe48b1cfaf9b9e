"""Zero code change: attach the PyTorch hook to a training script that never imports smdebug.

``python -m smdebug_rs run train.py ARGS`` (see ``smdebug_rs/__main__.py``) calls
:func:`install` and then runs the script. What is patched: nothing of torch's code. One
global module forward pre-hook is registered
(``torch.nn.modules.module.register_module_forward_pre_hook``); it sees every module call:

* the first module called that is not a loss (the model's first forward) makes the hook —
  ``get_hook(create_if_not_exists=True)``, from SageMaker's JSON configuration
  (``SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``); it is
  made then, not at start, so that a ``torch.distributed`` process group initialised by the
  script names the worker — and gets ``register_module``; this first call starts step 0;
* every ``torch.nn.modules.loss._Loss`` instance called gets ``register_loss`` (its first
  call is saved too).

Opting out: ``USE_SMDEBUG=false`` (or ``0``, ``no``, ``off``), or no JSON configuration:
the global pre-hook removes itself at the first module call and the script runs as it
would without smdebug_rs. A script that makes its own hook (``smd.Hook(...)`` or
``get_hook``) keeps it: the modules it registered are not registered again. Any failure in
the pre-hook follows the hook's fault policy (logged once, hook off, training unchanged).
"""

import torch

from smdebug_rs.core.logger import get_logger
from smdebug_rs.pytorch import singleton_utils

__all__ = ["install", "uninstall", "installed"]

_state = {"handle": None, "root": None, "hook": None}


def installed():
    """Whether the global pre-hook is in place."""
    return _state["handle"] is not None


def install():
    """Registers the global module forward pre-hook (module docstring). Returns False (and
    installs nothing) when ``USE_SMDEBUG`` is false."""
    if not singleton_utils.use_smdebug():
        return False
    if _state["handle"] is None:
        _state["handle"] = torch.nn.modules.module.register_module_forward_pre_hook(_pre_hook)
    return True


def uninstall():
    """Removes the global pre-hook (the hook, if made, stays registered on the model)."""
    h, _state["handle"] = _state["handle"], None
    if h is not None:
        h.remove()


def _pre_hook(module, inputs):
    try:
        _attach(module, inputs)
    except Exception as e:  # noqa: BLE001 - zero code change must never break training
        get_logger().error("smdebug_rs.pytorch.autohook: attaching the hook failed (%s: %s);"
                           " the script runs without it", type(e).__name__, e, exc_info=e)
        uninstall()


def _attach(module, inputs):
    is_loss = isinstance(module, torch.nn.modules.loss._Loss)
    hook = _state["hook"]
    if hook is None:
        if _state["root"] is not None:
            return
        if is_loss:
            return
        hook = singleton_utils.get_hook(create_if_not_exists=True)
        if hook is None:
            uninstall()
            return
        _state["hook"] = hook
        _state["root"] = module
        if module not in hook.module_set:
            hook.register_module(module)
            # torch took this call's pre-hooks before register_module added the hook's own:
            # start the step for this first call here.
            hook._forward_pre_hook(module, inputs)
        return
    if not hook.enabled:
        uninstall()  # switched off by a fault: stop looking at module calls
        return
    if is_loss and module not in hook.module_set:
        hook.register_loss(module)
