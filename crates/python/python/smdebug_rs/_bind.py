"""Hands the native module the package's classes that it makes instances of or raises
(``smdebug_rs._native._init``), so that it never imports the package that imports it.

``smdebug_rs/__init__.py`` imports this module first: every import of a ``smdebug_rs``
module runs it before anything can call the native module.
"""

from smdebug_rs import _native, exceptions
from smdebug_rs.core.collection import Collection
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode
from smdebug_rs.core.tensor import StepState
from smdebug_rs.modes import ModeKeys

_native._init(
    mode_keys=ModeKeys,
    step_state=StepState,
    collection=Collection,
    reduction_config=ReductionConfig,
    save_config=SaveConfig,
    save_config_mode=SaveConfigMode,
    exceptions=exceptions,
)
