"""``smdebug_rs.pytorch``: a drop-in for ``smdebug.pytorch`` (the PyTorch module hook),
writing through the Rust hook. See :mod:`smdebug_rs.pytorch.hook` and docs/src/python.md
("PyTorch")."""

from smdebug_rs.core import framework_api as _api
from smdebug_rs.core.framework_api import *  # noqa: F401,F403 (the common names, _api.__all__)
from smdebug_rs.pytorch.collection import Collection, CollectionKeys
from smdebug_rs.pytorch.hook import Hook
from smdebug_rs.pytorch.singleton_utils import del_hook, get_collection, get_hook, set_hook

__all__ = ["Hook"] + _api.__all__ + _api.FRAMEWORK_API
