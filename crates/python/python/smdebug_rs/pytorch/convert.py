"""torch tensors → numpy arrays, made only for tensors due at this step.

``to_numpy(t)`` detaches, moves to the CPU and views as numpy. Dtypes numpy lacks are
widened first: ``bfloat16`` and the ``float8`` types to ``float32`` (the original's
``.data.numpy()`` raises on them and, with its error handler, switches itself off);
quantized tensors are dequantized, sparse ones made dense, conjugate views resolved; a
sharded ``DTensor`` (FSDP2) is gathered whole first (``full_tensor()``: a collective, which
the hook calls only where every rank takes part).
"""

import numpy as np
import torch

__all__ = ["to_numpy", "is_tensor", "is_dtensor"]

_WIDEN = {torch.bfloat16}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "float8_e8m0fnu"):
    _dt = getattr(torch, _name, None)
    if _dt is not None:
        _WIDEN.add(_dt)


def is_tensor(value):
    """Whether the original's ``_write`` would save ``value``: its class is named ``Tensor``
    (``torch.Tensor``; a ``Parameter`` or another subclass is passed over, and does not
    take an index)."""
    return type(value).__name__ == "Tensor" and isinstance(value, torch.Tensor)


def _dtensor_class():
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a torch built without distributed
        return None
    return DTensor


_DTENSOR = _dtensor_class()


def is_dtensor(value):
    """Whether ``value`` is a ``torch.distributed.tensor.DTensor`` (sharded or replicated)."""
    return _DTENSOR is not None and isinstance(value, _DTENSOR)


def to_numpy(t):
    """The value of tensor ``t`` as a numpy array on the CPU (a view when it can be)."""
    if not isinstance(t, torch.Tensor):
        return np.asarray(t)
    t = t.detach()
    if is_dtensor(t):
        t = t.full_tensor()
    if t.is_quantized:
        t = t.dequantize()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype in _WIDEN:
        t = t.float()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.numpy()
