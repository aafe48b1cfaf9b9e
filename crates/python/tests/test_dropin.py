"""Scripts written for the original, run with ``smdebug`` and with ``smdebug_rs`` by changing
only the import: the same results (the reading side in this process, the writing side in one
subprocess per package, every trial read with the ORIGINAL reader)."""

import json
import logging
import os
import subprocess
import sys

import pytest

import smdebug_rs
from conftest import s3_target, upload

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smdebug_rs.__file__)))
PACKAGES = ("smdebug", "smdebug_rs")

WRITE_TRIAL = r'''
import sys, numpy as np
import smdebug_rs as smd
h = smd.Hook(sys.argv[1], save_config=smd.SaveConfig(save_interval=1),
             include_collections=["custom"])
h.get_collection("custom").include("^foo")
for s in range(3):
    h.step()
    h.save("foo_0", np.full(2, s, dtype=np.float32))
    h.save("foo_1", np.ones(3))
h.close()
'''


def run_script(source, *args, timeout=300):
    """Runs ``source`` as a script with ``args``; its stdout parsed as JSON if it prints."""
    env = dict(os.environ, SMDEBUG_LOG_LEVEL="error",
               PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", source, *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout) if p.stdout.strip() else None


def packages():
    """``{name: (create_trial, trials module)}`` of both packages."""
    import smdebug.trials
    import smdebug_rs.trials

    logging.getLogger("smdebug").setLevel(logging.ERROR)
    return {"smdebug": smdebug.trials, "smdebug_rs": smdebug_rs.trials}


@pytest.fixture(scope="module")
def trial_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("dropin") / "trial"
    run_script(WRITE_TRIAL, path)
    return path


def test_a_collection_made_through_a_trial_is_the_trials(trial_dir):
    got = {}
    for pkg, trials in packages().items():
        t = trials.create_trial(str(trial_dir))
        c = t.collection("test")
        first = t.tensor_names(collection="test")
        c.include("foo_0")
        by_regex = t.tensor_names(collection="test")
        c2 = t.collection("test2")
        c2.add_tensor_name("foo_1")
        by_name = t.tensor_names(collection=c2)
        got[pkg] = (first, by_regex, by_name, sorted(t.collections()),
                    t.collection("test") is c)
    assert got["smdebug_rs"] == got["smdebug"]
    assert got["smdebug_rs"][1] == ["foo_0"] and got["smdebug_rs"][2] == ["foo_1"]


def test_trial_classes_take_the_originals_constructors(trial_dir):
    got = {}
    for pkg, trials in packages().items():
        local = trials.LocalTrial(name="x", dirname=str(trial_dir))
        positional = trials.local_trial.LocalTrial("y", str(trial_dir), (0, 2))
        got[pkg] = (type(trials.create_trial(str(trial_dir))).__name__, local.name,
                    local.steps(), local.tensor_names(), positional.name, positional.steps())
    assert got["smdebug_rs"] == got["smdebug"]


def test_s3_trial_takes_bucket_and_prefix(trial_dir):
    from smdebug_rs.trials import S3Trial, create_trial

    endpoint, bucket = s3_target()
    prefix = f"pytest-dropin/{os.getpid()}/trial"
    upload(trial_dir, bucket, prefix, endpoint)
    t = S3Trial("remote", bucket, prefix)
    assert (t.name, t.bucket_name, t.prefix_name) == ("remote", bucket, prefix + "/")
    local = create_trial(str(trial_dir))
    assert t.steps() == local.steps() and t.tensor_names() == local.tensor_names()
    assert type(create_trial(f"s3://{bucket}/{prefix}")) is S3Trial
    # The original's token of an S3 trial is the index file's key in the bucket.
    assert t.last_index_token == prefix + "/" + os.path.relpath(
        local.last_index_token, str(trial_dir))


def test_last_index_token_is_the_index_files_path(trial_dir):
    got = {}
    for pkg, trials in packages().items():
        got[pkg] = trials.create_trial(str(trial_dir)).last_index_token
    assert got["smdebug_rs"] == got["smdebug"]
    assert got["smdebug_rs"].startswith(str(trial_dir) + os.sep)


XGB = r'''
import json, sys, numpy as np, xgboost as xgb
pkg, out, job = sys.argv[1], sys.argv[2], sys.argv[3]
if pkg == "smdebug":
    from smdebug import SaveConfig, modes
    from smdebug.xgboost import Hook
else:
    from smdebug_rs import SaveConfig, modes
    from smdebug_rs.xgboost import Hook
rng = np.random.default_rng(3)
x = rng.standard_normal((300, 4)).astype("float32")
y = (x[:, 1] + 0.1 * rng.standard_normal(300) > 0).astype("float32")  # f0 unused
dtrain = xgb.DMatrix(x[:250], label=y[:250])
dval = xgb.DMatrix(x[250:], label=y[250:])
params = {"objective": "binary:logistic", "max_depth": 2, "eta": 0.3, "seed": 1, "nthread": 1}
if job == "save_all":
    hook = Hook(out_dir=out, save_all=True, save_config=SaveConfig(save_steps=[0, 1, 2, 3]),
                train_data=dtrain, validation_data=dval)
    xgb.train(params, dtrain, num_boost_round=10, evals=[(dval, "validation")],
              callbacks=[hook], verbose_eval=False)
else:
    hook = Hook(out_dir=out, include_collections=["metrics"],
                save_config=SaveConfig(save_interval=1), export_tensorboard=True)
    print(json.dumps({"tensorboard_dir": hook.tensorboard_dir}))
    hook.set_mode(modes.EVAL)
    hook.save_scalar("threshold", 0.5)
    xgb.train(params, dtrain, num_boost_round=3, evals=[(dval, "validation")],
              callbacks=[hook], verbose_eval=False)
hook.close()
'''


def read_with_the_original(path):
    """Tensor names with their ``(mode, mode step)`` pairs, and each collection's names."""
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    t = create_trial(str(path))
    tensors = {}
    for name in t.tensor_names():
        steps = []
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.GLOBAL):
            steps += [(mode.name, s) for s in t.tensor(name).steps(mode=mode)]
        tensors[name] = steps
    colls = {n: sorted(c.tensor_names) for n, c in t.collections().items() if c.tensor_names}
    return tensors, colls


