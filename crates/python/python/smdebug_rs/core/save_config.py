"""``smdebug.core.save_config``: when a collection is saved (``SaveConfig``,
``SaveConfigMode``), with the original's constructors and JSON form.

The classes are the native ones (``smdebug_rs._native``, wrapping
``smdebug_config::SaveConfig``): defaults and the save decision are the Rust crate's. A
config assigned to a collection (or given to a constructor or a hook) is copied there; a
config read from an object (``collection.save_config``, ``mode_save_configs[mode]``) is a
view of that object's, so changes through it reach the object.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Union

from smdebug_rs import _native
from smdebug_rs.core._views import ListView, ModeMapView, live
from smdebug_rs.exceptions import SMDebugTypeError
from smdebug_rs.modes import ModeKeys

__all__ = ["SaveConfig", "SaveConfigMode"]

# The original's module constants, read from the native defaults (the only ones).
_DEFAULT = _native.SaveConfigMode()
DEFAULT_SAVE_CONFIG_INTERVAL = _native.SaveConfigMode.DEFAULT_SAVE_INTERVAL
DEFAULT_SAVE_CONFIG_START_STEP = _DEFAULT.start_step
DEFAULT_SAVE_CONFIG_END_STEP = _DEFAULT.end_step
del _DEFAULT
ALLOWED_PARAMS = ["save_interval", "save_steps", "start_step", "end_step"]


class SaveConfigMode(_native.SaveConfigMode):
    """The save settings of one mode: every ``save_interval`` steps from ``start_step``
    (inclusive) to ``end_step`` (exclusive), and at each of ``save_steps``:
    ``SaveConfigMode(save_interval=None, start_step=None, end_step=None, save_steps=None)``."""

    save_steps = live(_native.SaveConfigMode.save_steps, ListView)

    @classmethod
    def from_dict(cls, params: Optional[Mapping[str, Any]],
                  default_values: Optional[Mapping[str, Any]] = None
                  ) -> Optional[SaveConfigMode]:
        """A mode config from its JSON object form (missing keys from ``default_values``)."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"params={params} is not a dict.")
        merged = dict(default_values or {})
        merged.update({k: v for k, v in params.items() if v is not None})
        return cls(**{k: merged.get(k) for k in ALLOWED_PARAMS})

    def __repr__(self) -> str:
        return f"<class SaveConfigMode: {self.to_json_dict()}>"


class SaveConfig(_native.SaveConfig):
    """Save settings per mode: ``SaveConfig(save_interval=10)`` for every mode, or
    ``SaveConfig(mode_save_configs={modes.TRAIN: SaveConfigMode(...), ...})``; modes left
    out take the hook's."""

    mode_save_configs = live(_native.SaveConfig.mode_save_configs, ModeMapView)

    @classmethod
    def from_dict(cls, params: Optional[Mapping[Any, Any]],
                  default_values: Optional[Mapping[str, Any]] = None) -> Optional[SaveConfig]:
        """A config from its JSON object form (keys: mode names or ModeKeys; values: mode
        configs, their JSON form, or None)."""
        if params is None:
            return None
        return cls(
            mode_save_configs={
                k: (
                    v if v is None or isinstance(v, SaveConfigMode)
                    else SaveConfigMode.from_dict(v, default_values)
                )
                for k, v in params.items()
            }
        )

    @classmethod
    def from_save_config_mode(cls, save_config_mode: _native.SaveConfigMode) -> SaveConfig:
        """Every mode with ``save_config_mode``."""
        return cls(mode_save_configs={m: save_config_mode for m in ModeKeys})

    @classmethod
    def parse(cls, obj: Union[_native.SaveConfig, _native.SaveConfigMode, Dict[Any, Any], None]
              ) -> _native.SaveConfig:
        """None, a SaveConfig, a SaveConfigMode or a dict, as a SaveConfig."""
        if obj is None:
            return cls()
        if isinstance(obj, _native.SaveConfig):
            return obj
        if isinstance(obj, _native.SaveConfigMode):
            return cls.from_save_config_mode(obj)
        if isinstance(obj, dict):
            parsed = cls.from_dict(obj)
            assert parsed is not None
            return parsed
        raise SMDebugTypeError(f"obj={obj} cannot be parsed into a SaveConfig object")

    def __repr__(self) -> str:
        return f"<class SaveConfig: {dict(self.mode_save_configs)}>"
