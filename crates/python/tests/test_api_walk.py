"""Every public method and attribute of the original's ``Trial``, ``Tensor``,
``Collection``, ``SaveConfig``, ``SaveConfigMode``, ``ReductionConfig``, ``Rule`` and
XGBoost ``Hook`` is on ours, with the same parameters and defaults (api_walk.py; the PyTorch
and MXNet hooks are walked in their files). What the walk finds is listed in full by the
failure; the names left out are the original's reading and writing machinery, each with
the reason."""

import logging

import pytest

from api_walk import differences, hook_differences

# The original's machinery, public by name only: what a script reads of it is offered
# through the API (values, steps, workers, collections).
TRIAL_MACHINERY = {
    "index_reader": "the original's reader object; values come from Tensor.value",
    "index_tensors_dict": "the original's parsed index entries; Tensor.steps/workers give them",
    "last_event_token": "the original's event-file reading position (its index mode off)",
}
TENSOR_MACHINERY = {
    "add_step": "called by the original's reader while it parses index files",
    "add_reduction_step": "called by the original's reader while it parses index files",
    "step": "the original's per-step record object; value/reduction_value/shape read it",
    "trial": "a Tensor here holds the trial's Rust reader, not the Python object",
    "cache": "the original's unbounded value cache flag; values here are cached bounded",
}
@pytest.fixture(scope="module")
def trial_pair(tmp_path_factory):
    import numpy as np

    import smdebug.trials
    import smdebug_rs as smd
    import smdebug_rs.trials

    logging.getLogger("smdebug").setLevel(logging.ERROR)
    path = tmp_path_factory.mktemp("walk") / "trial"
    h = smd.Hook(str(path), save_config=smd.SaveConfig(save_interval=1),
                 include_regex=["^w"])
    for _ in range(2):
        h.step()
        h.save("w", np.ones(2, dtype=np.float32))
    h.close()
    return smdebug.trials.create_trial(str(path)), smdebug_rs.trials.create_trial(str(path))


def check(theirs, ours, their_obj=None, our_obj=None, ignore=()):
    found = differences(theirs, ours, their_obj, our_obj, ignore)
    assert not found, f"{theirs.__module__}.{theirs.__name__}:\n  " + "\n  ".join(found)


def test_trial(trial_pair):
    import smdebug.trials.trial as theirs

    import smdebug_rs.trials.trial as ours

    check(theirs.Trial, ours.Trial, trial_pair[0], trial_pair[1], TRIAL_MACHINERY)


def test_tensor(trial_pair):
    import smdebug.core.tensor as theirs

    import smdebug_rs.core.tensor as ours

    check(theirs.Tensor, ours.Tensor, trial_pair[0].tensor("w"), trial_pair[1].tensor("w"),
          TENSOR_MACHINERY)


@pytest.mark.parametrize("module, cls", [
    ("core.collection", "Collection"), ("core.save_config", "SaveConfig"),
    ("core.save_config", "SaveConfigMode"), ("core.reduction_config", "ReductionConfig"),
])
def test_config_classes(module, cls):
    import importlib

    theirs = getattr(importlib.import_module(f"smdebug.{module}"), cls)
    ours = getattr(importlib.import_module(f"smdebug_rs.{module}"), cls)
    args = ("c",) if cls == "Collection" else ()
    check(theirs, ours, theirs(*args), ours(*args))


def test_rule():
    import smdebug.rules.rule as theirs

    import smdebug_rs.rules.rule as ours

    check(theirs.Rule, ours.Rule)


def test_xgboost_hook(tmp_path):
    import smdebug.xgboost as theirs

    import smdebug_rs.xgboost as ours

    found = hook_differences(theirs.Hook, ours.Hook, tmp_path)
    assert not found, "smdebug.xgboost.Hook:\n  " + "\n  ".join(found)
