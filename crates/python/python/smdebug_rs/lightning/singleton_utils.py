"""The Lightning callback writes through the PyTorch hook: its singleton is PyTorch's
(``python -m smdebug_rs run`` closes it when the script ends)."""

from smdebug_rs.pytorch.singleton_utils import *  # noqa: F401,F403
from smdebug_rs.pytorch.singleton_utils import __all__  # noqa: F401
