"""``smdebug.trials.local_trial``: ``LocalTrial``.

The original has one class per storage; here one class reads both, so ``LocalTrial`` is
:class:`smdebug_rs.trials.trial.Trial` itself.
"""

from smdebug_rs.trials.trial import Trial

__all__ = ["LocalTrial"]

LocalTrial = Trial
