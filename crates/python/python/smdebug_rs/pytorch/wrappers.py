"""The model inside the wrappers PyTorch puts around it, and the names the hook gives it.

A training script registers what it calls: ``torch.compile(model)`` (an ``OptimizedModule``
holding the model as ``_orig_mod``), ``DistributedDataParallel(model)`` or
``DataParallel(model)`` (``.module``), FSDP1's ``FullyShardedDataParallel``
(``_fsdp_wrapped_module``), any nesting of them. The tensors are named after the model
inside, as an unwrapped run names them: no ``_orig_mod.``, ``module.`` or
``_fsdp_wrapped_module.`` in a name, and the root named after the model's own class. FSDP2's
``fully_shard(model)`` wraps nothing but swaps the model's class for ``FSDP<Class>``: the
root is named after the class it swapped out.
"""

import torch

__all__ = ["unwrap", "root_name", "is_optimized_module"]


def is_optimized_module(module):
    """Whether ``module`` is what ``torch.compile(model)`` returns."""
    return hasattr(module, "_orig_mod") and type(module).__name__ == "OptimizedModule"


def _inner(module):
    if is_optimized_module(module):
        return module._orig_mod
    parallel = torch.nn.parallel
    if isinstance(module, (parallel.DistributedDataParallel, parallel.DataParallel)):
        return module.module
    if type(module).__name__ == "FullyShardedDataParallel" and hasattr(
            module, "_fsdp_wrapped_module"):
        return module._fsdp_wrapped_module
    return None


def unwrap(module):
    """The model inside every wrapper around ``module`` (``module`` itself if none)."""
    inner = _inner(module)
    while inner is not None:
        module, inner = inner, _inner(inner)
    return module


def _fsdp2_class():
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch built without distributed
        return None
    return FSDPModule


def root_name(module):
    """The class name the original gives a registered root (``module._get_name()``), of
    the class FSDP2 swapped out where it swapped one in."""
    fsdp = _fsdp2_class()
    if fsdp is not None and isinstance(module, fsdp):
        for cls in type(module).__mro__:
            if issubclass(cls, torch.nn.Module) and not issubclass(cls, fsdp):
                return cls.__name__
    return module._get_name()
