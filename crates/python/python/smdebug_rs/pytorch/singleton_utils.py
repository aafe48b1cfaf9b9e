"""The PyTorch hook singleton: ``get_hook``, ``set_hook``, ``del_hook``, and the switches
SageMaker jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``)."""

import os

from smdebug_rs.core.logger import get_logger

__all__ = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
           "json_config_path"]

DEFAULT_CONFIG_FILE_PATH = "/opt/ml/input/config/debughookconfig.json"
CONFIG_FILE_PATH_ENV = "SMDEBUG_CONFIG_FILE_PATH"

_hook = None

_FALSE = {"false", "0", "no", "n", "off", "f"}


def use_smdebug(environ=None):
    """False when ``USE_SMDEBUG`` is a false word (``false``, ``0``, ``no``, ``off`` …), as
    the original's config validator reads it; then ``get_hook`` returns None and the
    zero-code-change hook is not attached."""
    env = os.environ if environ is None else environ
    return env.get("USE_SMDEBUG", "true").strip().lower() not in _FALSE


def json_config_path(explicit=None, environ=None):
    """The hook configuration file to use, or None if there is none: ``explicit`` if given
    (None if it does not exist), else ``$SMDEBUG_CONFIG_FILE_PATH``, else SageMaker's
    ``/opt/ml/input/config/debughookconfig.json``."""
    env = os.environ if environ is None else environ
    if explicit is not None:
        return str(explicit) if os.path.isfile(explicit) else None
    for p in (env.get(CONFIG_FILE_PATH_ENV), DEFAULT_CONFIG_FILE_PATH):
        if p and os.path.isfile(p):
            return p
    return None


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

    try:
        Hook.create_from_json_file(json_config_path)
    except FileNotFoundError:
        pass
    except Exception as e:  # noqa: BLE001 - get_hook never raises (as the original)
        get_logger().error("smdebug_rs.pytorch: get_hook could not create a hook (%s: %s)",
                           type(e).__name__, e, exc_info=e)
    return _hook


def get_collection(name):
    """Collection ``name`` of the current hook (``get_hook()``)."""
    if _hook is None:
        raise RuntimeError("no smdebug_rs.pytorch.Hook has been created yet")
    return _hook.get_collection(name)
