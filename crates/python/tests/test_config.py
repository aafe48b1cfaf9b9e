"""The config objects (SaveConfig, SaveConfigMode, ReductionConfig, Collection): the native
objects behind the original's API, the same JSON as smdebug 1.0.34's objects, and writes
that reach the object (and the hook) they were read from."""

import os

import numpy as np
import pytest

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

import smdebug_rs as smd  # noqa: E402
from smdebug_rs import _native, exceptions, modes  # noqa: E402


def test_the_classes_are_the_native_ones():
    for cls in (smd.SaveConfig, smd.SaveConfigMode, smd.ReductionConfig, smd.Collection):
        assert issubclass(cls, getattr(_native, cls.__name__))
    assert smd.SaveConfig.__module__ == "smdebug_rs.core.save_config"
    assert smd.Collection.__module__ == "smdebug_rs.core.collection"


def test_json_as_the_original_writes_it():
    import smdebug.core.collection as oc
    import smdebug.core.reduction_config as orc
    import smdebug.core.save_config as osc
    from smdebug.core.modes import ModeKeys as OM

    pairs = [
        (smd.SaveConfig(), osc.SaveConfig()),
        (smd.SaveConfig(save_interval=3, start_step=2, end_step=40, save_steps=[7]),
         osc.SaveConfig(save_interval=3, start_step=2, end_step=40, save_steps=[7])),
        (smd.SaveConfig(mode_save_configs={modes.EVAL: smd.SaveConfigMode(save_interval=4)}),
         osc.SaveConfig(mode_save_configs={OM.EVAL: osc.SaveConfigMode(save_interval=4)})),
        (smd.ReductionConfig(reductions=["min"], abs_norms=["l2"], norms=["l1"],
                             abs_reductions=["max"], save_raw_tensor=True),
         orc.ReductionConfig(reductions=["min"], abs_norms=["l2"], norms=["l1"],
                             abs_reductions=["max"], save_raw_tensor=True)),
        (smd.Collection("c", include_regex=["a", "b"], tensor_names=["y", "x"],
                        reduction_config=smd.ReductionConfig(reductions=["sum"]),
                        save_config=smd.SaveConfig(save_interval=2), save_histogram=False),
         oc.Collection("c", include_regex=["a", "b"], tensor_names=["y", "x"],
                       reduction_config=orc.ReductionConfig(reductions=["sum"]),
                       save_config=osc.SaveConfig(save_interval=2), save_histogram=False)),
    ]
    for ours, theirs in pairs:
        assert ours.to_json_dict() == theirs.to_json_dict()
        assert ours.to_json() == theirs.to_json()
        back = type(ours).from_json(theirs.to_json())
        assert back == ours and type(back) is type(ours)


def test_defaults_and_save_decision_are_native():
    import smdebug.core.reduction_config as orc
    import smdebug.core.save_config as osc
    from smdebug_rs.core import reduction_config as rrc
    from smdebug_rs.core import save_config as rsc

    for k in ("DEFAULT_SAVE_CONFIG_INTERVAL", "DEFAULT_SAVE_CONFIG_START_STEP",
              "DEFAULT_SAVE_CONFIG_END_STEP"):
        assert getattr(rsc, k) == getattr(osc, k)
    assert rrc.ALLOWED_REDUCTIONS == orc.ALLOWED_REDUCTIONS
    assert rrc.ALLOWED_NORMS == orc.ALLOWED_NORMS
    m = smd.SaveConfigMode()
    assert (m.save_interval, m.start_step, m.end_step, m.save_steps) == (500, 0, None, [])
    m = smd.SaveConfigMode(save_interval="100", start_step=150, save_steps=[3])
    assert [s for s in range(401) if m.should_save_step(s)] == [3, 200, 300, 400]
    c = smd.SaveConfig(mode_save_configs={"TRAIN": m})
    assert c.should_save_step(modes.TRAIN, 300) and c.get_save_config(modes.EVAL) is None
    with pytest.raises(exceptions.SMDebugValueError):
        c.should_save_step(modes.EVAL, 0)
    c.merge_default_save_config(smd.SaveConfig(save_interval=7))
    assert c.should_save_step(modes.EVAL, 14)
    with pytest.raises(ZeroDivisionError):
        smd.SaveConfigMode(save_interval=0).should_save_step(3)
    with pytest.raises(exceptions.SMDebugValueError):
        smd.SaveConfigMode(save_steps=(1, 2))
    with pytest.raises(exceptions.SMDebugValueError):
        smd.SaveConfig(mode_save_configs={modes.TRAIN: 5})


