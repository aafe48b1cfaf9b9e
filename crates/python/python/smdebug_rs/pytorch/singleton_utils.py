"""The PyTorch hook singleton: ``get_hook``, ``set_hook``, ``del_hook``, and the switches
SageMaker jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``)."""

from smdebug_rs.core.singleton import (  # noqa: F401 (re-exported)
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_FILE_PATH,
    SINGLETON_API,
    HookSlot,
    json_config_path,
    use_smdebug,
)

__all__ = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
           "json_config_path"]  # SINGLETON_API

_slot = HookSlot("smdebug_rs.pytorch", "smdebug_rs.pytorch.hook:Hook")
set_hook, del_hook, get_hook, get_collection = _slot.functions(create_by_default=False)
