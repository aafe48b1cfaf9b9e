"""The Keras hook singleton: ``get_hook``, ``set_hook``, ``del_hook``; the switches SageMaker
jobs use (``SMDEBUG_CONFIG_FILE_PATH``, ``USE_SMDEBUG``) are those of
:mod:`smdebug_rs.core.singleton`."""

from smdebug_rs.core.logger import get_logger
from smdebug_rs.core.singleton import (  # noqa: F401 (re-exported)
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_FILE_PATH,
    SINGLETON_API,
    HookSlot,
    json_config_path,
    use_smdebug,
)

__all__ = list(SINGLETON_API)

_slot = HookSlot("smdebug_rs.tensorflow", "smdebug_rs.tensorflow.keras:KerasHook")
set_hook, del_hook, _get_keras_hook, get_collection = _slot.functions(create_by_default=False)


def get_hook(hook_type=None, json_config_path=None, create_if_not_exists=False):
    """The Keras hook of this process: the one created last; else, with
    ``create_if_not_exists``, one made from the JSON configuration
    (:func:`smdebug_rs.core.singleton.json_config_path`); else None. None as well when
    ``USE_SMDEBUG`` is false. A configuration that cannot be used is logged and gives None.

    The original's signature: ``hook_type`` may be ``"keras"`` or None (the only hook
    here); ``"session"`` and ``"estimator"`` (TF1 hooks, not provided) give None."""
    if create_if_not_exists and hook_type not in (None, "keras") and _slot.hook is None:
        get_logger().error("smdebug_rs.tensorflow: hook_type=%r is not provided (only "
                           "'keras')", hook_type)
        return None
    return _get_keras_hook(json_config_path, create_if_not_exists)
