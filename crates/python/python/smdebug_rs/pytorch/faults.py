"""The PyTorch hook's fault policy, shared with the other framework hooks: see
:mod:`smdebug_rs.core.faults`."""

from smdebug_rs.core.faults import HookFault, fail, guarded

__all__ = ["guarded", "fail", "HookFault"]
