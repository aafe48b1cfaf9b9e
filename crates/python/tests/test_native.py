"""The native layer: numpy values, GIL release, errors and panics, Arrow tables, the
module layout scripts import."""

import os
import threading
import time

import numpy as np
import pytest

from conftest import write_recipe

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

import smdebug_rs  # noqa: E402
from smdebug_rs import exceptions, modes  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402


def recipe(**kw):
    r = {
        "seed": 3,
        "workers": 2,
        "schedule": [{"mode": "TRAIN", "steps": 3}, {"mode": "EVAL", "steps": 2}],
        "default_save_config": {"save_interval": 1},
        "collections": [
            {"name": "weights", "include_regex": ["^w/"]},
            {"name": "losses", "include_regex": ["loss"]},
        ],
        "tensors": [
            {"name": "w/f32", "shape": [4, 3], "dtype": "float32"},
            {"name": "w/f64", "shape": [2], "dtype": "float64"},
            {"name": "w/f16", "shape": [5], "dtype": "float16"},
            {"name": "w/i64", "shape": [3], "dtype": "int64"},
            {"name": "w/i32", "shape": [3], "dtype": "int32"},
            {"name": "w/b", "shape": [4], "dtype": "bool"},
            {"name": "loss", "shape": [], "dtype": "float32"},
        ],
        "training_ended": True,
    }
    r.update(kw)
    return r


@pytest.fixture(scope="module")
def trial_path(tmp_path_factory):
    return write_recipe(recipe(), tmp_path_factory.mktemp("native") / "run")


def test_values_are_numpy_arrays_of_the_saved_dtype(trial_path):
    import smdebug.trials

    ours = create_trial(trial_path)
    theirs = smdebug.trials.create_trial(trial_path)
    for name, dtype in [("w/f32", np.float32), ("w/f64", np.float64), ("w/f16", np.float16),
                        ("w/i64", np.int64), ("w/i32", np.int32), ("w/b", np.bool_),
                        ("loss", np.float32)]:
        v = ours.tensor(name).value(1, worker="worker_1")
        assert isinstance(v, np.ndarray) and v.dtype == dtype, (name, v.dtype)
        ref = theirs.tensor(name).value(1, worker="worker_1")
        assert v.shape == np.asarray(ref).shape
        np.testing.assert_array_equal(v, ref)


def test_values_view_the_decoded_buffer_read_only(trial_path):
    tr = create_trial(trial_path)
    a = tr.tensor("w/f32").value(0)
    b = tr.tensor("w/f32").value(0)
    # Both are views of the one cached buffer: no copy after the decode.
    assert a.ctypes.data == b.ctypes.data
    assert not a.flags.writeable and a.base is not None
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    c = np.array(a)
    c[0, 0] = 1.0  # a copy is the user's to change
    tr.clear_cache()
    del b
    assert float(a.sum()) == float(np.asarray(a).sum())  # still valid after the cache let go


def test_keywords_defaults_and_modes_of_the_original(trial_path):
    import smdebug.core.modes as py_modes

    tr = create_trial(trial_path)
    assert tr.steps() == [0, 1, 2, 3, 4]
    assert tr.steps(mode=modes.ModeKeys.EVAL) == [0, 1]
    # The original's ModeKeys work too (matched by name), and so does smdebug_rs.modes.TRAIN.
    assert tr.steps(mode=py_modes.ModeKeys.EVAL) == [0, 1]
    assert tr.steps(modes.TRAIN) == [0, 1, 2]
    assert tr.mode_modestep(3) == (modes.ModeKeys.EVAL, 0)
    assert tr.mode_modestep(99) == (None, None)
    assert tr.global_step(modes.ModeKeys.EVAL, 1) == 4
    assert tr.modes() and all(isinstance(m, modes.ModeKeys) for m in tr.modes())
    assert tr.workers() == ["worker_0", "worker_1"] and tr.num_workers == 2
    assert tr.tensor_names(regex="^w/f") == ["w/f16", "w/f32", "w/f64"]
    assert tr.tensor_names(collection="losses") == ["loss"]
    assert tr.tensor_names(collection=tr.collection("losses")) == ["loss"]
    assert tr.tensor_names(step=3, mode=modes.ModeKeys.GLOBAL) == tr.tensor_names()
    t = tr.tensor("w/f32")
    assert t.name == "w/f32"
    assert t.workers(0) == ["worker_0", "worker_1"]
    assert t.shape(0) == (4, 3)
    assert t.prev_steps(4, 2) == [3, 4]
    assert sorted(t.values(mode=modes.ModeKeys.TRAIN)) == [0, 1, 2]
    mx = t.reduction_value(0, "max", abs=True)
    assert float(mx) == float(np.abs(t.value(0)).max())
    state = tr.has_passed_step(2)
    from smdebug_rs.core.tensor import StepState

    assert state is StepState.AVAILABLE
    assert tr.has_passed_step(100) is StepState.UNAVAILABLE
    assert tr.loaded_all_steps and tr.last_complete_step == 4
    c = tr.collections()["weights"]
    assert c.include_regex == ["^w/"] and c.to_json_dict()["name"] == "weights"
    assert tr.name == "run"
    from smdebug_rs.core.access_layer.utils import has_training_ended

    assert has_training_ended(trial_path)


