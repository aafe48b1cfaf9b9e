"""The peer's dump logic run once with smdebug and once with smdebug_rs gives the same
`smdebug-trial-dump/v1` document (compare_dumps.py, both directions), except at the named
[PY-BUG] paths (conftest.PY_BUG_IGNORES, mode_keyerror_ignores)."""

import os
import random
import time

import pytest

from conftest import (
    PRESETS,
    compare,
    dump_python,
    dump_rs,
    ignores_for,
    s3_target,
    upload,
    write_recipe,
)

CONFORMANCE_PRESETS = [p for p in PRESETS if p != "large"]


def test_every_named_preset_is_there():
    for p in ["small", "modes", "workers", "reductions", "quirks", "edge"]:
        assert p in CONFORMANCE_PRESETS


@pytest.mark.parametrize("preset", CONFORMANCE_PRESETS)
def test_preset_dumps_equal(preset, preset_dir, tmp_path):
    path = preset_dir(preset)
    py = dump_python(path, tmp_path / "py.json")
    rs = dump_rs(path, tmp_path / "rs.json")
    assert isinstance(rs.get("tensors"), dict) and rs["tensors"], rs.get("trial")
    equal, report = compare(tmp_path / "py.json", tmp_path / "rs.json", ignores_for(preset, py))
    assert equal, f"{preset}: dumps differ:\n{report}"


def random_recipe(rng):
    """A small random recipe: 1-3 workers, a schedule of modes, a few tensors of common
    dtypes and shapes, collections with and without reductions, maybe skipped steps and no
    end marker (the strategy of tests/conformance/trial.rs)."""
    modes = ["TRAIN", "EVAL", "PREDICT", "GLOBAL"]
    workers = rng.randint(1, 3)
    schedule = [{"mode": rng.choice(modes), "steps": rng.randint(1, 3)}
                for _ in range(rng.randint(1, 3))]
    dtypes = ["float32", "float64", "int32", "int64", "bool", "float16"]
    shapes = [[], [1], [3], [2, 3], [2, 2, 2]]
    tensors = []
    for i in range(rng.randint(1, 4)):
        prefix = "red" if rng.random() < 0.5 else "raw"
        tensors.append({"name": f"{prefix}/t{i}", "dtype": rng.choice(dtypes),
                        "shape": rng.choice(shapes)})
    recipe = {
        "seed": rng.randrange(1000),
        "workers": workers,
        "schedule": schedule,
        "default_save_config": {"save_interval": 1},
        "training_ended": rng.random() < 0.5,
        "collections": [
            {"name": "raw", "include_regex": ["^raw/"]},
            {"name": "red", "include_regex": ["^red/"],
             "reduction_config": {"reductions": ["min", "max", "mean"], "norms": ["l2"],
                                  "abs_reductions": ["max"], "save_raw_tensor": False}},
        ],
        "tensors": tensors,
    }
    if workers > 1 and rng.random() < 0.5:
        recipe["worker_skip_steps"] = {"1": [1]}
    return recipe


@pytest.mark.parametrize("case", range(6))
def test_random_recipe_dumps_equal(case, tmp_path):
    seed = int(os.environ.get("SMDEBUG_RS_PYTEST_SEED", "20261124")) + case
    recipe = random_recipe(random.Random(seed))
    path = write_recipe(recipe, tmp_path / "trial")
    py = dump_python(path, tmp_path / "py.json")
    dump_rs(path, tmp_path / "rs.json")
    equal, report = compare(tmp_path / "py.json", tmp_path / "rs.json", ignores_for("random", py))
    assert equal, f"seed {seed}, recipe {recipe}:\n{report}"


@pytest.mark.parametrize("preset", CONFORMANCE_PRESETS)
def test_s3_dumps_equal_python_local(preset, preset_dir, tmp_path):
    endpoint, bucket = s3_target()
    local = preset_dir(preset)
    run_id = f"pytest-smdebug-rs/{os.getpid()}-{time.time_ns()}/{preset}"
    upload(local, bucket, run_id, endpoint)
    py = dump_python(local, tmp_path / "py.json")
    dump_rs(f"s3://{bucket}/{run_id}", tmp_path / "rs.json")
    equal, report = compare(tmp_path / "py.json", tmp_path / "rs.json", ignores_for(preset, py))
    assert equal, f"{preset} from S3: dumps differ:\n{report}"
