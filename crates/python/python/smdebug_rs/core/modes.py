"""``smdebug.core.modes``."""

from smdebug_rs.modes import ALLOWED_MODE_NAMES, ALLOWED_MODES, ModeKeys

__all__ = ["ModeKeys", "ALLOWED_MODES", "ALLOWED_MODE_NAMES"]
