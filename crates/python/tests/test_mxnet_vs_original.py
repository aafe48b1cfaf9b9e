"""smdebug.mxnet and smdebug_rs.mxnet on the same seeded Gluon training runs
(mxnet_train.py, one process per package running every configuration), both trials read
by the ORIGINAL reader (smdebug.trials, through side_by_side.read): the same tensor names,
modes, steps and values, collections listing the same names, and the same losses
(training unchanged).

Every difference is one of the named deviations (docs/src/python.md, "MXNet"), checked
here as such:

* PARAMETER TIMING: the original writes a step's parameters at the next forward (or at
  close), after the trainer updated them; smdebug_rs writes them when the step's forward
  starts. So the original's weights at TRAIN/GLOBAL step s equal ours at step s + 1, ours
  at the first step (the initial values) have no counterpart, and the original's values
  after the last step (written at close) have none here.
* MODE SWITCH: the original writes no parameters and no gradients for the last TRAIN step
  before ``set_mode(EVAL)`` (it writes them after the switch, as EVAL step -1, which no
  save config keeps); smdebug_rs writes both.
* SAVE_TENSOR TIMING: a ``save_tensor`` value given during step s is written at step s
  here, at step s + 1 by the original (lost after the last step).
"""

import json

import numpy as np
import pytest

try:
    import mxnet  # noqa: F401
except Exception as e:  # not installed, or installed but broken (numpy too new: OSError…)
    pytest.skip(f"mxnet is not importable ({type(e).__name__}: {e}): no MXNet hook tests",
                allow_module_level=True)
try:
    import smdebug.mxnet  # noqa: F401
except Exception as e:
    pytest.skip(f"the original smdebug.mxnet is not importable ({type(e).__name__}: {e}): "
                "no side-by-side runs", allow_module_level=True)

import side_by_side  # noqa: E402

CONFIGS = ["json", "default", "save_all", "custom", "nested", "deferred", "modes",
           "reductions"]