def test_range_steps(trial_path):
    tr = create_trial(trial_path, range_steps=(1, 3))
    assert tr.steps() == [1, 2]
    with pytest.raises(AssertionError):
        create_trial(trial_path, range_steps=(3, 1))


def test_gil_released_while_waiting(tmp_path):
    """wait_for_steps blocks in Rust without the GIL: a Python thread keeps counting."""
    path = write_recipe(recipe(training_ended=False), tmp_path / "live")
    tr = create_trial(path)
    done = threading.Event()
    ticks = []

    def counter():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    def finish():
        time.sleep(0.6)
        open(os.path.join(path, "training_job_end.ts"), "w").close()

    th = [threading.Thread(target=counter), threading.Thread(target=finish)]
    for t in th:
        t.start()
    start = time.perf_counter()
    with pytest.raises(exceptions.NoMoreData):
        tr.wait_for_steps([50])
    waited = time.perf_counter() - start
    done.set()
    for t in th:
        t.join()
    assert waited >= 0.5
    assert len(ticks) > 50, f"the Python thread ran {len(ticks)} times in {waited:.2f}s"


def test_rust_panic_becomes_a_python_exception():
    with pytest.raises(exceptions.SMDebugRuntimeError, match=r"a Rust panic\): kaboom"):
        smdebug_rs._native._panic_for_test("kaboom")
    # The interpreter and the module still work.
    assert smdebug_rs.__version__


def test_every_error_kind_raises_the_class_the_dump_names():
    """Each kind of trial failure (``smdebug_trial::ErrorKind``) is raised as a class that
    exists, in ``smdebug_rs.exceptions`` or the builtins, and whose name is the kind's name:
    the ``type`` the dump (``smdebug-dump``) writes for it."""
    import builtins
    import json
    import re

    ufunc_type_error = type(exceptions._ufunc_error("x")).__mro__[1]
    foreign = {"JSONDecodeError": json.JSONDecodeError, "error": re.error,
               "LinAlgError": np.linalg.LinAlgError, "UFuncTypeError": ufunc_type_error}
    kinds = smdebug_rs._native._error_classes()
    names = [name for name, _ in kinds]
    assert len(set(names)) == len(names) >= 25, names
    for name, cls in kinds:
        if name in exceptions.__all__:
            assert cls is getattr(exceptions, name), name
        elif name in foreign:
            made = cls("a message")
            assert isinstance(made, foreign[name]) and type(made).__name__ == name, name
            assert "a message" in str(made)
        else:
            assert cls is getattr(builtins, name), name
            assert issubclass(cls, Exception)
    assert {"KeyError", "OSError", "StepUnavailable", "SMDebugRuntimeError"} <= set(names)


def test_close_releases_the_reader_and_later_calls_raise(trial_path):
    with create_trial(trial_path) as tr:
        assert not tr.closed
        t = tr.tensor("w/f32")
        before = t.value(0)
        assert tr.steps()
    assert tr.closed and "(closed)" in repr(tr)
    assert tr.name and tr.path == str(trial_path)
    for call in (tr.steps, tr.tensor_names, lambda: tr.tensor("w/f32"),
                 lambda: tr.num_workers, lambda: t.value(0), t.steps):
        with pytest.raises(exceptions.SMDebugRuntimeError, match="is closed"):
            call()
    tr.close()  # a second close does nothing
    # Values returned before the close stay valid.
    assert before.shape and np.isfinite(before).all()


def test_hook_step_is_not_a_context_manager(tmp_path):
    hook = smdebug_rs.Hook(str(tmp_path / "run"))
    assert hook.step() is None
    with pytest.raises((TypeError, AttributeError)):
        with hook.step():
            pass
    hook.close()


def test_bad_arguments_raise_python_exceptions(trial_path):
    tr = create_trial(trial_path)
    with pytest.raises(exceptions.SMDebugValueError, match="Invalid reduction type nope"):
        tr.tensor("w/f32").reduction_value(0, "nope")
    with pytest.raises(ValueError, match="invalid mode"):
        tr.steps(mode="SOMETIMES")
    with pytest.raises(TypeError):
        tr.tensor("w/f32").value("zero")
    with pytest.raises(OSError, match="unknown scheme"):
        create_trial("ftp://nowhere/run")
    with pytest.raises(exceptions.SMDebugNotImplementedError):
        create_trial(trial_path, profiler=True)


