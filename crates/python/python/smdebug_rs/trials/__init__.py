"""``smdebug.trials``: ``create_trial`` and the ``Trial`` class.

``create_trial(path)`` opens a trial on local disk or ``s3://bucket/prefix`` and returns a
:class:`Trial` with smdebug's methods, keywords and defaults; reads run in Rust with the GIL
released. Beyond the original: ``to_arrow()`` / ``to_pandas()`` and ``health()``.
"""

from smdebug_rs.trials.local_trial import LocalTrial
from smdebug_rs.trials.s3_trial import S3Trial
from smdebug_rs.trials.trial import Trial
from smdebug_rs.trials.utils import create_trial

__all__ = ["create_trial", "Trial", "LocalTrial", "S3Trial"]