# Configurations saving parameters at every step: there the shifted values must meet.
EVERY_STEP = {"save_all", "nested", "deferred", "modes"}
REDUCTIONS = [("min", False), ("max", False), ("mean", False), ("l1", False), ("l2", False),
              ("max", True)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return side_by_side.run_both(tmp_path_factory.mktemp("mxnet_vs"), "mxnet_train.py", CONFIGS,
                                  {"MXNET_ENGINE_TYPE": "NaiveEngine", "OMP_NUM_THREADS": "1"})


def _kind(name, meta):
    if name in meta["params"]:
        return "param"
    if name.startswith("gradient/"):
        return "grad"
    if name in meta["custom"]:
        return "custom"
    return "same"


def _equal(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    np.testing.assert_array_equal(got, want, err_msg=what)


def compare(py, rs, meta):
    """Asserts that ``rs`` holds what ``py`` (the original's trial) holds, up to the
    deviations of the module docstring; returns how many values of each kind met."""
    assert sorted(rs["tensors"]) == sorted(py["tensors"])
    last_train = meta["last_train_before_eval"]
    eval_global = set(meta["eval_global_steps"])
    met = {"same": 0, "param": 0, "grad": 0, "custom": 0}
    for name, orig in py["tensors"].items():
        mine = rs["tensors"][name]
        kind = _kind(name, meta)
        if kind == "same":
            assert sorted(mine) == sorted(orig), name
            for key, v in orig.items():
                _equal(mine[key], v, f"{name} at {key}")
                met[kind] += 1
        elif kind in ("param", "grad"):
            # Saved at the same (mode, step)s, plus the step the original drops at a switch
            # (as a TRAIN step and as the global step it is; TRAIN runs first).
            dropped = set()
            if last_train is not None:
                dropped = {("TRAIN", last_train), ("GLOBAL", last_train)}
            assert set(mine) == set(orig) | dropped, name
            assert not set(orig) & dropped, name
            for (mode, step), v in orig.items():
                trained = mode == "TRAIN" or mode == "GLOBAL" and step not in eval_global
                shift = 1 if kind == "param" and trained else 0
                key = (mode, step + shift)
                if key in mine:
                    _equal(mine[key], v, f"{name}: original at {(mode, step)}, ours at {key}")
                    met[kind] += 1
        else:  # custom: the original's step s + 1 is ours s; ours has the last step too
            last = ("GLOBAL", meta["train_steps"] - 1)
            assert set(mine) == {(m, s - 1) for m, s in orig} | {last}, name
            for (mode, step), v in orig.items():
                _equal(mine[(mode, step - 1)], v, f"{name}: original at {step}, ours at "
                       f"{step - 1}")
                met[kind] += 1
    return met


@pytest.mark.parametrize("config", [c for c in CONFIGS if c != "reductions"])
def test_same_trial_as_the_original(runs, config):
    py = side_by_side.read(str(runs / "smdebug" / config))
    rs = side_by_side.read(str(runs / "smdebug_rs" / config))
    with open(runs / "smdebug_rs" / f"{config}.meta.json") as f:
        meta = json.load(f)
    with open(runs / "smdebug" / f"{config}.meta.json") as f:
        assert json.load(f) == meta  # the same blocks, named alike
    met = compare(py, rs, meta)
    assert met["same"] > 0  # at least the loss
    if config in EVERY_STEP:
        assert met["param"] > 0 and met["grad"] > 0, met
    if config == "custom":
        assert met["custom"] > 0
    assert rs["steps"] == py["steps"] and rs["workers"] == py["workers"]
    assert rs["num_workers"] == py["num_workers"]
    assert rs["collections"] == py["collections"]


@pytest.mark.parametrize("config", CONFIGS)
def test_training_is_unchanged(runs, config):
    with open(runs / "smdebug" / f"{config}.losses.json") as f:
        py = json.load(f)
    with open(runs / "smdebug_rs" / f"{config}.losses.json") as f:
        rs = json.load(f)
    assert rs == py


def test_the_parameter_timing_deviation_is_what_the_original_writes(runs):
    """The PARAMETER TIMING deviation, shown on the values: the original's weights at step
    s are those after step s's update (ours at s are those step s's forward used)."""
    py = side_by_side.read(str(runs / "smdebug" / "save_all"))
    rs = side_by_side.read(str(runs / "smdebug_rs" / "save_all"))
    with open(runs / "smdebug_rs" / "save_all.meta.json") as f:
        meta = json.load(f)
    w = next(n for n in meta["params"] if n.endswith("weight"))
    g = "gradient/" + w
    lr = 0.1 / 8  # sgd, rescaled by trainer.step(batch_size)
    for s in range(meta["train_steps"]):
        before = rs["tensors"][w][("GLOBAL", s)]
        grad = rs["tensors"][g][("GLOBAL", s)]
        np.testing.assert_allclose(py["tensors"][w][("GLOBAL", s)], before - lr * grad,
                                   rtol=1e-5, atol=1e-6)


def _reductions(path):
    """``{name: {(step, reduction, abs): value}}`` of the GLOBAL steps, by the original's
    reader."""
    import logging

    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    logging.getLogger("smdebug").setLevel(logging.ERROR)
    trial = create_trial(path)
    out = {}
    for name in trial.tensor_names():
        t = trial.tensor(name)
        vals = {}
        for step in t.steps(mode=ModeKeys.GLOBAL):
            for red, ab in REDUCTIONS:
                try:
                    vals[(step, red, ab)] = np.asarray(t.reduction_value(step, red, abs=ab))
                except Exception:  # noqa: BLE001 - not saved as this reduction
                    pass
        out[name] = vals
    return out


def test_reductions_as_the_original(runs):
    """Reductions (of weights, shifted as the values are, and of gradients): the same
    reductions at the same steps, dtype and shape [1]; values equal up to float32
    summation order (the original reduces with mx.nd operators, smdebug_rs as numpy does,
    but for l1/l2, which both take of the flattened array: mx.nd.norm's entrywise norms,
    not numpy's matrix norms of the 2-D weights)."""
    py = _reductions(str(runs / "smdebug" / "reductions"))
    rs = _reductions(str(runs / "smdebug_rs" / "reductions"))
    with open(runs / "smdebug_rs" / "reductions.meta.json") as f:
        meta = json.load(f)
    assert sorted(rs) == sorted(py)
    met = 0
    matrix_norms = set()
    for name, orig in py.items():
        shift = 1 if name in meta["params"] else 0
        if name.startswith("gradient/") or shift:
            assert {k[1:] for k in rs[name]} == {k[1:] for k in orig}, name
        for (step, red, ab), v in orig.items():
            key = (step + shift, red, ab)
            if key not in rs[name]:
                continue
            got = rs[name][key]
            assert got.shape == v.shape and got.dtype == v.dtype, (name, key, got, v)
            np.testing.assert_allclose(got, v, rtol=1e-5, atol=1e-7, err_msg=f"{name} {key}")
            met += 1
            if red in ("l1", "l2") and name.endswith("weight"):
                matrix_norms.add(red)
    assert met > 0
    # The norms of 2-D weights were compared (where numpy's matrix norms would differ).
    assert matrix_norms == {"l1", "l2"}
