"""Each case of the test plan (docs/src/testing.md §6) that expects an exception raises the
same class from smdebug_rs as from smdebug, and the class the test plan names. Both packages are
imported in this one process and read the same trial, written by the real smdebug writer."""

import json
import os

import pytest

from conftest import write_recipe

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
os.environ.setdefault("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "0")

import smdebug.trials  # noqa: E402
import smdebug_rs.trials  # noqa: E402
from smdebug.core.modes import ModeKeys as PyModes  # noqa: E402
from smdebug_rs.modes import ModeKeys as RsModes  # noqa: E402

PACKAGES = {"smdebug": (smdebug.trials, PyModes), "smdebug_rs": (smdebug_rs.trials, RsModes)}


def recipe(**kw):
    r = {
        "seed": 7,
        "workers": 1,
        "schedule": [{"mode": "TRAIN", "steps": 8}],
        "default_save_config": {"save_interval": 1},
        "collections": [
            {"name": "weights", "include_regex": ["^w"]},
            {"name": "red", "include_regex": ["^red/"],
             "reduction_config": {"reductions": ["max"], "save_raw_tensor": False}},
        ],
        "tensors": [
            {"name": "w", "shape": [2, 2], "dtype": "float32"},
            {"name": "w3", "shape": [2, 2, 2], "dtype": "float32"},
            {"name": "red/x", "shape": [3], "dtype": "float32"},
        ],
        "training_ended": True,
    }
    r.update(kw)
    return r


TRIALS = {
    "ended": recipe(),
    # Steps 1, 3, 5, 7 saved; the job is still running (item 83-86).
    "odd_running": recipe(default_save_config={"save_steps": [1, 3, 5, 7]},
                          training_ended=False),
    # Steps 0-3, 5, 6 (4 skipped), ended (item 92).
    "gap_ended": recipe(schedule=[{"mode": "TRAIN", "steps": 7}],
                        default_save_config={"save_steps": [0, 1, 2, 3, 5, 6]}),
    # 3 workers declared, 1 collections file, ended (item 106).
    "missing_collections": recipe(workers=1, num_workers_meta=3),
}

# (case, trial, call(trials_module, modes, path), expected class) — item numbers of docs/src/testing.md §6.
CASES = [
    ("84 unknown tensor", "ended", lambda tr, m: tr.tensor("bar"), "TensorUnavailable"),
    ("76 regex and collection", "ended",
     lambda tr, m: tr.tensor_names(regex="w", collection="weights"), "ValueError"),
    ("85 skipped step below a seen one", "odd_running",
     lambda tr, m: tr.tensor("w").value(6), "StepUnavailable"),
    ("86 beyond the last step, running", "odd_running",
     lambda tr, m: tr.tensor("w").value(16), "StepNotYetAvailable"),
    ("92 wait for a skipped step", "gap_ended",
     lambda tr, m: tr.wait_for_steps([0, 1, 2, 3, 4, 5, 6]), "StepUnavailable"),
    ("92 wait past the end", "gap_ended",
     lambda tr, m: tr.wait_for_steps([0, 1, 2, 3, 5, 6, 7]), "NoMoreData"),
    ("130 value of a reductions-only tensor", "ended",
     lambda tr, m: tr.tensor("red/x").value(0), "TensorUnavailableForStep"),
    ("130 unsaved reduction of a reductions-only tensor", "ended",
     lambda tr, m: tr.tensor("red/x").reduction_value(0, "min"), "TensorUnavailableForStep"),
    ("131 shape of a reductions-only tensor", "ended",
     lambda tr, m: tr.tensor("red/x").shape(0), "ShapeUnavailableForStep"),
    ("invalid worker", "ended",
     lambda tr, m: tr.tensor("w").value(0, worker="worker_9"), "InvalidWorker"),
    ("152 l1 of a 3-D tensor", "ended",
     lambda tr, m: tr.tensor("w3").reduction_value(0, "l1"), "ValueError"),
    ("mode step of another mode", "ended",
     lambda tr, m: tr.tensor("w").value(0, mode=m.EVAL), "StepUnavailable"),
]


@pytest.fixture(scope="module")
def trial_paths(tmp_path_factory):
    base = tmp_path_factory.mktemp("exc")
    return {name: write_recipe(r, base / name) for name, r in TRIALS.items()}


def outcome(fn):
    try:
        fn()
    except Exception as e:  # the class is the observation
        return type(e).__name__, e
    return "no exception", None


@pytest.mark.parametrize("case,trial,call,expected", CASES, ids=[c[0] for c in CASES])
def test_same_exception_class(case, trial, call, expected, trial_paths):
    got = {}
    for pkg, (trials, modes) in PACKAGES.items():
        tr = trials.create_trial(trial_paths[trial])
        got[pkg] = outcome(lambda: call(tr, modes))
    assert got["smdebug"][0] == expected, f"{case}: smdebug raised {got['smdebug']}"
    assert got["smdebug_rs"][0] == expected, f"{case}: smdebug_rs raised {got['smdebug_rs']}"
    # The class is in smdebug_rs.exceptions (or a builtin) with the original's hierarchy.
    py_e, rs_e = got["smdebug"][1], got["smdebug_rs"][1]
    assert [c.__name__ for c in type(rs_e).__mro__] == [c.__name__ for c in type(py_e).__mro__]


def test_missing_collection_files(trial_paths):
    for pkg, (trials, _) in PACKAGES.items():
        name, _ = outcome(lambda: trials.create_trial(trial_paths["missing_collections"]))
        assert name == "MissingCollectionFiles", f"{pkg}: {name}"


def test_step_states_and_working_calls(trial_paths):
    """The calls next to the failing ones work the same (items 83, 85, 92)."""
    seen = {}
    for pkg, (trials, modes) in PACKAGES.items():
        tr = trials.create_trial(trial_paths["odd_running"])
        steps = tr.steps()
        # smdebug's writer also saves step 0 (the first step is always saved).
        assert {1, 3, 5, 7} <= set(steps) and 6 not in steps, (pkg, steps)
        seen[pkg] = (steps, tr.tensor("w").value(7).tolist())
        tr = trials.create_trial(trial_paths["gap_ended"])
        assert tr.has_passed_step(4).name == "UNAVAILABLE", pkg
        assert tr.has_passed_step(8).name == "UNAVAILABLE", pkg
        tr.wait_for_steps([0, 1, 2, 3, 5, 6])
    assert seen["smdebug"] == seen["smdebug_rs"]


def test_exception_hierarchy_matches_original():
    import smdebug.exceptions as pe
    import smdebug_rs.exceptions as re_

    py_names = {n for n in dir(pe) if isinstance(getattr(pe, n), type)
                and issubclass(getattr(pe, n), BaseException)}
    for n in py_names:
        assert hasattr(re_, n), f"smdebug_rs.exceptions lacks {n}"
        py_mro = [c.__name__ for c in getattr(pe, n).__mro__]
        rs_mro = [c.__name__ for c in getattr(re_, n).__mro__]
        assert py_mro == rs_mro, n


def test_corrupt_index_file_same_class_and_our_message(tmp_path):
    path = write_recipe(recipe(), tmp_path / "t")
    index = os.path.join(path, "index")
    first = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(index) for f in fs)[0]
    with open(first, "w") as f:
        f.write('{"meta": {"mode": "TRAIN"')  # cut short
    got = {}
    for pkg, (trials, _) in PACKAGES.items():
        got[pkg] = outcome(lambda: trials.create_trial(path).tensor_names())
    assert got["smdebug_rs"][0] == got["smdebug"][0], got
    # Our message names the file.
    assert os.path.basename(first) in str(got["smdebug_rs"][1]), str(got["smdebug_rs"][1])


def test_corrupt_event_file_raises_with_file_and_offset(tmp_path):
    path = write_recipe(recipe(), tmp_path / "t")
    events = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(path, "events"))
                    for f in fs)
    with open(events[0], "r+b") as f:
        f.seek(20)
        f.write(b"\xff\xff\xff\xff")
    tr = smdebug_rs.trials.create_trial(path)
    with pytest.raises(smdebug_rs.exceptions.SMDebugRuntimeError) as e:
        tr.tensor("w").value(0)
    text = str(e.value)
    assert os.path.basename(events[0]) in text and "byte" in text, text
    json.dumps(text)
