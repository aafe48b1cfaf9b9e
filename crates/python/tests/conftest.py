"""Shared helpers of the smdebug_rs pytest suite.

The suite runs in the peer venv (the real smdebug 1.0.34 and smdebug_rs side by side), so
every comparison calls both packages from the same Python. Trials are written by the real
smdebug writer classes (tests/peer/fixture.py).
"""

import importlib.util
import json
import logging
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PEER = os.environ.get("SMDEBUG_RS_PEER_DIR") or os.path.join(ROOT, "tests", "peer")
PRESETS = sorted(f[:-5] for f in os.listdir(os.path.join(PEER, "presets")) if f.endswith(".json"))

# numpy computes a 1-D l2 with BLAS dot, whose summation order depends on the kernel: the
# value is compared numerically through `data`, only its byte hash is skipped (as the Rust
# conformance suite does, tests/conformance/trial.rs NUMERIC_IGNORES).
NUMERIC_IGNORES = ["*/reduction_value/l2/sha256", "*/reduction_value/abs_l2/sha256"]

# [PY-BUG] paths per preset: Python reader bugs smdebug_rs does not reproduce (the same list
# as tests/conformance/trial.rs, docs/src/format.md §7.4 and §10.5).
PY_BUG_IGNORES = {
    # Raw tensor and shape saved in one step: Python keeps only the shape, we the value.
    "reductions": ["/tensors/both~1x/*"],
    "quirks": [
        # int8 decoded as uint8 by Python; we decode int8.
        "/tensors/dtype~1int8/*",
        # int16/uint16/uint32/uint64/complex64: Python's read table lacks them (KeyError).
        "/tensors/dtype~1int16/*",
        "/tensors/dtype~1uint16/*",
        "/tensors/dtype~1uint32/*",
        "/tensors/dtype~1uint64/*",
        "/tensors/dtype~1complex64/*",
        # Empty tensors: Python returns None or raises; we return the empty array.
        "/tensors/empty_raw~1*",
    ],
}


def smdebug_bin():
    """The ``smdebug`` binary of the build under test: ``$SMDEBUG_BIN``, else the debug
    build in ``$CARGO_TARGET_DIR`` or the workspace's ``target/``. Fails when missing."""
    candidates = [os.environ.get("SMDEBUG_BIN")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(os.path.join(os.environ["CARGO_TARGET_DIR"], "debug", "smdebug"))
    candidates.append(os.path.join(ROOT, "target", "debug", "smdebug"))
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    pytest.fail(f"no smdebug binary (tried {[c for c in candidates if c]}): "
                "`cargo build -p smdebug-cli` builds it")


def python_src():
    """The folder holding the smdebug_rs package under test (the development install's),
    found without importing the package."""
    spec = importlib.util.find_spec("smdebug_rs")
    if spec is None or spec.origin is None:
        pytest.fail("smdebug_rs is not importable")
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


def subprocess_env(**extra):
    """The environment of a child Python that must import the smdebug_rs under test: this
    process's, with :func:`python_src` first on ``PYTHONPATH``, plus ``extra``."""
    path = python_src() + os.pathsep + os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=path, **extra)


def import_tensorflow(tests, single_thread=True):
    """``(tensorflow, keras)`` for a test module, called at its top; skips the module when
    TensorFlow does not import (``tests`` says what is skipped). ``single_thread``: one
    intra-op and one inter-op thread, as the machine's cores are shared with other builds
    (left as they are when TensorFlow already ran something in this process)."""
    try:
        import tensorflow as tf
        import keras
    except ImportError as e:  # not installed, or installed but broken
        pytest.skip(f"tensorflow is not importable ({e}): no {tests}", allow_module_level=True)
    if single_thread:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(1)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # TensorFlow already ran something in this process
            pass
    return tf, keras


