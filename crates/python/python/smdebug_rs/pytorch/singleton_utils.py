"""The PyTorch hook singleton: ``get_hook``, ``set_hook``, ``del_hook``, and the switches
SageMaker jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``)."""

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
    from smdebug_rs.pytorch.hook import Hook

    return Hook


_slot = HookSlot("smdebug_rs.pytorch", _hook_class)


def set_hook(hook):
    """Makes ``hook`` the one ``get_hook()`` returns."""
    _slot.hook = hook


def del_hook():
    """Forgets the current hook."""
    _slot.hook = None


def get_hook(json_config_path=None, create_if_not_exists=False):
    """The PyTorch hook of this process: the one created last; else, with
    ``create_if_not_exists``, one made from the JSON configuration
    (:func:`json_config_path`); else None. None as well when ``USE_SMDEBUG`` is false.
    A configuration that cannot be used is logged and gives None."""
    return _slot.get(json_config_path, create_if_not_exists)


def get_collection(name):
    """Collection ``name`` of the current hook (``get_hook()``)."""
    return _slot.collection(_slot.hook, name)