def test_the_original_exceptions():
    with pytest.raises(exceptions.SMDebugValueError, match="median"):
        smd.ReductionConfig(reductions=["median"])
    with pytest.raises(exceptions.SMDebugValueError):
        smd.ReductionConfig(norms=["max"])
    with pytest.raises(exceptions.SMDebugValueError):
        smd.ReductionConfig(save_raw_tensor="yes")
    c = smd.Collection("c")
    with pytest.raises(exceptions.SMDebugTypeError):
        c.include(3)
    with pytest.raises(exceptions.SMDebugTypeError):
        c.tensor_names = "abc"
    with pytest.raises(exceptions.SMDebugTypeError):
        c.reduction_config = 3
    with pytest.raises(exceptions.SMDebugTypeError):
        smd.SaveConfig.parse(3)


def test_reads_are_views_and_writes_reach_the_object():
    c = smd.Collection("c", save_config=smd.SaveConfig(save_interval=2),
                       reduction_config=smd.ReductionConfig(reductions=["min"]))
    c.include_regex.append("^a")
    c.include(["^b"])
    c.tensor_names.add("t")
    c.save_config.mode_save_configs[modes.TRAIN].save_interval = 5
    c.save_config.get_save_config(modes.EVAL).save_steps.append(9)
    c.reduction_config.norms.append("l2")
    d = c.to_json_dict()
    assert d["include_regex"] == ["^a", "^b"] and d["tensor_names"] == ["t"]
    assert d["save_config"]["TRAIN"]["save_interval"] == 5
    assert d["save_config"]["EVAL"]["save_steps"] == [9]
    assert d["reduction_config"]["reductions"] == "min,l2_norm"
    assert c.include_regex == ["^a", "^b"] and c.tensor_names == {"t"}
    assert c.matches("xx_a") is False and c.matches("ab") and c.matches("t")
    # Assigned values are copies.
    sc = smd.SaveConfig(save_interval=1)
    c.save_config = sc
    sc.mode_save_configs[modes.TRAIN] = smd.SaveConfigMode(save_interval=8)
    assert c.save_config.get_save_config(modes.TRAIN).save_interval == 1
    assert sc.get_save_config(modes.TRAIN).save_interval == 8
    assert c == smd.Collection.from_dict(c.to_json_dict()) and hash(c) == hash("c")


def test_get_collection_is_the_hooks_own(tmp_path):
    out = tmp_path / "t"
    hook = smd.Hook(str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["mine", "added"], worker="worker_0", num_workers=1)
    mine = hook.get_collection("mine")
    assert mine is hook.get_collection("mine")
    mine.include_regex.append("^m")
    added = smd.Collection("added", include_regex=["^a"])
    hook.add_collection(added)
    added.save_config = smd.SaveConfig(save_interval=2)
    hook.step()
    assert hook.save("m1", np.ones(2)) and hook.save("a1", np.ones(2))
    assert not hook.save("other", np.ones(2))
    hook.step()
    assert hook.save("m1", np.ones(2)) and not hook.save("a1", np.ones(2))
    hook.close()
    # The handles outlive the hook's writer.
    assert mine.include_regex == ["^m"]
    from smdebug_rs.trials import create_trial

    got = create_trial(str(out)).collections()
    assert got["added"].save_config == smd.SaveConfig(save_interval=2)
    assert isinstance(got["added"].save_config, smd.SaveConfig)
    assert got["mine"].tensor_names == {"m1"}


def test_dry_run_collections_are_their_own(tmp_path):
    hook = smd.Hook(str(tmp_path / "t"), dry_run=True)
    c = hook.get_collection("x")
    c.include("^x")
    assert hook.get_collection("x").include_regex == ["^x"]
    hook.close()
