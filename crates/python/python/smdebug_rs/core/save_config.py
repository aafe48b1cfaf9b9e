"""``smdebug.core.save_config``: when a collection is saved (``SaveConfig``,
``SaveConfigMode``), with the original's constructors and JSON form."""

import json

from smdebug_rs.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug_rs.modes import ModeKeys

__all__ = ["SaveConfig", "SaveConfigMode"]

DEFAULT_SAVE_CONFIG_INTERVAL = 500
DEFAULT_SAVE_CONFIG_START_STEP = 0
DEFAULT_SAVE_CONFIG_END_STEP = None
ALLOWED_PARAMS = ["save_interval", "save_steps", "start_step", "end_step"]


class SaveConfigMode:
    """The save settings of one mode: every ``save_interval`` steps from ``start_step``
    (inclusive) to ``end_step`` (exclusive), and at each of ``save_steps``."""

    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None):
        self.save_interval = (
            DEFAULT_SAVE_CONFIG_INTERVAL if save_interval is None else int(save_interval)
        )
        self.save_steps = [] if save_steps is None else save_steps
        self.start_step = DEFAULT_SAVE_CONFIG_START_STEP if start_step is None else int(start_step)
        self.end_step = DEFAULT_SAVE_CONFIG_END_STEP if end_step is None else int(end_step)
        self._check()

    def _check(self):
        if not isinstance(self.save_steps, list) or not all(
            isinstance(x, int) for x in self.save_steps
        ):
            raise SMDebugValueError(f"save_steps={self.save_steps} must be type(list(int))")

    def to_json_dict(self):
        """The JSON object form the collections file holds."""
        return {
            "save_interval": self.save_interval,
            "save_steps": list(self.save_steps),
            "start_step": self.start_step,
            "end_step": self.end_step,
        }

    @classmethod
    def from_dict(cls, params, default_values=None):
        """A mode config from its JSON object form (missing keys from ``default_values``)."""
        if params is None:
            return None
        merged = dict(default_values or {})
        merged.update({k: v for k, v in params.items() if v is not None})
        return cls(**{k: merged.get(k) for k in ALLOWED_PARAMS})

    def should_save_step(self, step_num):
        """Whether step ``step_num`` of this mode is saved."""
        if step_num in self.save_steps:
            return True
        if self.start_step <= step_num and (self.end_step is None or step_num < self.end_step):
            return self.save_interval > 0 and step_num % self.save_interval == 0
        return False

    def __eq__(self, other):
        return isinstance(other, SaveConfigMode) and self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return f"<class SaveConfigMode: {self.to_json_dict()}>"


class SaveConfig:
    """Save settings per mode: ``SaveConfig(save_interval=10)`` for every mode, or
    ``SaveConfig(mode_save_configs={modes.TRAIN: SaveConfigMode(...), ...})``; modes left
    out take the hook's."""

    def __init__(
        self,
        mode_save_configs=None,
        save_interval=None,
        start_step=None,
        end_step=None,
        save_steps=None,
    ):
        if mode_save_configs is None:
            self.mode_save_configs = {
                m: SaveConfigMode(save_interval, start_step, end_step, save_steps)
                for m in ModeKeys
            }
        else:
            configs = {}
            for mode, value in mode_save_configs.items():
                key = _mode(mode)
                if value is not None and not isinstance(value, SaveConfigMode):
                    raise SMDebugValueError(
                        f"Each key,value in mode_save_configs={mode_save_configs} must be of "
                        "type ModeKey,SaveConfigMode"
                    )
                configs[key] = value
            self.mode_save_configs = {m: configs.get(m) for m in ModeKeys}

    def get_save_config(self, mode):
        """The config of ``mode``."""
        return self.mode_save_configs[_mode(mode)]

    def set_save_config(self, mode, save_config_mode):
        """Sets the config of ``mode``."""
        if not isinstance(save_config_mode, SaveConfigMode):
            raise SMDebugValueError(
                f"save_config_mode={save_config_mode} must be type SaveConfigMode"
            )
        self.mode_save_configs[_mode(mode)] = save_config_mode

    def to_json_dict(self):
        """The JSON object form: mode names to mode configs (or None)."""
        return {m.name: (c.to_json_dict() if c else None) for m, c in self.mode_save_configs.items()}

    def to_json(self):
        """``json.dumps(to_json_dict())``."""
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params, default_values=None):
        """A config from its JSON object form (keys: mode names or ModeKeys)."""
        if params is None:
            return None
        return cls(
            mode_save_configs={
                _mode(k): (
                    v if v is None or isinstance(v, SaveConfigMode)
                    else SaveConfigMode.from_dict(v, default_values)
                )
                for k, v in params.items()
            }
        )

    @classmethod
    def from_json(cls, text):
        """A config from ``to_json()`` text."""
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_save_config_mode(cls, save_config_mode):
        """Every mode with ``save_config_mode``."""
        return cls(mode_save_configs={m: save_config_mode for m in ModeKeys})

    @classmethod
    def parse(cls, obj):
        """None, a SaveConfig, a SaveConfigMode or a dict, as a SaveConfig."""
        if obj is None:
            return cls()
        if isinstance(obj, SaveConfig):
            return obj
        if isinstance(obj, SaveConfigMode):
            return cls.from_save_config_mode(obj)
        if isinstance(obj, dict):
            return cls.from_dict(obj)
        raise SMDebugTypeError(f"obj={obj} cannot be parsed into a SaveConfig object")

    def __eq__(self, other):
        return isinstance(other, SaveConfig) and self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return f"<class SaveConfig: {self.mode_save_configs}>"


def _mode(m):
    if isinstance(m, ModeKeys):
        return m
    if isinstance(m, str):
        return ModeKeys[m]
    name = getattr(m, "name", None)  # the original's ModeKeys
    if name is not None:
        return ModeKeys[name]
    return ModeKeys(m)
