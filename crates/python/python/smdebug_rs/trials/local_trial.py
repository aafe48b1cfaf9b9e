"""``smdebug.trials.local_trial``: ``LocalTrial``, a trial on local disk.

``LocalTrial(name, dirname, range_steps=None, parallel=True, check=False, index_mode=True,
cache=False)`` as the original's constructor; ``create_trial`` of a local path returns one.
"""

import os
from typing import Any, Optional, Tuple

from smdebug_rs.trials.trial import Trial

__all__ = ["LocalTrial"]


class LocalTrial(Trial):
    """A trial on local disk (``smdebug.trials.local_trial.LocalTrial``). ``parallel``,
    ``check``, ``index_mode`` and ``cache`` are kept as attributes and not acted on, as by
    ``create_trial``; the smdebug_rs keywords of ``create_trial`` are taken too."""

    def __new__(cls, name: str, dirname: "str | os.PathLike[str]",
                range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
                parallel: bool = True, check: bool = False, index_mode: bool = True,
                cache: bool = False, **kwargs: Any) -> "LocalTrial":
        trial = super().__new__(cls, os.path.expanduser(str(dirname)), name, range_steps,
                                **kwargs)
        trial.range_steps = range_steps
        trial.parallel = parallel
        trial.check = check
        trial.index_mode = index_mode
        trial.cache = cache
        return trial

    @property
    def trial_dir(self) -> str:
        """The trial's folder (the original's ``trial_dir``)."""
        return self.path
