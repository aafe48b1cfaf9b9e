"""smdebug_rs: smdebug's trial reader, rules and writer hook, in Rust.

A drop-in for ``smdebug.trials`` and ``smdebug.rules``: change ``smdebug`` to
``smdebug_rs`` in the imports of an analysis script or a rule file.

    from smdebug_rs.trials import create_trial
    from smdebug_rs import modes

    trial = create_trial("s3://bucket/run")
    loss = trial.tensor("loss").value(10, mode=modes.TRAIN)   # a numpy array

Diagnosis: ``smdebug_rs.doctor(path)`` and ``smdebug_rs.seal(path)`` return what
``smdebug doctor --json`` and ``smdebug seal`` report, ``trial.health()`` what
``smdebug health --json`` prints.

The live web view: ``smdebug_rs.serve(paths, port=0)`` serves ``smdebug serve``'s pages
from a notebook and returns a server with ``.url`` and ``.stop()``.

And the writer hook for training loops (``smdebug_rs.Hook``; ``smdebug_rs.xgboost.Hook``
for ``xgboost.train``), which writes trials smdebug reads as its own.
"""

# First: binds the native module to the package's classes before any other module runs.
from smdebug_rs import _bind  # noqa: F401  isort: skip
from smdebug_rs import modes
from smdebug_rs._native import Server, __version__, serve
from smdebug_rs.core.collection import Collection, CollectionKeys
from smdebug_rs.core.hook import Hook, get_collection, get_hook
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode
from smdebug_rs.diagnose import doctor, seal, verify
from smdebug_rs.modes import ModeKeys

__all__ = [
    "__version__",
    "modes",
    "ModeKeys",
    "Hook",
    "SaveConfig",
    "SaveConfigMode",
    "ReductionConfig",
    "Collection",
    "CollectionKeys",
    "get_collection",
    "get_hook",
    "doctor",
    "seal",
    "verify",
    "serve",
    "Server",
]
