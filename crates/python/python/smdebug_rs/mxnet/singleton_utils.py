"""The MXNet hook singleton: ``get_hook``, ``set_hook``, ``del_hook``; the switches SageMaker
jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``) are those of
:mod:`smdebug_rs.core.singleton`."""

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


def get_hook(json_config_path=None, create_if_not_exists=True):
    """The MXNet hook of this process: the one created last; else (unless
    ``create_if_not_exists=False``) one made from the JSON configuration
    (:func:`smdebug_rs.core.singleton.json_config_path`); else None. None as well when
    ``USE_SMDEBUG`` is false. A configuration that cannot be used is logged and gives None.

    The original's ``smdebug.mxnet.get_hook(json_config_path=None)`` always creates one
    when it can (it has no ``create_if_not_exists``); so does this by default."""
    if not use_smdebug():
        return None
    if _hook is not None or not create_if_not_exists:
        return _hook
    from smdebug_rs.mxnet.hook import Hook

    create_from_json(Hook, json_config_path, "smdebug_rs.mxnet")
    return _hook


def get_collection(name):
    """Collection ``name`` of the current hook (``get_hook()``)."""
    hook = get_hook()
    if hook is None:
        raise RuntimeError("no smdebug_rs.mxnet.Hook has been created yet")
    return hook.get_collection(name)
