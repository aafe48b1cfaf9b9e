"""smdebug.pytorch and smdebug_rs.pytorch on the same seeded training runs
(torch_train.py, one process per package running every configuration), both trials read
by the ORIGINAL reader (smdebug.trials): the same tensor names, modes, steps and values,
collections listing the same names, and the same losses (training unchanged)."""

import json

import numpy as np
import pytest

try:
    import torch  # noqa: F401
except ImportError as e:  # not installed, or installed but broken
    pytest.skip(f"torch is not importable ({e}): no PyTorch hook tests", allow_module_level=True)
import side_by_side  # noqa: E402

# Every test here runs the original (numpy < 2): deselected where it cannot run.
pytestmark = pytest.mark.original
CONFIGS = ["json", "default", "save_all", "custom", "nested", "twice", "frozen", "modes"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return side_by_side.run_both(tmp_path_factory.mktemp("torch_vs"), "torch_train.py", CONFIGS)


@pytest.mark.parametrize("config", CONFIGS)
def test_same_trial_as_the_original(runs, config):
    py = side_by_side.read(str(runs / "smdebug" / config))
    rs = side_by_side.read(str(runs / "smdebug_rs" / config))
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
