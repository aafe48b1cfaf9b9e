"""Fleet-wide SQL over exported trials (docs/src/spark.md): each run exported with
`smdebug export TRIAL ROOT/run=<name>` (both layouts), the folder read by Spark as one table
per kind with the Hive partition column `run`, and the recipe's queries — the per-run,
per-layer gradient norm by step, and the runs whose loss never fell — answer what the Trial
API says of each trial."""

import os
import subprocess

import numpy as np
import pytest

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

from spark_helpers import smdebug_cli, spark_fixture, write_fleet  # noqa: E402

from smdebug_rs import modes  # noqa: E402
from smdebug_rs.spark import read_fleet_table  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

# The recipe's queries, as docs/src/spark.md gives them.
GRADIENT_NORMS = """
SELECT run, regexp_replace(tensor, '^gradients?/', '') AS layer, step,
       avg(l2) AS grad_norm
FROM tensors
WHERE array_contains(collections, 'gradients') AND mode = 'TRAIN'
GROUP BY run, tensor, step
ORDER BY run, layer, step
"""

LOSS_NEVER_FELL = """
WITH loss AS (
  SELECT run, step, avg(value) AS value
  FROM scalars WHERE name = 'loss' AND mode = 'TRAIN'
  GROUP BY run, step
)
SELECT run FROM loss
GROUP BY run
HAVING min(value) >= min_by(value, step)
ORDER BY run
"""


LAYOUTS = ("single", "partitioned")


spark = spark_fixture("test_spark_sql")

@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """8 runs (two with a rising loss, two with a NaN gradient), each exported in both
    layouts."""
    base = tmp_path_factory.mktemp("sql")
    runs = write_fleet(base / "trials", 8)
    for layout in LAYOUTS:
        for name, path in runs.items():
            subprocess.run([smdebug_cli(), "export", path,
                            str(base / layout / f"run={name}"), "--layout", layout],
                           check=True, capture_output=True)
    return {"runs": runs, "roots": {layout: str(base / layout) for layout in LAYOUTS}}


@pytest.fixture(scope="module", params=LAYOUTS)
def layout(request, spark, fleet):
    """The tables of one layout as the views `tensors` and `scalars`."""
    for table in ("tensors", "scalars"):
        read_fleet_table(spark, fleet["roots"][request.param], table, request.param) \
            .createOrReplaceTempView(table)
    return request.param


def test_the_export_folder_reads_as_one_table_with_the_run_column(spark, fleet, layout):
    runs = [r["run"] for r in spark.sql("SELECT DISTINCT run FROM tensors ORDER BY run").collect()]
    assert runs == sorted(fleet["runs"])
    steps = read_fleet_table(spark, fleet["roots"][layout], "steps", layout)
    assert steps.count() == 12 * len(fleet["runs"])
    assert sorted(r["run"] for r in steps.select("run").distinct().collect()) == runs
    with pytest.raises(ValueError, match="unknown table"):
        read_fleet_table(spark, fleet["roots"][layout], "tensor", layout)
    with pytest.raises(ValueError, match="unknown layout"):
        read_fleet_table(spark, fleet["roots"][layout], "steps", "auto")


def finite_norm(value):
    """The export's l2: over the finite elements, in float64."""
    v = np.asarray(value, dtype=np.float64).ravel()
    return float(np.sqrt(np.sum(v[np.isfinite(v)] ** 2)))


def test_gradient_norm_by_step_equals_the_trial_api(spark, fleet, layout):
    got = {(r["run"], r["layer"], r["step"]): r["grad_norm"]
           for r in spark.sql(GRADIENT_NORMS).collect()}
    want = {}
    for run, path in fleet["runs"].items():
        trial = create_trial(path)
        for name in trial.tensor_names(collection="gradients"):
            t = trial.tensor(name)
            layer = name.split("/", 1)[1]
            for step in t.steps():
                if trial.mode(step) != modes.TRAIN:
                    continue
                norms = [finite_norm(t.value(step, worker=w)) for w in t.workers(step)]
                want[(run, layer, step)] = sum(norms) / len(norms)
    assert len(want) == len(fleet["runs"]) * 2 * 12
    assert sorted(got) == sorted(want)
    for key, norm in want.items():
        assert got[key] == pytest.approx(norm, rel=1e-12), key


def test_runs_whose_loss_never_fell_equal_the_trial_api(spark, fleet, layout):
    got = [r["run"] for r in spark.sql(LOSS_NEVER_FELL).collect()]
    want = []
    for run, path in sorted(fleet["runs"].items()):
        loss = create_trial(path).tensor("loss")
        values = [loss.value(s).item() for s in sorted(loss.steps())]
        if all(v >= values[0] for v in values):
            want.append(run)
    assert got == want
    # The rising runs, and only they: the others' loss falls.
    assert want == sorted(r for r in fleet["runs"] if r.startswith("rising-"))
    assert len(want) == 2