def test_values_of_every_shape_are_read_only_c_ordered_views(trial_path):
    tr = create_trial(trial_path)
    for name in tr.tensor_names():
        t = tr.tensor(name)
        for s in t.steps():
            for w in t.workers(s):
                v = t.value(s, worker=w)
                assert v.flags.c_contiguous and not v.flags.writeable, (name, s, w)
                assert v.base is not None and v.shape == tuple(t.shape(s, worker=w))
                # The view's bytes are the value's: a copy compares equal.
                np.testing.assert_array_equal(np.array(v), v)


def _plain(x):
    """A DataFrame cell as plain Python: None for missing, lists for arrays."""
    import pandas as pd

    if x is None or x is pd.NA:
        return None
    if hasattr(x, "__len__") and not isinstance(x, str):
        return [_plain(y) for y in x]
    return x


def test_to_pandas_columns(trial_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    tr = create_trial(trial_path)
    df = tr.to_pandas()
    ref = tr.to_arrow().to_pandas()  # pyarrow's defaults: object columns
    assert list(df.columns) == list(ref.columns) and len(df) == len(ref)
    for col in df.columns:
        if df[col].dtype.kind in "fiu":
            assert df[col].dtype == ref[col].dtype, col
            np.testing.assert_array_equal(df[col].to_numpy(), ref[col].to_numpy())
        else:
            assert [_plain(x) for x in df[col]] == [_plain(x) for x in ref[col]], col
    if hasattr(pd, "ArrowDtype"):
        assert str(df["tensor"].dtype) == "string" and str(df["shape"].dtype).endswith("[pyarrow]")
    plain = tr.to_pandas(types_mapper=None)
    assert plain["tensor"].dtype == object


def test_to_arrow_and_to_pandas(trial_path):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    tr = create_trial(trial_path)
    table = tr.to_arrow()
    assert isinstance(table, pa.Table)
    # one row per (tensor, step, worker): 7 tensors x 5 steps x 2 workers
    assert table.num_rows == 7 * 5 * 2
    df = tr.to_pandas()
    assert len(df) == 70 and {"tensor", "step", "worker"} <= set(df.columns)
    row = df[(df.tensor == "w/f32") & (df.step == 0) & (df.worker == "worker_0")].iloc[0]
    v = tr.tensor("w/f32").value(0, worker="worker_0").astype(np.float64)
    assert row["max"] == pytest.approx(v.max())
    assert row["mean"] == pytest.approx(v.mean())
    steps = tr.to_pandas("steps")
    assert len(steps) == 10
    sel = tr.to_arrow(tensors="^w/f32$", mode=modes.ModeKeys.EVAL)
    assert sel.num_rows == 2 * 2
    small = tr.to_pandas(tensors="^loss$", values="small")
    assert len(small) == 10 and small["values"].notna().all()
    with pytest.raises(ValueError):
        tr.to_arrow("nope")
    # The raw capsule protocol, as polars/duckdb consume it; a stream is read once.
    obj = smdebug_rs._native.export_tables(tr, ["scalars"])["scalars"]
    reader = pa.RecordBatchReader.from_stream(obj)
    assert reader.read_all().num_rows >= 0
    with pytest.raises(exceptions.SMDebugRuntimeError):
        obj.__arrow_c_stream__()


def test_to_arrow_is_the_trial_as_opened_and_refreshed(trial_path, tmp_path):
    """The export runs over the user's own trial: its range_steps apply, and steps a live
    job wrote after the open are in the tables, as tensor_names() would show them."""
    pytest.importorskip("pyarrow")
    ranged = create_trial(trial_path, range_steps=(1, 3))
    table = ranged.to_arrow()
    assert table.num_rows == 7 * 2 * 2
    assert sorted(set(table.column("step").to_pylist())) == [1, 2]

    out = tmp_path / "live"
    hook = smdebug_rs.Hook(str(out), save_config=smdebug_rs.SaveConfig(save_interval=1),
                           include_collections=["weights"], worker="worker_0", num_workers=1)
    hook.get_collection("weights").include("^w$")

    def steps(n):
        for _ in range(n):
            hook.step()
            hook.save("w", np.ones((2, 2), dtype=np.float32))

    steps(2)
    hook.flush()
    live = create_trial(str(out))
    assert live.steps()[0] == 0 and len(live.steps()) < 4
    steps(2)
    hook.close()
    assert sorted(set(live.to_arrow().column("step").to_pylist())) == [0, 1, 2, 3]


def test_module_layout_of_the_original():
    import importlib

    for mod in ["smdebug_rs.trials", "smdebug_rs.modes", "smdebug_rs.exceptions",
                "smdebug_rs.rules", "smdebug_rs.core.collection", "smdebug_rs.core.modes",
                "smdebug_rs.core.tensor", "smdebug_rs.analysis.utils",
                "smdebug_rs.core.access_layer.utils"]:
        importlib.import_module(mod)
    from smdebug_rs.core.collection import Collection, CollectionKeys  # noqa: F401
    from smdebug_rs.core.modes import ModeKeys
    from smdebug_rs.rules import Rule, invoke_rule  # noqa: F401
    from smdebug_rs.trials import create_trial  # noqa: F401

    assert [m.value for m in ModeKeys] == [1, 2, 3, 4]


def test_public_names_where_the_original_has_them():
    """Each module of the original that we mirror holds the same public names (as objects
    of ours), and the exception module lists the original's classes."""
    import importlib

    import smdebug.exceptions

    import smdebug_rs
    import smdebug_rs.exceptions

    where = {
        "trials": ["create_trial", "Trial", "LocalTrial", "S3Trial"],
        "trials.trial": ["Trial"],
        "trials.local_trial": ["LocalTrial"],
        "trials.s3_trial": ["S3Trial"],
        "trials.utils": ["create_trial"],
        "rules": ["Rule", "invoke_rule", "RequiredTensors", "RequiredTensorsForTrial"],
        "rules.rule": ["Rule"],
        "rules.rule_invoker": ["invoke_rule"],
        "rules.req_tensors": ["RequiredTensors", "RequiredTensorsForTrial"],
        "xgboost": ["Hook"],
        "xgboost.hook": ["Hook"],
        "xgboost.utils": ["parse_tree_model"],
    }
    for mod, names in where.items():
        orig = importlib.import_module(f"smdebug.{mod}")
        ours = importlib.import_module(f"smdebug_rs.{mod}")
        for n in names:
            assert hasattr(orig, n), f"smdebug.{mod} has no {n}"
            assert hasattr(ours, n), f"smdebug_rs.{mod} has no {n}"
    assert smdebug_rs.rules.Rule is importlib.import_module("smdebug_rs.rules.rule").Rule
    # The generic hook lives in core.hook; smdebug_rs.hook is the documented older path.
    core_hook = importlib.import_module("smdebug_rs.core.hook")
    old_hook = importlib.import_module("smdebug_rs.hook")
    assert smdebug_rs.Hook is core_hook.Hook is old_hook.Hook
    assert old_hook.worker_from_env is core_hook.worker_from_env
    original = {n for n, c in vars(smdebug.exceptions).items()
                if isinstance(c, type) and issubclass(c, smdebug.exceptions.SMDebugError)}
    assert set(smdebug_rs.exceptions.__all__) == original


def test_values_and_reductions_match_the_original(trial_path):
    import smdebug.trials
    from smdebug.core.modes import ModeKeys as PyModes

    ours = create_trial(trial_path)
    theirs = smdebug.trials.create_trial(trial_path)
    for name in ["w/f32", "loss", "w/i64"]:
        for mode, py_mode in [(modes.ModeKeys.TRAIN, PyModes.TRAIN),
                              (modes.ModeKeys.EVAL, PyModes.EVAL)]:
            a = ours.tensor(name).values(mode=mode, worker="worker_1")
            b = theirs.tensor(name).values(mode=py_mode, worker="worker_1")
            assert sorted(a) == sorted(b), name
            for s in a:
                np.testing.assert_array_equal(a[s], b[s])
        for red in ["min", "max", "mean", "l1"]:
            for absolute in (False, True):
                got = []
                for tr in (ours, theirs):
                    try:
                        got.append(tr.tensor(name).reduction_value(2, red, abs=absolute))
                    except Exception as e:  # numpy's norm of a 0-d value raises in both
                        got.append(type(e).__name__)
                if isinstance(got[1], str):
                    assert got[0] == got[1], (name, red, got)
                else:
                    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)


def test_the_framework_names_of_the_stubs_are_the_native_ones(tmp_path):
    """``FrameworkName`` in _native.pyi spells out for type checkers the names
    ``smdebug_config::Framework`` accepts; the two must not drift apart."""
    import ast

    stub = os.path.join(os.path.dirname(smdebug_rs.__file__), "_native.pyi")
    with open(stub) as f:
        tree = ast.parse(f.read())
    literal = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                   and [t.id for t in node.targets] == ["FrameworkName"])
    names = [e.value for e in literal.slice.elts]
    assert names == list(smdebug_rs._native.FRAMEWORKS)
    for name in names:
        smdebug_rs.Hook(str(tmp_path / name), framework=name.upper(), dry_run=True,
                        worker="worker_0", num_workers=1).close()
    with pytest.raises(exceptions.SMDebugValueError, match="expected one of numpy, pytorch"):
        smdebug_rs.Hook(str(tmp_path / "jax"), framework="jax", dry_run=True,
                        worker="worker_0", num_workers=1)
