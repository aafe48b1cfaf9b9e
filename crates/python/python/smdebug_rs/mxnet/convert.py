"""MXNet NDArrays → numpy arrays, made only for tensors due at this step."""

import numpy as np

__all__ = ["to_numpy", "is_ndarray"]


def is_ndarray(value):
    """Whether the original's ``_write`` would save ``value``: its class is named ``NDArray``
    (``mx.nd.NDArray``; sparse arrays and ``mx.np.ndarray`` are passed over, and do not take
    an index)."""
    return type(value).__name__ == "NDArray"


def to_numpy(value):
    """The value as a numpy array on the CPU (``asnumpy()``: waits for the array and copies
    it from its device)."""
    asnumpy = getattr(value, "asnumpy", None)
    if asnumpy is not None:
        return asnumpy()
    return np.asarray(value)
