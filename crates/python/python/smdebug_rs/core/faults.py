"""The framework hooks' fault policy (``smdebug_rs.pytorch``, ``smdebug_rs.mxnet``): the hook
never breaks training.

Every body a framework hook runs inside the user's training (the constructor, module/block
and parameter callbacks, ``register_*``, ``record_tensor_value``, ``save_tensor``,
``save_scalar``, ``set_mode``, ``close`` …) goes through :func:`guarded`. An exception there is logged once
(logger ``smdebug_rs``, level ERROR, naming the call and the tensor being saved, the
exception's class and message, with its traceback), the hook is switched off (every later call returns at once, the native
writer is closed quietly so readers see the trial end) and the callback returns what it
returns when nothing is due (``None``: the module's output and the gradient are unchanged).
Training goes on with the results it would have had without the hook.

The original (smdebug 1.0.34, ``error_handling_agent``) catches errors only while the hook
has the default configuration and re-raises them otherwise; here every configuration is
covered.

A hook using it has the attributes ``_fault`` (None until the first failure), ``_saving``
(the tensor being saved, or None), ``_native`` (the ``smdebug_rs.Hook`` it writes through)
and the class attribute ``_LOG_NAME`` (the module named in the log, e.g.
``smdebug_rs.pytorch``).
"""

from typing import Any, Callable, TypeVar, cast

import functools

from smdebug_rs.core.logger import get_logger

__all__ = ["guarded", "fail", "HookFault"]


class HookFault:
    """The first failure of a hook: where it happened and the exception."""

    __slots__ = ("where", "error")

    def __init__(self, where: Any, error: Any) -> None:
        self.where = where
        self.error = error

    def __repr__(self) -> str:
        return f"HookFault({self.where!r}, {self.error!r})"


def fail(hook: Any, where: Any, error: Any) -> Any:
    """Records ``error`` as ``hook``'s fault (only the first one is logged) and switches the
    hook off."""
    if hook._fault is not None:
        return
    tensor = getattr(hook, "_saving", None)
    if tensor is not None:
        where = f"{where} saving {tensor}"
    hook._fault = HookFault(where, error)
    get_logger().error(
        "%s: %s failed (%s: %s); the hook is off for the rest of this "
        "training, which goes on unchanged",
        getattr(hook, "_LOG_NAME", "smdebug_rs"), where, type(error).__name__, error,
        exc_info=error)
    native, hook._native = hook._native, None
    if native is not None:
        try:
            native.close()
        except Exception:  # noqa: BLE001 - already off; the first cause is logged
            pass


_F = TypeVar("_F", bound=Callable[..., Any])


def guarded(default: Any = None) -> Callable[[_F], _F]:
    """Wraps a hook method in the fault policy (module docstring): returns ``default`` when
    the hook is off or the body raises."""

    def wrap(method: _F) -> _F:
        where = method.__name__

        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self._fault is not None:
                return default
            try:
                return method(self, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - the policy: log once, switch off
                fail(self, where, e)
                return default

        return cast(_F, call)

    return wrap
