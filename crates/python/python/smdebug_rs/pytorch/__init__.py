"""``smdebug_rs.pytorch``: a drop-in for ``smdebug.pytorch`` (the PyTorch module hook),
writing through the Rust hook. See :mod:`smdebug_rs.pytorch.hook` and docs/src/python.md
("PyTorch")."""

from smdebug_rs import modes
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode
from smdebug_rs.pytorch.collection import Collection, CollectionKeys
from smdebug_rs.pytorch.hook import Hook
from smdebug_rs.pytorch.singleton_utils import del_hook, get_collection, get_hook, set_hook
from smdebug_rs.trials import create_trial

__all__ = [
    "Hook",
    "SaveConfig",
    "SaveConfigMode",
    "ReductionConfig",
    "Collection",
    "CollectionKeys",
    "modes",
    "create_trial",
    "get_hook",
    "set_hook",
    "del_hook",
    "get_collection",
]
