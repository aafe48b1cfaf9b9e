"""The PyTorch hook singleton: ``get_hook``, ``set_hook``, ``del_hook``, and the switches
SageMaker jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``)."""

from smdebug_rs.core.singleton import (  # noqa: F401 (re-exported)
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_FILE_PATH,
    create_from_json,
    json_config_path,
    use_smdebug,
)

__all__ = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
           "json_config_path"]

_hook = None


def set_hook(hook):
    """Makes ``hook`` the one ``get_hook()`` returns."""
    global _hook
    _hook = hook


def del_hook():
    """Forgets the current hook."""
    global _hook
    _hook = None


def get_hook(json_config_path=None, create_if_not_exists=False):
    """The PyTorch hook of this process: the one created last; else, with
    ``create_if_not_exists``, one made from the JSON configuration
    (:func:`json_config_path`); else None. None as well when ``USE_SMDEBUG`` is false.
    A configuration that cannot be used is logged and gives None."""
    if not use_smdebug():
        return None
    if _hook is not None or not create_if_not_exists:
        return _hook
    from smdebug_rs.pytorch.hook import Hook

    create_from_json(Hook, json_config_path, "smdebug_rs.pytorch")
    return _hook


def get_collection(name):
    """Collection ``name`` of the current hook (``get_hook()``)."""
    if _hook is None:
        raise RuntimeError("no smdebug_rs.pytorch.Hook has been created yet")
    return _hook.get_collection(name)
