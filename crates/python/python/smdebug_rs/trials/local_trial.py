"""``smdebug.trials.local_trial``: ``LocalTrial``, a trial on local disk.

``LocalTrial(name, dirname, range_steps=None, parallel=True, check=False, index_mode=True,
cache=False)`` as the original's constructor; ``create_trial`` of a local path returns one.
"""

import os

from smdebug_rs.trials.trial import Trial

__all__ = ["LocalTrial"]


class LocalTrial(Trial):
    """A trial on local disk (``smdebug.trials.local_trial.LocalTrial``). ``parallel``,
    ``check``, ``index_mode`` and ``cache`` are kept as attributes and not acted on, as by
    ``create_trial``; the smdebug_rs keywords of ``create_trial`` are taken too."""

    def __new__(cls, name, dirname, range_steps=None, parallel=True, check=False,
                index_mode=True, cache=False, **kwargs):
        trial = super().__new__(cls, os.path.expanduser(str(dirname)), name, range_steps,
                                **kwargs)
        trial.range_steps = range_steps
        trial.parallel = parallel
        trial.check = check
        trial.index_mode = index_mode
        trial.cache = cache
        return trial

    @property
    def trial_dir(self):
        """The trial's folder (the original's ``trial_dir``)."""
        return self.path
