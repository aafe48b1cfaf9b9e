"""``smdebug.trials.utils``: ``create_trial``, which opens a trial on local disk or
``s3://bucket/prefix``."""

import os

from smdebug_rs.exceptions import SMDebugNotImplementedError
from smdebug_rs.trials.local_trial import LocalTrial
from smdebug_rs.trials.s3_trial import S3Trial
from smdebug_rs.trials.trial import Trial

__all__ = ["create_trial"]


def create_trial(path, name=None, profiler=False, output_dir="/opt/ml/processing/outputs/",
                 **kwargs):
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
        return Trial(path, name, **kwargs)
    return LocalTrial(name, path, **flags, **kwargs)
