"""The MXNet hook singleton: ``get_hook``, ``set_hook``, ``del_hook``; the switches SageMaker
jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``) are those of
:mod:`smdebug_rs.core.singleton`."""

from smdebug_rs.core.singleton import (  # noqa: F401 (re-exported)
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_FILE_PATH,
    HookSlot,
    json_config_path,
    use_smdebug,
)

__all__ = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
           "json_config_path"]


def _hook_class():
    from smdebug_rs.mxnet.hook import Hook

    return Hook


_slot = HookSlot("smdebug_rs.mxnet", _hook_class)
set_hook, del_hook, get_hook, get_collection = _slot.functions(
    create_by_default=True)
