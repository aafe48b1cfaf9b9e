"""smdebug_rs.mxnet under Horovod: two processes started by ``horovodrun --gloo``
(mxnet_horovod_worker.py) write one trial, each as ``worker_<rank>``, as the original's
MXNet hook names Horovod workers; our reader and the original's read every step of both
workers exactly. Runs in the venv with Horovod built for MXNet
(tests/peer/mxnet-horovod-requirements.txt)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import smdebug_rs
from smdebug_rs.trials import create_trial

HERE = os.path.dirname(os.path.abspath(__file__))
# The workers import smdebug_rs from where this process found it.
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smdebug_rs.__file__)))


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    base = tmp_path_factory.mktemp("horovod")
    out, expected = base / "trial", str(base / "expected")
    bin_dir = os.path.dirname(sys.executable)
    horovodrun = shutil.which("horovodrun", path=bin_dir)
    assert horovodrun, f"no horovodrun in {bin_dir}"
    env = dict(os.environ, SMDEBUG_LOG_LEVEL="error",
               PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               # cmake and horovodrun live beside the interpreter.
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run([horovodrun, "-np", "2", "-H", "localhost:2", "--gloo",
                        sys.executable, os.path.join(HERE, "mxnet_horovod_worker.py"),
                        str(out), expected],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return str(out), expected


def _original_create_trial(path):
    from smdebug.trials import create_trial as original_create_trial
    return original_create_trial(path)


@pytest.mark.parametrize("read", [create_trial, _original_create_trial],
                         ids=["smdebug_rs", "original"])
def test_two_horovod_workers_write_one_trial(trial, read):
    out, expected_prefix = trial
    tr = read(out)
    assert sorted(tr.workers()) == ["worker_0", "worker_1"]
    assert tr.num_workers == 2 and tr.steps() == [0, 1, 2]
    losses = []
    for rank in (0, 1):
        expected = np.load(f"{expected_prefix}_{rank}.npz")
        # Two dense layers: 2 weights, 2 biases, their gradients, the loss; 3 steps.
        assert len(expected.files) == 3 * 9
        for key in expected.files:
            step, name = key.split(":", 1)
            np.testing.assert_array_equal(
                tr.tensor(name).value(int(step), worker=f"worker_{rank}"), expected[key],
                err_msg=f"{name} at step {step} of worker_{rank}")
        losses.append(expected[[k for k in expected.files if k.endswith("_output_0")][0]])
    # Each rank trained on its own data: the workers' trials do differ.
    assert not np.array_equal(losses[0], losses[1])
