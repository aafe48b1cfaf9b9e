"""``smdebug.core.access_layer.utils``."""

import os
from typing import Union

from smdebug_rs._native import has_training_ended as _has_training_ended


def has_training_ended(trial_prefix: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether the job at ``trial_prefix`` (local or ``s3://``) wrote its end marker."""
    return _has_training_ended(str(trial_prefix))


__all__ = ["has_training_ended"]
