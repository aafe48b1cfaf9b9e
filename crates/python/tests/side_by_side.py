"""Side-by-side runs of the original and of smdebug_rs: one training script run once per
package, and each trial read with the ORIGINAL reader (``smdebug.trials``) into plain dicts
to compare (test_pytorch_vs_original.py, test_mxnet_vs_original.py)."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import smdebug_rs

HERE = os.path.dirname(os.path.abspath(__file__))
# The subprocesses import smdebug_rs from where this process found it.
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smdebug_rs.__file__)))


def _json_config(path, out):
    path.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [
            {"CollectionName": "weights"},
            {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "3"}},
            {"CollectionName": "losses"},
            {"CollectionName": "relus", "CollectionParameters": {"include_regex": "relu_output"}},
        ],
    }))


def run_both(base, script, configs, extra_env=None):
    """Runs ``script`` (a file of this folder) as ``script PACKAGE OUT CONFIGS`` for the
    packages ``smdebug`` and ``smdebug_rs`` at once (one core each), writing under
    ``base/PACKAGE``; the configuration ``json`` comes from the JSON file SageMaker would
    write. Fails the test if either exits non-zero; returns ``base``."""
    procs = {}
    for pkg in ("smdebug", "smdebug_rs"):
        out = base / pkg
        out.mkdir()
        cfg = base / f"{pkg}.json"
        _json_config(cfg, out / "json")
        env = dict(os.environ, SMDEBUG_CONFIG_FILE_PATH=str(cfg), SMDEBUG_LOG_LEVEL="error",
                   PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   **(extra_env or {}))
        env.pop("USE_SMDEBUG", None)
        procs[pkg] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, script), pkg, str(out), ",".join(configs)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for pkg, p in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        if p.returncode != 0:
            pytest.fail(f"{script} {pkg} exited {p.returncode}:\n{stdout}\n{stderr}")
    return base


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
