"""What the framework hooks' singletons share (``smdebug_rs.pytorch.singleton_utils``,
``smdebug_rs.mxnet.singleton_utils``): the switches SageMaker jobs use
(``USE_SMDEBUG``, ``SMDEBUG_CONFIG_FILE_PATH``) and making a hook from the JSON
configuration without ever raising."""

from typing import Any, Optional

import importlib
import os

from smdebug_rs.core.logger import get_logger

__all__ = ["DEFAULT_CONFIG_FILE_PATH", "CONFIG_FILE_PATH_ENV", "use_smdebug",
           "json_config_path", "create_from_json", "HookSlot", "SINGLETON_API"]

#: What every framework's ``singleton_utils`` exports.
SINGLETON_API = ["get_hook", "get_collection", "set_hook", "del_hook", "use_smdebug",
                 "json_config_path"]

DEFAULT_CONFIG_FILE_PATH = "/opt/ml/input/config/debughookconfig.json"
CONFIG_FILE_PATH_ENV = "SMDEBUG_CONFIG_FILE_PATH"

_FALSE = {"false", "0", "no", "n", "off", "f"}


def use_smdebug(environ: Any = None) -> Any:
    """False when ``USE_SMDEBUG`` is a false word (``false``, ``0``, ``no``, ``off`` …), as
    the original's config validator reads it; then ``get_hook`` returns None and the
    zero-code-change hook is not attached."""
    env = os.environ if environ is None else environ
    return env.get("USE_SMDEBUG", "true").strip().lower() not in _FALSE


def json_config_path(explicit: Any = None, environ: Any = None) -> Any:
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


def create_from_json(hook_class: Any, json_file_path: Any, label: Any) -> Any:
    """``hook_class.create_from_json_file(json_file_path)``, or None when there is no
    configuration; any other problem is logged (as ``label``) and gives None too: ``get_hook``
    never raises, as the original."""
    try:
        return hook_class.create_from_json_file(json_file_path)
    except FileNotFoundError:
        return None
    except Exception as e:  # noqa: BLE001 - get_hook never raises (as the original)
        get_logger().error("%s: get_hook could not create a hook (%s: %s)", label,
                           type(e).__name__, e, exc_info=e)
        return None


class HookSlot:
    """The one hook of a framework in this process, behind its ``singleton_utils``
    functions (:meth:`functions`). ``hook_class`` names the framework's hook class as
    ``"module:Class"``; it is imported only when a hook is made from the JSON configuration
    (the hook's module imports its singleton, so the class cannot be imported here first)."""

    def __init__(self, label: Any, hook_class: Any) -> None:
        self.label = label
        self.hook = None
        self._hook_class_path = hook_class

    def _hook_class(self) -> Any:
        module, name = self._hook_class_path.split(":")
        return getattr(importlib.import_module(module), name)

    def functions(self, create_by_default: Any) -> Any:
        """``(set_hook, del_hook, get_hook, get_collection)`` of the framework's module;
        ``get_hook``'s ``create_if_not_exists`` defaults to ``create_by_default`` (the
        original's MXNet ``get_hook`` always creates, its PyTorch one only when asked)."""
        slot = self

        def set_hook(hook: Any) -> Any:
            """Makes ``hook`` the one ``get_hook()`` returns."""
            slot.hook = hook

        def del_hook() -> Any:
            """Forgets the current hook."""
            slot.hook = None

        def get_hook(json_config_path: Optional[str] = None,
                     create_if_not_exists: bool = create_by_default) -> Any:
            """The framework's hook of this process: the one created last; else, with
            ``create_if_not_exists``, one made from the JSON configuration
            (:func:`json_config_path`); else None. None as well when ``USE_SMDEBUG`` is
            false. A configuration that cannot be used is logged and gives None."""
            if not use_smdebug():
                return None
            if slot.hook is None and create_if_not_exists:
                create_from_json(slot._hook_class(), json_config_path, slot.label)
            return slot.hook

        def get_collection(name: Any) -> Any:
            """Collection ``name`` of the current hook (``get_hook()``)."""
            hook = get_hook()
            if hook is None:
                raise RuntimeError(f"no {slot.label}.Hook has been created yet")
            return hook.get_collection(name)

        return set_hook, del_hook, get_hook, get_collection
