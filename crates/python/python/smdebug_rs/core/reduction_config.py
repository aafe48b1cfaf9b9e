"""``smdebug.core.reduction_config``: which reductions of a tensor are saved.

``ReductionConfig`` is the native class (``smdebug_rs._native``, wrapping
``smdebug_config::ReductionConfig``); see ``smdebug_rs.core.save_config`` for how values
are copied and viewed.
"""

from smdebug_rs import _native
from smdebug_rs.core._views import ListView, live

__all__ = ["ReductionConfig"]

ALLOWED_REDUCTIONS = list(_native.ReductionConfig.ALLOWED_REDUCTIONS)
ALLOWED_NORMS = list(_native.ReductionConfig.ALLOWED_NORMS)


class ReductionConfig(_native.ReductionConfig):
    """Reductions to save instead of (or with) the raw tensor: ``reductions`` and
    ``abs_reductions`` among min, max, mean, std, variance, sum, prod; ``norms`` and
    ``abs_norms`` among l1, l2; ``save_raw_tensor``; ``save_shape``. Another name is
    ``SMDebugValueError``, as in the original."""

    reductions = live(_native.ReductionConfig.reductions, ListView)
    abs_reductions = live(_native.ReductionConfig.abs_reductions, ListView)
    norms = live(_native.ReductionConfig.norms, ListView)
    abs_norms = live(_native.ReductionConfig.abs_norms, ListView)

    def __repr__(self) -> str:
        return f"<class ReductionConfig: {self.to_json_dict()}>"
