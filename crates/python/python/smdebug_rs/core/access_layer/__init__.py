"""``smdebug.core.access_layer``: the helpers scripts use."""

from smdebug_rs.core.access_layer.utils import has_training_ended

__all__ = ["has_training_ended"]