def zero_code_change_trials(tmp_path, script, write_config, timeout=300, off=True, **env):
    """Runs the training ``script`` three ways (two with ``off=False``) at once, each
    with a JSON configuration ``write_config(json path, out_dir)`` writing into
    ``tmp_path/<how>``: ``run`` (``python -m smdebug_rs run script``, the unchanged script),
    ``explicit`` (``script --explicit-hook``: the script makes its hook itself) and ``off``
    (``run`` with ``USE_SMDEBUG=false``; left out with ``off=False``, for a script whose
    imports cost seconds of CPU, when the caller checks the switch otherwise). Checks that
    they print the same losses (their last line, JSON), that ``off`` writes nothing, and
    that ``run`` and ``explicit`` wrote the same trial: names, steps of each mode, values.
    Returns the two trials."""
    import numpy as np

    from smdebug_rs import modes
    from smdebug_rs.trials import create_trial

    runs = {
        "run": ([sys.executable, "-m", "smdebug_rs", "run", script], {}),
        "explicit": ([sys.executable, script, "--explicit-hook"], {}),
        "off": ([sys.executable, "-m", "smdebug_rs", "run", script], {"USE_SMDEBUG": "false"}),
    }
    if not off:
        del runs["off"]
    procs = {}
    for how, (args, extra) in runs.items():
        cfg = write_config(tmp_path / f"{how}.json", tmp_path / how)
        child = subprocess_env(SMDEBUG_CONFIG_FILE_PATH=str(cfg), SMDEBUG_LOG_LEVEL="error",
                               **env, **extra)
        procs[how] = subprocess.Popen(args, env=child, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
    losses = {}
    for how, p in procs.items():
        stdout, stderr = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"{how}: {stderr}"
        losses[how] = json.loads(stdout.strip().splitlines()[-1])
    assert losses["run"] == losses["explicit"] == losses.get("off", losses["run"])
    assert not (tmp_path / "off").exists()
    auto, explicit = create_trial(str(tmp_path / "run")), create_trial(str(tmp_path / "explicit"))
    assert auto.tensor_names() == explicit.tensor_names()
    assert auto.steps() == explicit.steps()
    for mode in (modes.TRAIN, modes.EVAL, modes.PREDICT):
        assert auto.steps(mode=mode) == explicit.steps(mode=mode), mode
    for name in auto.tensor_names():
        t, e = auto.tensor(name), explicit.tensor(name)
        for mode in (modes.TRAIN, modes.EVAL, modes.PREDICT):
            assert t.steps(mode=mode) == e.steps(mode=mode), (name, mode)
        for s in t.steps():
            np.testing.assert_array_equal(t.value(s), e.value(s), err_msg=name)
    return auto, explicit


def run(args, **kwargs):
    """Runs a command; fails the test with its output if it fails."""
    p = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if p.returncode not in kwargs.pop("ok", (0,)):
        pytest.fail(f"{' '.join(map(str, args))} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def write_preset(preset, out):
    """The trial of a preset, written by the real smdebug writer into ``out``."""
    run([sys.executable, os.path.join(PEER, "fixture.py"), str(out), "--preset", preset,
         "--force", "-q"])
    return str(out)


def write_recipe(recipe, out):
    """A trial from a recipe (dict), written by the real smdebug writer."""
    path = str(out) + ".recipe.json"
    with open(path, "w") as f:
        json.dump(recipe, f)
    run([sys.executable, os.path.join(PEER, "fixture.py"), str(out), "--recipe", path,
         "--force", "-q"])
    return str(out)


def dump_python(path, out):
    """tests/peer/dump.py with the real smdebug."""
    run([sys.executable, os.path.join(PEER, "dump.py"), path, "--out", str(out),
         "--timeout", "300"])
    with open(out) as f:
        return json.load(f)


def dump_rs(path, out):
    """The same dump logic with smdebug_rs imported in smdebug's place."""
    env = dict(os.environ, SMDEBUG_RS_PEER_DIR=PEER)
    run([sys.executable, os.path.join(HERE, "dump_rs.py"), path, "--out", str(out),
         "--timeout", "300"], env=env)
    with open(out) as f:
        return json.load(f)


def mode_keyerror_ignores(py_doc):
    """[PY-BUG] ``tensor_names(mode=M)`` for a mode the trial never saw raises KeyError in
    Python (docs/src/semantics.md §8.6); smdebug_rs returns no names. Exact paths only."""
    out = []
    for mode, v in (py_doc.get("trial", {}).get("tensor_names_by_mode") or {}).items():
        if isinstance(v, dict) and v.get("error", {}).get("type") == "KeyError":
            out.append(f"/trial/tensor_names_by_mode/{mode}")
    return out


def ignores_for(preset, py_doc):
    return NUMERIC_IGNORES + PY_BUG_IGNORES.get(preset, []) + mode_keyerror_ignores(py_doc)


def compare(a, b, ignores):
    """compare_dumps.py in both directions; (equal, report)."""
    reports = []
    equal = True
    for x, y in ((a, b), (b, a)):
        args = [sys.executable, os.path.join(PEER, "compare_dumps.py"), str(x), str(y),
                "--max-diffs", "40"]
        for g in ignores:
            args += ["--ignore", g]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            pytest.fail(f"compare_dumps.py failed: {p.stdout}{p.stderr}")
        equal = equal and p.returncode == 0
        reports.append(p.stdout + p.stderr)
    return equal, "\n".join(reports)


@pytest.fixture(scope="session")
def preset_dir(tmp_path_factory):
    """Writes each preset once per session; returns a function preset -> path."""
    base = tmp_path_factory.mktemp("presets")
    done = {}

    def get(preset):
        if preset not in done:
            done[preset] = write_preset(preset, base / preset)
        return done[preset]

    return get


@pytest.fixture
def smdebug_log():
    """The ERROR records of logger ``smdebug_rs`` (it does not propagate to root): what a
    hook's fault policy logs."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.ERROR:
                records.append(record)

    h = Keep()
    logger = logging.getLogger("smdebug_rs")
    logger.addHandler(h)
    yield records
    logger.removeHandler(h)


def s3_target():
    """``(endpoint, bucket)`` of the S3 test server; fails the test when there is none."""
    endpoint = os.environ.get("SMDEBUG_TEST_S3_ENDPOINT")
    bucket = os.environ.get("SMDEBUG_TEST_S3_BUCKET")
    if not endpoint or not bucket:
        # As the rest of the suite: a test that needs a service fails without it, never skips.
        pytest.fail("no S3 test server (SMDEBUG_TEST_S3_ENDPOINT / SMDEBUG_TEST_S3_BUCKET): "
                    "cargo xtask test starts one; by hand, source `cargo xtask services`")
    return endpoint, bucket


def upload(local, bucket, prefix, endpoint):
    """Copies folder ``local`` to ``s3://bucket/prefix/`` on the test server."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint)
    for dirpath, _, files in os.walk(local):
        for f in files:
            p = os.path.join(dirpath, f)
            key = prefix + "/" + os.path.relpath(p, local).replace(os.sep, "/")
            s3.upload_file(p, bucket, key)


def rule_firings(rule):
    """Runs ``rule`` over every step its trial has and returns its firings."""
    from smdebug_rs import exceptions, rules

    try:
        rules.invoke_rule(rule)
    except exceptions.NoMoreData:
        pass
    return rule.firings


def assert_one_fault_logged(records, *needles):
    """Exactly one error was logged, and it names each of ``needles``."""
    assert len(records) == 1, [r.getMessage() for r in records]
    msg = records[0].getMessage()
    for n in needles:
        assert n in msg, msg
