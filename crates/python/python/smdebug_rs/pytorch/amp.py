"""Gradients as the model computed them, not as a ``GradScaler`` scaled them.

With ``torch.amp.GradScaler`` the loss is multiplied by the scale before ``backward()``, so
every gradient the backward pass produces is the real one times the scale (2¹⁶ by
default) until ``scaler.unscale_`` or ``scaler.step`` divides it out. The hook saves the
real one: ``GradScaler.scale`` is wrapped (once, when a PyTorch hook is made) to note the
scaler that scaled the latest loss, and a gradient due for saving is divided by that
scaler's current scale — the one the backward pass used, since ``scaler.update()`` changes
it only after the optimizer step. Gradients read from ``.grad`` at the optimizer step are
divided only when ``unscale_`` has not run for that optimizer.
"""

from typing import Any
import functools
import weakref

__all__ = ["install", "forget", "unscale", "unscale_for"]

_last = [None]  # weak reference to the scaler that scaled the latest loss
_inverse_of_step = [None]  # (scaler, 1 / scale), read once a step (.item() syncs a device)
_installed: "list[Any]" = []


def install():
    """Wraps ``torch.amp.GradScaler.scale`` (once)."""
    if _installed:
        return
    try:
        from torch.amp import GradScaler
    except ImportError:
        return
    real = GradScaler.scale

    @functools.wraps(real)
    def scale(self, outputs):
        out = real(self, outputs)
        if self.is_enabled():
            _last[0] = weakref.ref(self)
        return out

    GradScaler.scale = scale
    _installed.append(real)


def forget():
    """Starts a step: no loss of it has been scaled yet."""
    _last[0] = None
    _inverse_of_step[0] = None


def _scaler():
    ref = _last[0]
    return None if ref is None else ref()


def _inverse(scaler):
    # The scale changes only in scaler.update(), after the step's optimizer step.
    cached = _inverse_of_step[0]
    if cached is not None and cached[0] is scaler:
        return cached[1]
    s = getattr(scaler, "_scale", None)
    inv = None if s is None else 1.0 / float(s.reshape(()).item())
    _inverse_of_step[0] = (scaler, inv)
    return inv


def unscale(grad):
    """``grad`` from a backward pass, divided by the scale its loss was multiplied by."""
    scaler = _scaler()
    inv = None if scaler is None else _inverse(scaler)
    return grad if inv is None else grad.mul(inv)


def unscale_for(grad, optimizer):
    """``optimizer``'s parameter's ``.grad`` at its step, unscaled unless the scaler has
    unscaled that optimizer's gradients already."""
    scaler = _scaler()
    if scaler is None:
        return grad
    state = getattr(scaler, "_per_optimizer_states", {}).get(id(optimizer), {})
    stage = state.get("stage")
    if stage is not None and getattr(stage, "name", "") == "UNSCALED":
        return grad
    inv = _inverse(scaler)
    return grad if inv is None else grad.mul(inv)
