"""``smdebug_rs.mxnet``: a drop-in for ``smdebug.mxnet`` (the MXNet Gluon block hook),
writing through the Rust hook. See :mod:`smdebug_rs.mxnet.hook` and docs/src/python.md
("MXNet")."""

from smdebug_rs import modes
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode
from smdebug_rs.mxnet.collection import Collection, CollectionKeys
from smdebug_rs.mxnet.hook import Hook
from smdebug_rs.mxnet.singleton_utils import del_hook, get_collection, get_hook, set_hook
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
