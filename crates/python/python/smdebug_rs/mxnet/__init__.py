"""``smdebug_rs.mxnet``: a drop-in for ``smdebug.mxnet`` (the MXNet Gluon block hook),
writing through the Rust hook. See :mod:`smdebug_rs.mxnet.hook` and docs/src/python.md
("MXNet")."""

from smdebug_rs.core import framework_api as _api
from smdebug_rs.core.framework_api import *  # noqa: F401,F403 (the common names, _api.__all__)
from smdebug_rs.mxnet.collection import Collection, CollectionKeys
from smdebug_rs.mxnet.hook import Hook
from smdebug_rs.mxnet.singleton_utils import del_hook, get_collection, get_hook, set_hook

__all__ = ["Hook"] + _api.__all__ + _api.FRAMEWORK_API
