"""``smdebug.core.collection``: collections of tensors.

``Collection`` is the native class (``smdebug_rs._native``, wrapping
``smdebug_config::Collection``). ``hook.get_collection(name)`` gives a handle of the hook's
own collection: ``include``, ``add_tensor_name`` and attribute assignments change what the
hook prepares at its first step. ``trial.collections()`` gives ``{name: Collection}`` with
their own values. ``include_regex`` reads as a list and ``tensor_names`` as a set that
change the collection when changed; ``reduction_config`` and ``save_config`` read as views
of the collection's (or None) and are copied in when assigned.
"""

import json
from typing import Any, Dict

from smdebug_rs import _native
from smdebug_rs.core._views import ListView, SetView, live

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


class Collection(_native.Collection):
    """A named group of tensors: by regex (``re.search``) and by explicit name.
    ``Collection(name, include_regex=None, tensor_names=None, reduction_config=None,
    save_config=None, save_histogram=True)``."""

    include_regex = live(_native.Collection.include_regex, ListView)
    tensor_names = live(_native.Collection.tensor_names, SetView)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The native constructor did the work; subclasses call this with its arguments.
        pass

    @classmethod
    def from_dict(cls, params: Dict[str, Any]) -> "Collection":
        """A collection from its JSON object form."""
        c = cls.from_json(json.dumps(params))
        assert isinstance(c, Collection)
        return c

    def __repr__(self) -> str:
        return (
            f"<Collection: name={self.name}, include_regex={list(self.include_regex)}, "
            f"tensor_names={sorted(self.tensor_names)}>"
        )
