"""smdebug_rs: smdebug's trial reader and rules, in Rust.

A drop-in for ``smdebug.trials`` and ``smdebug.rules``: change ``smdebug`` to
``smdebug_rs`` in the imports of an analysis script or a rule file.

    from smdebug_rs.trials import create_trial
    from smdebug_rs import modes

    trial = create_trial("s3://bucket/run")
    loss = trial.tensor("loss").value(10, mode=modes.TRAIN)   # a numpy array
"""

from smdebug_rs import modes
from smdebug_rs._native import __version__
from smdebug_rs.modes import ModeKeys

__all__ = ["__version__", "modes", "ModeKeys"]
