"""smdebug_rs.tensorflow.KerasHook on Keras 3's JAX backend (``KERAS_BACKEND=jax``, jax on
the CPU, in the TensorFlow venv): keras_plain_train.py with an explicit hook in a
subprocess, as a Keras backend is chosen once per process. The weights are those step s's
forward used, the gradients those of step s's batch loss at them (checked against a
tf.GradientTape on the TensorFlow backend, in this process), the loss what Keras reported;
layer inputs and outputs are not taken on JAX (a warning says so)."""

import json
import os
import subprocess
import sys

import numpy as np

from conftest import import_tensorflow, subprocess_env

import_tensorflow("Keras hook tests on the JAX backend")

import smdebug_rs.tensorflow as smd  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402
from test_tensorflow_hook import GRADS, LR, NAMES, reference_gradients  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_on_jax(tmp_path, collections):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(tmp_path / "t"),
        "HookParameters": {"save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": c} for c in collections],
    }))
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, "keras_plain_train.py"), "--explicit-hook"],
        capture_output=True, text=True, timeout=300,
        env=subprocess_env(KERAS_BACKEND="jax", SMDEBUG_CONFIG_FILE_PATH=str(cfg),
                           SMDEBUG_LOG_LEVEL="warning", TF_CPP_MIN_LOG_LEVEL="3",
                           JAX_PLATFORMS="cpu",
                           XLA_FLAGS="--xla_cpu_multi_thread_eigen=false"))
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["backend"] == "jax"
    return create_trial(str(tmp_path / "t")), out, p.stderr


def test_weights_gradients_and_losses_of_each_step(tmp_path):
    tr, out, _ = _run_on_jax(tmp_path, ["weights", "biases", "gradients", "losses", "metrics",
                                        "optimizer_variables"])
    # fit: 2 epochs of 4 batches, each followed by 2 validation batches; evaluate: 2
    # batches; predict: 1.
    assert tr.steps() == list(range(15))
    assert tr.steps(mode=smd.modes.TRAIN) == list(range(8))
    assert tr.steps(mode=smd.modes.EVAL) == list(range(6))
    assert set(NAMES + GRADS + ["loss", "accuracy", "batch", "val_loss", "SGD/iteration:0"]) \
        <= set(tr.tensor_names())
    train = smd.modes.TRAIN

    def value(name, s):
        return np.array(tr.tensor(name).value(s, mode=train))

    for s in range(8):
        weights = [value(n, s) for n in NAMES]
        grads = [value(g, s) for g in GRADS]
        ref, _ = reference_gradients(weights, s)
        for g, r, name in zip(grads, ref, GRADS):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-7, err_msg=f"{name} at {s}")
        if s + 1 < 8:  # SGD: the next step's weights are these minus lr * gradient
            for n, w, g in zip(NAMES, weights, grads):
                np.testing.assert_allclose(value(n, s + 1), w - LR * g, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{n} at {s + 1}")
        assert value("loss", s)[0] == out["batches"][s]
        # The optimizer's variables after the step's update: SGD counts its iterations.
        assert value("SGD/iteration:0", s) == s + 1


def test_layer_outputs_are_not_taken_and_a_warning_says_so(tmp_path):
    tr, _, stderr = _run_on_jax(tmp_path, ["layers", "losses"])
    assert "are not saved on the Keras backend 'jax'" in stderr
    assert "loss" in tr.tensor_names()
    assert not [n for n in tr.tensor_names() if n.endswith(("/inputs", "/outputs"))]
