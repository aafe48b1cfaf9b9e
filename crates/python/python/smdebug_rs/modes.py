"""Training modes (``smdebug.modes`` / ``smdebug.core.modes.ModeKeys``)."""

from enum import Enum

__all__ = ["ModeKeys", "ALLOWED_MODES", "ALLOWED_MODE_NAMES", "TRAIN", "EVAL", "PREDICT", "GLOBAL"]


class ModeKeys(Enum):
    """The mode a step was saved in; GLOBAL stands for "any mode" in queries."""

    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4


ALLOWED_MODES = [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL]
ALLOWED_MODE_NAMES = [m.name for m in ALLOWED_MODES]

# ``smdebug.modes.TRAIN`` works in the original because ``smdebug.modes`` *is* ModeKeys.
TRAIN = ModeKeys.TRAIN
EVAL = ModeKeys.EVAL
PREDICT = ModeKeys.PREDICT
GLOBAL = ModeKeys.GLOBAL
