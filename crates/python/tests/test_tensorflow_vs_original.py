"""smdebug_rs.tensorflow.KerasHook on TensorFlow 2.21 / Keras 3 against the original
smdebug 1.0.34 KerasHook on TensorFlow 2.12.1 / Keras 2, the last TensorFlow it runs on.

The same script (tests/peer/keras_side_by_side.py: numpy data and initial weights, one
thread, no shuffling) ran through the original once, by hand, in a TF 2.12.1 venv
(tests/peer/tf212_record.py, tests/peer/tf212-requirements.txt); its trial is recorded in
tests/peer/recordings/keras_tf212.json. Here it runs through ours and the trials are
compared: names mapped as docs/src/python.md documents, workers, steps, modes and mode
steps equal, values equal within float32 tolerance (two TensorFlow versions compute
them). Every difference is named below (ONLY_ORIGINAL, ONLY_OURS, the weights' step)."""

import json
import os
import re
import sys

import numpy as np
import pytest

from conftest import PEER, import_tensorflow

import_tensorflow("TensorFlow hook tests", single_thread=False)

import smdebug_rs.tensorflow as smd  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

sys.path.insert(0, PEER)
import keras_side_by_side as script  # noqa: E402

RECORDING = os.path.join(PEER, "recordings", "keras_tf212.json")
# Values: float32 computed by two TensorFlow versions.
RTOL, ATOL = 1e-5, 1e-6
# Names the original writes and ours does not: the legacy Keras 2 optimizer's
# hyperparameter variables that Keras 3's SGD does not have, and `val_batch` (the
# original adds `batch` to Keras 2's logs dict in place, which Keras 2's validation
# result reuses when the validation's last batch was a due step).
ONLY_ORIGINAL = {"SGD/decay:0", "SGD/momentum:0", "val_batch"}
# Names ours writes and the original does not: gradients (the original got them only
# from AWS's TensorFlow build).
ONLY_OURS_PREFIX = "gradients/"


def our_name(name):
    """The name ours writes for a name of the original (docs/src/python.md): weights
    ``<layer>/weights/<layer>/<var>:0`` → ``<layer>/<var>:0``; the legacy optimizer's
    ``SGD/iter:0`` → Keras 3's ``SGD/iteration:0``; the rest as they are."""
    m = re.match(r"^[^/]+/weights/(.+)$", name)
    if m:
        return m.group(1)
    if name.endswith("/iter:0"):
        return name[:-len("iter:0")] + "iteration:0"
    return name


def is_weight(name):
    return re.match(r"^[^/]+/weights/", name) is not None


@pytest.fixture(scope="module")
def recording():
    with open(RECORDING) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    d = tmp_path_factory.mktemp("ours")
    runs = {}
    for run in script.RUNS:
        smd.del_hook()
        out = str(d / run)
        script.train(smd, out, run)
        runs[run] = script.record(create_trial, out)
    smd.del_hook()
    return runs


def test_the_recording_is_the_originals(recording):
    assert recording["generator"] == {"tensorflow": "2.12.1", "keras": "2.12.0",
                                      "smdebug": "1.0.34"}
    assert os.path.getsize(RECORDING) < 300_000


@pytest.mark.parametrize("run", list(script.RUNS))
def test_names_workers_steps_and_modes(recording, ours, run):
    orig, rs = recording["runs"][run], ours[run]
    assert rs["workers"] == orig["workers"] == ["worker_0"]
    assert rs["steps"] == orig["steps"]
    assert rs["modes"] == orig["modes"]
    mapped = {our_name(n) for n in orig["tensors"] if n not in ONLY_ORIGINAL}
    assert ONLY_ORIGINAL <= set(orig["tensors"])
    ours_only = {n for n in rs["tensors"] if n.startswith(ONLY_OURS_PREFIX)}
    assert ours_only == {"gradients/dense/kernelGrad", "gradients/dense/biasGrad",
                         "gradients/dense_1/kernelGrad", "gradients/dense_1/biasGrad"}
    assert set(rs["tensors"]) - ours_only == mapped
    for n in orig["tensors"]:
        if n in ONLY_ORIGINAL:
            continue
        assert sorted(rs["tensors"][our_name(n)], key=int) == \
            sorted(orig["tensors"][n], key=int), n
    for coll, names in orig["collections"].items():
        assert {our_name(n) for n in names if n not in ONLY_ORIGINAL} <= \
            set(rs["collections"].get(coll, [])), coll


def _next_step(steps, g):
    later = [s for s in steps if s > g]
    return min(later) if later else None


@pytest.mark.parametrize("run", list(script.RUNS))
def test_values(recording, ours, run):
    """Equal within RTOL/ATOL at the same step, but the weights: the original reads them
    when a TRAIN batch ends (after its update), ours when it begins, so the original's at a
    TRAIN step are ours at the next step (the "every" run has it); at EVAL steps, where
    nothing updates them, they are equal at the same step."""
    orig, rs = recording["runs"][run], ours[run]
    compared = 0
    for n, at in orig["tensors"].items():
        if n in ONLY_ORIGINAL:
            continue
        mine = rs["tensors"][our_name(n)]
        for g, v in at.items():
            if is_weight(n) and orig["modes"][g][0] == "TRAIN":
                nxt = _next_step(rs["steps"], int(g))
                if run != "every" or nxt is None:
                    continue
                other = mine.get(str(nxt))
            else:
                other = mine[g]
            assert other["shape"] == v["shape"] or (v["shape"] == [1] and other["shape"] in
                                                    ([], [1])), (n, g)
            np.testing.assert_allclose(other["value"], v["value"], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{n} at step {g} ({run})")
            compared += 1
    assert compared > (100 if run == "every" else 30)
