"""The PyTorch hook under ``torch.compile``: where its callbacks run, and how a model
compiled after it was registered is found.

Inside a compiled region dynamo traces the module hooks it meets. A hook that calls into
the native writer there cannot be traced (a graph break each), and one whose registrations
change between steps changes what dynamo guards on (a recompilation each, until
``recompile_limit`` leaves the model uncompiled). So for a compiled model the hook:

* starts steps and saves parameters outside the compiled region: on the
  ``OptimizedModule`` that ``torch.compile(model)`` returns (its own hooks run in eager
  Python, around the compiled call), or around ``model._compiled_call_impl`` after
  ``model.compile()``;
* keeps its forward and gradient callbacks registered from then on, each reading one plain
  flag (``_due``): dynamo guards on it, so a compiled frame has at most two graphs (a step
  that saves and one that does not), and in a step that saves the forward callbacks only
  append the module's inputs and outputs to a list (``_pending``), which the hook names
  and saves once the compiled call has returned. Gradient callbacks run in the autograd
  engine, outside any compiled region.

A model compiled after ``register_module`` is found by wrapping ``torch.compile`` and
``torch.nn.Module.compile`` (installed once, when a PyTorch hook first registers a
module): after the real call, each live hook that registered the model moves its step
callbacks to the compiled entry point.
"""

from typing import Any
import functools
import weakref

import torch

__all__ = ["track", "is_compiled"]

_hooks: "weakref.WeakSet[Any]" = weakref.WeakSet()
_installed: "list[Any]" = []


def is_compiled(module):
    """Whether calling ``module`` runs compiled code: ``torch.compile(model)``'s result, or
    a module whose ``compile()`` was called."""
    from smdebug_rs.pytorch.wrappers import is_optimized_module

    return is_optimized_module(module) or getattr(
        module, "_compiled_call_impl", None) is not None


def track(hook):
    """Tells ``hook`` (``_on_compiled(model, compiled)``) of every module compiled from now
    on."""
    _hooks.add(hook)
    if not _installed:
        _install()


def _notify(model, compiled):
    for hook in list(_hooks):
        hook._on_compiled(model, compiled)


def _install():
    real_compile = torch.compile

    @functools.wraps(real_compile)
    def compile(model=None, *args, **kwargs):
        if model is None:  # used as @torch.compile(...): the model comes with the call
            return lambda m: compile(m, *args, **kwargs)
        compiled = real_compile(model, *args, **kwargs)
        if isinstance(model, torch.nn.Module):
            _notify(model, compiled)
        return compiled

    real_method = torch.nn.Module.compile

    @functools.wraps(real_method)
    def module_compile(self, *args, **kwargs):
        out = real_method(self, *args, **kwargs)
        _notify(self, self)
        return out

    torch.compile = compile
    torch.nn.Module.compile = module_compile
    _installed.append((real_compile, real_method))
