"""``smdebug.core.tensor``: ``StepState`` and the ``Tensor`` class of a trial."""

from enum import Enum

from smdebug_rs._native import Tensor

__all__ = ["StepState", "Tensor"]


class StepState(Enum):
    """The answer of ``Trial.has_passed_step``."""

    UNAVAILABLE = 0
    AVAILABLE = 1
    NOT_YET_AVAILABLE = 2
