"""``smdebug.core.collection``: collections as a trial reports them.

``trial.collections()`` gives ``{name: Collection}``; a Collection has ``name``,
``include_regex``, ``tensor_names`` (a set), ``reduction_config`` and ``save_config`` (their
JSON form, or None), ``save_histogram``, and ``to_json_dict()`` / ``to_json()`` as the
original writes them.
"""

import json
import re

__all__ = ["Collection", "CollectionKeys"]


class CollectionKeys:
    """Names of the built-in collections."""

    DEFAULT = "default"
    ALL = "all"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    LAYERS = "layers"
    WEIGHTS = "weights"
    GRADIENTS = "gradients"
    BIASES = "biases"
    LOSSES = "losses"
    SCALARS = "scalars"
    OPTIMIZER_VARIABLES = "optimizer_variables"
    SEARCHABLE_SCALARS = "sm_metrics"
    METRICS = "metrics"
    HYPERPARAMETERS = "hyperparameters"
    PREDICTIONS = "predictions"
    LABELS = "labels"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


class Collection:
    """A named group of tensors: by regex (``re.search``) and by explicit name."""

    def __init__(
        self,
        name,
        include_regex=None,
        tensor_names=None,
        reduction_config=None,
        save_config=None,
        save_histogram=True,
    ):
        self.name = name
        self.include_regex = list(include_regex or [])
        self.tensor_names = set(tensor_names or [])
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = save_histogram

    @classmethod
    def _from_json(cls, text):
        d = json.loads(text)
        c = cls(d["name"])
        c._dict = d
        c.include_regex = list(d.get("include_regex") or [])
        c.tensor_names = set(d.get("tensor_names") or [])
        c.reduction_config = d.get("reduction_config")
        c.save_config = d.get("save_config")
        c.save_histogram = d.get("save_histogram", True)
        return c

    @classmethod
    def from_dict(cls, d):
        """A collection from its JSON object form."""
        return cls._from_json(json.dumps(d))

    @classmethod
    def from_json(cls, text):
        """A collection from ``to_json()`` text."""
        return cls._from_json(text)

    def include(self, t):
        """Adds a regex (or a list of them)."""
        self.include_regex.extend([t] if isinstance(t, str) else list(t))

    def add_tensor_name(self, name):
        """Adds a tensor by name."""
        self.tensor_names.add(name)

    def has_tensor_name(self, name):
        """Whether ``name`` was added by name."""
        return name in self.tensor_names

    def matches(self, name):
        """Whether ``name`` is in the collection, by name or by regex."""
        return name in self.tensor_names or any(re.search(r, name) for r in self.include_regex)

    def to_json_dict(self):
        """The JSON object form, as the collections file holds it."""
        base = dict(getattr(self, "_dict", {}))
        base.update(
            {
                "name": self.name,
                "include_regex": list(self.include_regex),
                "tensor_names": sorted(self.tensor_names),
                "reduction_config": self.reduction_config,
                "save_config": self.save_config,
                "save_histogram": self.save_histogram,
            }
        )
        return base

    def to_json(self):
        """``json.dumps(to_json_dict())``."""
        return json.dumps(self.to_json_dict())

    def __eq__(self, other):
        return isinstance(other, Collection) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return (
            f"<Collection: name={self.name}, include_regex={self.include_regex}, "
            f"tensor_names={sorted(self.tensor_names)}>"
        )
