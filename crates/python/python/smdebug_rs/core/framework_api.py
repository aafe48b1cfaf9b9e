"""What every framework module (``smdebug_rs.pytorch``, ``.mxnet``, ``.tensorflow``)
re-exports besides its own hook, collections and singleton, as the original's framework
modules do."""

from smdebug_rs import modes
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode
from smdebug_rs.trials import create_trial

__all__ = ["SaveConfig", "SaveConfigMode", "ReductionConfig", "modes", "create_trial"]

#: The names each framework module adds: its collections and its singleton's functions.
FRAMEWORK_API = ["Collection", "CollectionKeys", "get_hook", "set_hook", "del_hook",
                 "get_collection"]
