"""``smdebug.core.reduction_config``: which reductions of a tensor are saved."""

import json

__all__ = ["ReductionConfig"]

ALLOWED_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
ALLOWED_NORMS = ["l1", "l2"]


class ReductionConfig:
    """Reductions to save instead of (or with) the raw tensor: ``reductions`` and
    ``abs_reductions`` among min, max, mean, std, variance, sum, prod; ``norms`` and
    ``abs_norms`` among l1, l2; ``save_raw_tensor``; ``save_shape``. The hook checks the
    names when it starts (``SMDebugValueError`` naming the bad one)."""

    def __init__(
        self,
        reductions=None,
        abs_reductions=None,
        norms=None,
        abs_norms=None,
        save_raw_tensor=False,
        save_shape=False,
    ):
        self.reductions = list(reductions or [])
        self.abs_reductions = list(abs_reductions or [])
        self.norms = list(norms or [])
        self.abs_norms = list(abs_norms or [])
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape

    def to_json_dict(self):
        """The JSON object form, as smdebug writes it (one comma-separated string)."""
        parts = list(self.reductions)
        parts += [f"{r}_norm" for r in self.norms]
        parts += [f"abs_{r}" for r in self.abs_reductions]
        parts += [f"abs_{r}_norm" for r in self.abs_norms]
        return {
            "save_raw_tensor": self.save_raw_tensor,
            "reductions": ",".join(parts),
            "save_shape": self.save_shape,
        }

    def to_json(self):
        """``json.dumps(to_json_dict())``."""
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params):
        """A config from its JSON object form."""
        if params is None:
            return None
        c = cls(save_raw_tensor=params.get("save_raw_tensor", False),
                save_shape=params.get("save_shape", False))
        for r in filter(None, (params.get("reductions") or "").split(",")):
            r = r.strip()
            absolute = r.startswith("abs_")
            base = r[4:] if absolute else r
            if base.endswith("_norm"):
                (c.abs_norms if absolute else c.norms).append(base[:-5])
            else:
                (c.abs_reductions if absolute else c.reductions).append(base)
        return c

    @classmethod
    def from_json(cls, text):
        """A config from ``to_json()`` text."""
        return cls.from_dict(json.loads(text))

    def __eq__(self, other):
        return isinstance(other, ReductionConfig) and self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return f"<class ReductionConfig: {self.to_json_dict()}>"
