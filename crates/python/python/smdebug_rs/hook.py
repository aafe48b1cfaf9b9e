"""``smdebug_rs.hook``: the path of :mod:`smdebug_rs.core.hook` before it moved there, kept
because the documentation names ``smdebug_rs.hook.worker_from_env``."""

from smdebug_rs.core.hook import Hook, get_collection, get_hook, worker_from_env

__all__ = ["Hook", "get_hook", "get_collection", "worker_from_env"]
