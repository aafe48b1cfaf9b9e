"""The MXNet hook singleton: ``get_hook``, ``set_hook``, ``del_hook``; the switches SageMaker
jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``) are those of
:mod:`smdebug_rs.core.singleton`."""

from smdebug_rs.core.singleton import (  # noqa: F401 (re-exported)
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_FILE_PATH,
    SINGLETON_API,
    HookSlot,
    json_config_path,
    use_smdebug,
)

__all__ = list(SINGLETON_API)

_slot = HookSlot("smdebug_rs.mxnet", "smdebug_rs.mxnet.hook:Hook")
set_hook, del_hook, get_hook, get_collection = _slot.functions(create_by_default=True)
