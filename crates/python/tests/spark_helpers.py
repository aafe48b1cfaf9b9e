"""Helpers of the smdebug_rs.spark tests (test_spark_*.py) and benchmark
(crates/python/bench/spark_fleet.py): a local SparkSession, fleets of small trials written
with smdebug_rs.Hook, and the `smdebug` CLI of the workspace build."""

import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# What each kind of run of a fleet looks like, and so which rules fire on it.
KINDS = ("healthy", "vanishing", "exploding", "rising")


def smdebug_cli():
    """The `smdebug` CLI: $SMDEBUG_BIN, else the workspace's debug build (which `cargo
    xtask test` makes before the Python suites run)."""
    path = os.environ.get("SMDEBUG_BIN") or os.path.join(ROOT, "target", "debug", "smdebug")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is missing: `cargo build -p smdebug-cli` builds it, or "
                           "set SMDEBUG_BIN")
    return path


def local_spark(app, master="local[2]"):
    """A SparkSession on `master` (default `local[2]`) with little driver memory and no UI;
    the executors' Python is this interpreter (so they import the same smdebug_rs). Returns
    (session, seconds it took to start)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    started = time.perf_counter()
    spark = (SparkSession.builder.master(master).appName(app)
             .config("spark.driver.memory", "512m")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark, time.perf_counter() - started


def spark_fixture(app):
    """A module-scoped pytest fixture `spark`: one local session per test file, stopped
    after its last test (`spark = spark_fixture("test_spark_x")` in the file)."""
    import pytest

    @pytest.fixture(scope="module")
    def spark():
        session, _ = local_spark(app)
        yield session
        session.stop()

    return spark


def write_run(out, kind, steps=12, seed=0, layers=("dense1", "dense2")):
    """A finished single-worker trial of `steps` TRAIN steps saved every step, written with
    smdebug_rs.Hook: per layer a weight (`<layer>/weight`, collection weights) and its
    gradient (`gradient/<layer>/weight`, collection gradients), and the loss (collection
    losses). `kind` (one of KINDS) decides what goes wrong: `vanishing` gradients become
    tiny from step 4 on, `exploding` ones hold a NaN at step 5, `rising` has a loss that
    grows; `healthy` runs have none of these. Returns the trial's path."""
    import smdebug_rs as smd

    if kind not in KINDS:
        raise ValueError(kind)
    rng = np.random.default_rng(seed)
    hook = smd.Hook(str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"],
                    worker="worker_0", num_workers=1)
    hook.set_mode(smd.modes.TRAIN)
    weights = {layer: rng.standard_normal((4, 3)).astype(np.float32) for layer in layers}
    for s in range(steps):
        hook.step()
        for i, layer in enumerate(layers):
            g = rng.uniform(0.1, 1.0, (4, 3)).astype(np.float32) * (i + 1)
            if kind == "vanishing" and s >= 4:
                g *= np.float32(1e-9)
            if kind == "exploding" and s == 5 and i == 0:
                g[1, 2] = np.nan
            weights[layer] = weights[layer] - np.float32(0.01) * g
            hook.save_tensor(f"{layer}/weight", weights[layer], "weights")
            hook.save_tensor(f"gradient/{layer}/weight", g, "gradients")
        if kind == "rising":
            loss = 1.0 + 0.1 * s
        else:
            loss = 2.0 / (s + 1) + float(rng.uniform(0, 0.01))
        hook.save_tensor("loss", np.float32(loss), "losses")
    hook.close()
    return str(out)


def write_fleet(base, n, steps=12, first=0):
    """`n` runs below `base` (`base/<kind>-<i>`, `i` from `first` on), cycling through
    KINDS; returns {name: path}."""
    runs = {}
    for i in range(first, first + n):
        kind = KINDS[i % len(KINDS)]
        name = f"{kind}-{i:03d}"
        runs[name] = write_run(os.path.join(str(base), name), kind, steps=steps, seed=i)
    return runs


def cli_verdicts(trial, rules, timeout=60, extra=()):
    """`smdebug rules TRIAL --rule … --json [extra…]`: (exit status, firings per rule,
    summary per rule, stderr)."""
    args = [smdebug_cli(), "rules", trial, "--json", "--timeout", str(timeout), *extra]
    for r in rules:
        args += ["--rule", r]
    p = subprocess.run(args, capture_output=True, text=True)
    firings, summary = {}, {}
    for line in p.stdout.splitlines():
        doc = json.loads(line)
        if "summary" in doc:
            summary = {s["rule"]: s for s in doc["summary"]}
        else:
            firings.setdefault(doc["rule"], []).append(doc)
    return p.returncode, firings, summary, p.stderr
