"""smdebug_rs.tensorflow under tf.distribute.MirroredStrategy, on two logical CPU devices
(tf_mirrored_train.py in a subprocess): one worker, ``worker_0``, whose values are those
the replicas agree on: the mirrored weights, the gradient the optimizer applies (the sum
of the replicas' shares: the gradient of the global batch's loss), the losses and
metrics Keras reports for the global batch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import import_tensorflow, subprocess_env

tf, keras = import_tensorflow("TensorFlow hook tests", single_thread=False)

from smdebug_rs import modes  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
GRADS = ["gradients/dense/kernelGrad", "gradients/dense/biasGrad",
         "gradients/dense_1/kernelGrad", "gradients/dense_1/biasGrad"]


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    d = tmp_path_factory.mktemp("mirrored")
    out, logs = d / "run", d / "logs.json"
    p = subprocess.run([sys.executable, os.path.join(HERE, "tf_mirrored_train.py"), str(out),
                        str(logs)], capture_output=True, text=True, timeout=300,
                       env=subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stdout + p.stderr
    with open(logs) as f:
        return out, json.load(f)


def test_one_worker(mirrored):
    out, logs = mirrored
    assert logs["replicas"] == 2
    tr = create_trial(str(out))
    assert tr.workers() == ["worker_0"]
    assert tr.num_workers == 1
    with open(out / "collections" / "000000000" / "worker_0_collections.json") as f:
        assert json.load(f)["_meta"]["num_workers"] == 1
    # 4 TRAIN and 4 EVAL (validation) steps per epoch, every one saved.
    assert tr.steps(mode=modes.TRAIN) == list(range(8))
    assert tr.steps(mode=modes.EVAL) == list(range(8))
    assert set(NAMES + GRADS + ["loss", "accuracy", "val_loss"]) <= set(tr.tensor_names())


def test_values_are_those_of_the_global_batch(mirrored):
    out, logs = mirrored
    tr = create_trial(str(out))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = (x[:, 0] - x[:, 2] > 0).astype("int64")
    ref = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="tanh"),
                            keras.layers.Dense(2, activation="softmax")])
    for s in range(8):
        weights = [tr.tensor(n).value(s, mode=modes.TRAIN) for n in NAMES]
        ref.set_weights(weights)
        b = s % 4
        xb, yb = x[b * 8:(b + 1) * 8], y[b * 8:(b + 1) * 8]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(yb, ref(xb)))
        for g, name in zip(tape.gradient(loss, ref.trainable_weights), GRADS):
            np.testing.assert_allclose(tr.tensor(name).value(s, mode=modes.TRAIN), g.numpy(),
                                       rtol=1e-5, atol=1e-7, err_msg=f"{name} at {s}")
        if b == 0:  # Keras reports the epoch's running mean: the batch's own at its first
            assert tr.tensor("loss").value(s, mode=modes.TRAIN)[0] == \
                pytest.approx(float(loss), rel=1e-5)
        if b != 3:  # an epoch's last TRAIN step: its values (not forced, EVAL follows)
            assert tr.tensor("loss").value(s, mode=modes.TRAIN)[0] == \
                pytest.approx(logs["train"][s]["loss"], rel=1e-6)
        if s + 1 < 8:  # SGD: the next weights are these minus lr times the gradient
            for n, w, g in zip(NAMES, weights, GRADS):
                np.testing.assert_allclose(
                    tr.tensor(n).value(s + 1, mode=modes.TRAIN),
                    w - 0.1 * tr.tensor(g).value(s, mode=modes.TRAIN), rtol=1e-5, atol=1e-6)
    # The epochs' values are forced into their last (EVAL) steps.
    for e, step in ((0, 7), (1, 15)):
        assert tr.tensor("val_loss").value(step)[0] == pytest.approx(
            logs["epochs"][e]["val_loss"], rel=1e-6)
    # The optimizer's iteration, read after each TRAIN step's update.
    iteration = tr.tensor("SGD/iteration:0")
    assert [int(iteration.value(s, mode=modes.TRAIN).ravel()[0]) for s in range(8)] == \
        list(range(1, 9))


def test_layer_values_are_one_replicas(mirrored):
    """Each replica runs the layers on its half of the global batch; the hook keeps the
    first half handed over in a step (which replica's is not fixed)."""
    out, _ = mirrored
    tr = create_trial(str(out))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(32, 4)).astype("float32")
    for s in range(8):
        b = s % 4
        got = tr.tensor("dense/inputs").value(s, mode=modes.TRAIN)
        halves = [x[b * 8:b * 8 + 4], x[b * 8 + 4:(b + 1) * 8]]
        assert any(np.array_equal(got, h) for h in halves), s
        assert tr.tensor("dense_1/outputs").value(s, mode=modes.TRAIN).shape == (4, 2)
