"""The Keras hook singleton: ``get_hook``, ``set_hook``, ``del_hook``; the switches SageMaker
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


def get_hook(hook_type=None, json_config_path=None, create_if_not_exists=False):
    """The Keras hook of this process: the one created last; else, with
    ``create_if_not_exists``, one made from the JSON configuration
    (:func:`smdebug_rs.core.singleton.json_config_path`); else None. None as well when
    ``USE_SMDEBUG`` is false. A configuration that cannot be used is logged and gives None.

    The original's signature: ``hook_type`` may be ``"keras"`` or None (the only hook
    here); ``"session"`` and ``"estimator"`` (TF1 hooks, not provided) give None."""
    if not use_smdebug():
        return None
    if _hook is not None or not create_if_not_exists:
        return _hook
    if hook_type not in (None, "keras"):
        from smdebug_rs.core.logger import get_logger

        get_logger().error("smdebug_rs.tensorflow: hook_type=%r is not provided (only "
                           "'keras')", hook_type)
        return None
    from smdebug_rs.tensorflow.keras import KerasHook

    create_from_json(KerasHook, json_config_path, "smdebug_rs.tensorflow")
    return _hook


def get_collection(name):
    """Collection ``name`` of the current hook (``get_hook()``)."""
    hook = get_hook()
    if hook is None:
        raise RuntimeError("no smdebug_rs.tensorflow.KerasHook has been created yet")
    return hook.get_collection(name)
