"""smdebug.pytorch and smdebug_rs.pytorch on the same seeded training runs
(torch_train.py, one process per package running every configuration), both trials read
by the ORIGINAL reader (smdebug.trials): the same tensor names, modes, steps and values,
collections listing the same names, and the same losses (training unchanged)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

try:
    import torch  # noqa: F401
except ImportError as e:  # not installed, or installed but broken
    pytest.skip(f"torch is not importable ({e}): no PyTorch hook tests", allow_module_level=True)
import smdebug_rs  # noqa: E402
import torch_compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The subprocesses import smdebug_rs from where this process found it.
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smdebug_rs.__file__)))
# Every test here runs the original (numpy < 2): deselected where it cannot run.
pytestmark = pytest.mark.original
CONFIGS = ["json", "default", "save_all", "custom", "nested", "twice", "frozen", "modes"]


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


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("torch_vs")
    procs = {}
    for pkg in ("smdebug", "smdebug_rs"):
        out = base / pkg
        out.mkdir()
        cfg = base / f"{pkg}.json"
        _json_config(cfg, out / "json")
        env = dict(os.environ, SMDEBUG_CONFIG_FILE_PATH=str(cfg), SMDEBUG_LOG_LEVEL="error",
                   PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("USE_SMDEBUG", None)
        # Both at once: one core each.
        procs[pkg] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "torch_train.py"), pkg, str(out),
             ",".join(CONFIGS)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
    for pkg, p in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        if p.returncode != 0:
            pytest.fail(f"torch_train.py {pkg} exited {p.returncode}:\n{stdout}\n{stderr}")
    return base


@pytest.mark.parametrize("config", CONFIGS)
def test_same_trial_as_the_original(runs, config):
    py = torch_compare.read(str(runs / "smdebug" / config))
    rs = torch_compare.read(str(runs / "smdebug_rs" / config))
    assert sorted(rs["tensors"]) == sorted(py["tensors"])
    assert rs["steps"] == py["steps"] and rs["workers"] == py["workers"]
    assert rs["num_workers"] == py["num_workers"]
    for name, values in py["tensors"].items():
        assert sorted(rs["tensors"][name]) == sorted(values), name
        for key, v in values.items():
            got = rs["tensors"][name][key]
            assert got.dtype == v.dtype and got.shape == v.shape, (name, key)
            np.testing.assert_array_equal(got, v, err_msg=f"{name} at {key}")
    assert rs["collections"] == py["collections"]


@pytest.mark.parametrize("config", CONFIGS)
def test_training_is_unchanged(runs, config):
    with open(runs / "smdebug" / f"{config}.losses.json") as f:
        py = json.load(f)
    with open(runs / "smdebug_rs" / f"{config}.losses.json") as f:
        rs = json.load(f)
    assert rs == py