@pytest.fixture(scope="module")
def xgb_runs(tmp_path_factory):
    pytest.importorskip("smdebug.xgboost")
    base = tmp_path_factory.mktemp("xgb_dropin")
    out = {}
    for job in ("save_all", "modes"):
        for pkg in PACKAGES:
            path = base / pkg / job
            printed = run_script(XGB, pkg, path, job)
            out[pkg, job] = (path, printed)
    return out


def test_xgboost_save_all_collections_list_only_what_was_saved(xgb_runs):
    theirs = read_with_the_original(xgb_runs["smdebug", "save_all"][0])
    ours = read_with_the_original(xgb_runs["smdebug_rs", "save_all"][0])
    assert ours[0] == theirs[0]
    # Every name `all` lists was saved, and every saved one is listed. The original's
    # collections file is written after the first saved round and lists what that round
    # saved (features first used later are missing from it): ours lists those too.
    assert set(ours[1]["all"]) == set(ours[0]), "a name in `all` that was never saved"
    assert set(theirs[1]["all"]) <= set(ours[1]["all"])


def test_xgboost_hook_set_mode_and_tensorboard_dir(xgb_runs):
    (theirs, their_print), (ours, our_print) = (xgb_runs["smdebug", "modes"],
                                                xgb_runs["smdebug_rs", "modes"])
    assert our_print["tensorboard_dir"] == str(ours / "tensorboard")
    assert their_print["tensorboard_dir"] == str(theirs / "tensorboard")
    t, o = read_with_the_original(theirs), read_with_the_original(ours)
    assert o[0] == t[0]
    assert {m for steps in o[0].values() for m, _ in steps if m != "GLOBAL"} == {"EVAL"}


def test_generic_hook_tensorboard_dir(tmp_path):
    from smdebug_rs import Hook

    cases = [(dict(export_tensorboard=True), str(tmp_path / "a" / "tensorboard")),
             (dict(tensorboard_dir=str(tmp_path / "tb")), str(tmp_path / "tb")),
             (dict(), None)]
    for i, (kwargs, expected) in enumerate(cases):
        name = "abc"[i]
        h = Hook(str(tmp_path / name), **kwargs)
        assert h.tensorboard_dir == expected, kwargs
        h.close()


SAVE_TENSOR = r'''
import sys, numpy as np
import smdebug_rs as smd
h = smd.Hook(sys.argv[1], save_config=smd.SaveConfig(save_interval=2),
             include_collections=["weights"])
h.save_tensor("early", np.ones(2))
for s in range(4):
    h.step()
    h.save_tensor("cust", np.full(2, s))
h.close()
'''


def test_save_tensor_outside_the_included_collections_and_before_the_first_step(tmp_path):
    """As the original: a ``save_tensor`` value is written at a step that saves, whether or
    not its collection (``default``) is included; one given before the first step is
    written at step 0. (test_pytorch_vs_original.py runs the PyTorch hook's.)"""
    run_script(SAVE_TENSOR, tmp_path / "t")
    tensors, colls = read_with_the_original(tmp_path / "t")
    assert [s for m, s in tensors["early"] if m == "GLOBAL"] == [0]
    assert [s for m, s in tensors["cust"] if m == "GLOBAL"] == [0, 2]
    assert colls["default"] == ["cust", "early"]
