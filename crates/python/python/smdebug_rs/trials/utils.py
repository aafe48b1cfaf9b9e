"""``smdebug.trials.utils``: ``create_trial``, which opens a trial on local disk or
``s3://bucket/prefix``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from smdebug_rs.exceptions import SMDebugNotImplementedError
from smdebug_rs.trials.local_trial import LocalTrial
from smdebug_rs.trials.s3_trial import S3Trial
from smdebug_rs.trials.trial import Trial

if TYPE_CHECKING:
    from typing_extensions import TypedDict, Unpack

    class _TrialKeywords(TypedDict, total=False):
        """The keywords ``create_trial`` passes on."""

        range_steps: Optional[Tuple[Optional[int], Optional[int]]]
        collections_timeout: Optional[float]
        cache_bytes: Optional[int]
        skip_corrupt_index_files: bool
        parallel: bool
        check: bool
        index_mode: bool
        cache: bool

__all__ = ["create_trial"]


def create_trial(path: Union[str, "os.PathLike[str]"], name: Optional[str] = None,
                 profiler: bool = False, output_dir: str = "/opt/ml/processing/outputs/",
                 **kwargs: Unpack[_TrialKeywords]) -> Trial:
    """Opens the trial at ``path`` (a local folder or ``s3://bucket/prefix``).

    ``name`` defaults to the last component of the path; ``range_steps=(begin, end)`` loads
    only those steps. smdebug's ``parallel``, ``check``, ``index_mode`` and ``cache`` are
    kept as the trial's attributes and not acted on (reads are always parallel and
    indexed). smdebug_rs extras:
    ``collections_timeout`` (seconds to wait for the collections files; default: until the
    job ends, as smdebug), ``cache_bytes``, ``skip_corrupt_index_files``.

    Blocks until every worker's collections file exists; raises ``MissingCollectionFiles``
    if the job ended without them.
    """
    if profiler:
        raise SMDebugNotImplementedError("smdebug_rs does not read profiler trials")
    del output_dir
    flags = {k: kwargs.pop(k) for k in ("parallel", "check", "index_mode", "cache")
             if k in kwargs}
    path = str(path).strip()
    if name is None:
        name = os.path.basename(path)
    if path.startswith("s3://"):
        bucket, _, prefix = path[len("s3://"):].partition("/")
        flags.pop("parallel", None)  # the original's S3Trial takes no `parallel`
        return S3Trial(name, bucket, prefix, **flags, **kwargs)
    if "://" in path:
        options: Dict[str, Any] = dict(kwargs)
        return Trial(path, name, **options)
    return LocalTrial(name, path, **flags, **kwargs)
