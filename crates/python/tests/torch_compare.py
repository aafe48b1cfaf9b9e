"""Reads a trial with the ORIGINAL reader (``smdebug.trials``) into plain dicts, to compare
the trials written by smdebug.pytorch and smdebug_rs.pytorch (test_pytorch_vs_original.py).
"""

import logging

import numpy as np


def read(path):
    """``{"tensors": {name: {(mode name, mode step): array}}, "collections": {name: sorted
    tensor names}, "workers": [...], "steps": {mode name: [global steps]}}`` as the original's
    ``create_trial`` sees ``path`` (every worker: the values of all are kept, keyed
    ``(mode, step, worker)`` when there are several)."""
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    logging.getLogger("smdebug").setLevel(logging.ERROR)
    trial = create_trial(path)
    workers = sorted(trial.workers())
    tensors = {}
    for name in trial.tensor_names():
        t = trial.tensor(name)
        vals = {}
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL):
            for step in t.steps(mode=mode):
                for w in (t.workers(step, mode=mode) if len(workers) > 1 else [None]):
                    key = (mode.name, step) if w is None else (mode.name, step, w)
                    vals[key] = np.asarray(t.value(step, mode=mode, worker=w))
        tensors[name] = vals
    collections = {n: sorted(c.tensor_names) for n, c in trial.collections().items()}
    steps = {m.name: trial.steps(mode=m) for m in trial.modes()}
    return {"tensors": tensors, "collections": collections, "workers": workers,
            "steps": steps, "num_workers": trial.num_workers}
