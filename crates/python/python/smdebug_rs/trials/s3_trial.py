"""``smdebug.trials.s3_trial``: ``S3Trial``, a trial under an S3 prefix.

``S3Trial(name, bucket_name, prefix_name, range_steps=None, check=False, index_mode=True,
cache=False)`` as the original's constructor; ``create_trial`` of an ``s3://`` path returns
one.
"""

import os
from typing import Any, Optional, Tuple

from smdebug_rs.trials.trial import Trial

__all__ = ["S3Trial"]


class S3Trial(Trial):
    """A trial at ``s3://bucket_name/prefix_name`` (``smdebug.trials.s3_trial.S3Trial``).
    ``check``, ``index_mode`` and ``cache`` are kept as attributes and not acted on, as by
    ``create_trial``; the smdebug_rs keywords of ``create_trial`` are taken too."""

    def __new__(cls, name: str, bucket_name: str, prefix_name: str,
                range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
                check: bool = False, index_mode: bool = True, cache: bool = False,
                **kwargs: Any) -> "S3Trial":
        prefix = os.path.join(prefix_name, "")
        trial = super().__new__(cls, f"s3://{os.path.join(bucket_name, prefix)}", name,
                                range_steps, **kwargs)
        trial.range_steps = range_steps
        trial.check = check
        trial.index_mode = index_mode
        trial.cache = cache
        return trial

    @property
    def bucket_name(self) -> str:
        """The bucket."""
        return self.path[len("s3://"):].split("/", 1)[0]

    @property
    def prefix_name(self) -> str:
        """The prefix in the bucket, ending in ``/`` (as the original keeps it)."""
        rest = self.path[len("s3://"):]
        return rest.split("/", 1)[1] if "/" in rest else ""
