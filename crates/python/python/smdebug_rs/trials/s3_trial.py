"""``smdebug.trials.s3_trial``: ``S3Trial``.

The original has one class per storage; here one class reads both, so ``S3Trial`` is
:class:`smdebug_rs.trials.trial.Trial` itself.
"""

from smdebug_rs.trials.trial import Trial

__all__ = ["S3Trial"]

S3Trial = Trial
