"""``smdebug.trials.local_trial``: ``LocalTrial``, a trial on local disk.

``LocalTrial(name, dirname, range_steps=None, parallel=True, check=False, index_mode=True,
cache=False)`` as the original's constructor; ``create_trial`` of a local path returns one.
"""

import os

from smdebug_rs.trials.trial import Trial

__all__ = ["LocalTrial"]


class LocalTrial(Trial):
    """A trial on local disk (``smdebug.trials.local_trial.LocalTrial``). ``parallel``,
    ``check``, ``index_mode`` and ``cache`` are accepted and ignored, as by
    ``create_trial``; the smdebug_rs keywords of ``create_trial`` are taken too."""

    def __new__(cls, name, dirname, range_steps=None, parallel=True, check=False,
                index_mode=True, cache=False, **kwargs):
        del parallel, check, index_mode, cache
        return super().__new__(cls, os.path.expanduser(str(dirname)), name, range_steps,
                               **kwargs)

    @property
    def trial_dir(self):
        """The trial's folder (the original's ``trial_dir``)."""
        return self.path
