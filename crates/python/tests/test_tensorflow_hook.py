"""smdebug_rs.tensorflow (KerasHook on TensorFlow 2 / Keras 3): the original README's
example end to end, what is saved at which step (weights that step's forward used, the
gradients of that step's batch loss at them against a tf.GradientTape reference, the loss
Keras reported), compiled and eager train functions, wrap_tape loops, names, the JSON
configuration and get_hook, faults, and the trial read by the original's reader (smdebug
1.0.34 in the peer venv: it does not run beside TensorFlow 2.21, so it reads our trial in a
subprocess)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import (
    NUMERIC_IGNORES,
    PEER,
    assert_one_fault_logged,
    compare,
    import_tensorflow,
    mode_keyerror_ignores,
    subprocess_env,
)

tf, keras = import_tensorflow("TensorFlow hook tests")

import smdebug_rs.tensorflow as smd  # noqa: E402
from smdebug_rs.core.faults import fail  # noqa: E402
from smdebug_rs.tensorflow import keras as keras_module  # noqa: E402
from smdebug_rs.tensorflow import singleton_utils  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
# The original smdebug (numpy 1, protobuf 3) lives in the peer venv, which `cargo xtask
# test` names for every phase.
PEER_PYTHON = os.environ.get("SMDEBUG_PEER_PYTHON", "")
EVERY = dict(save_config=smd.SaveConfig(save_interval=1))
ALL_PARAMS = ["weights", "biases", "gradients", "losses", "metrics"]
BATCH, N, LR = 8, 32, 0.1


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    smd.del_hook()


def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] - x[:, 2] > 0).astype("int64")
    return x, y


def make_model(run_eagerly=False, optimizer=None, jit_compile="auto"):
    keras.utils.set_random_seed(11)
    # Names given: Keras numbers layers per process (dense_7 …).
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(5, activation="tanh", name="dense"),
                              keras.layers.Dense(2, activation="softmax", name="dense_1")],
                             name="sequential")
    model.compile(optimizer=optimizer or keras.optimizers.SGD(learning_rate=LR),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  run_eagerly=run_eagerly, jit_compile=jit_compile)
    return model


class Logs(keras.callbacks.Callback):
    """What Keras reported, batch by batch (runs after the hook in the callback list)."""

    def __init__(self):
        super().__init__()
        self.train, self.test, self.epochs = [], [], []

    def on_train_batch_end(self, batch, logs=None):
        self.train.append(dict(logs))

    def on_test_batch_end(self, batch, logs=None):
        self.test.append(dict(logs))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(dict(logs))


def fit(hook, run_eagerly=False, epochs=2, validation=False, **kw):
    """Seeded training (no shuffling); returns (model, Logs, initial weights)."""
    x, y = data()
    model = make_model(run_eagerly, **kw)
    initial = [w.numpy().copy() for w in model.weights]
    logs = Logs()
    cbs = ([hook] if hook is not None else []) + [logs]
    model.fit(x, y, epochs=epochs, batch_size=BATCH, shuffle=False, verbose=0,
              callbacks=cbs, validation_data=(x, y) if validation else None)
    return model, logs, initial


def batch_of(step):
    x, y = data()
    b = step % (N // BATCH)
    return x[b * BATCH:(b + 1) * BATCH], y[b * BATCH:(b + 1) * BATCH]


def reference_gradients(weights, step):
    """tf.GradientTape on a fresh model set to ``weights``: the gradients of step's batch
    loss."""
    model = make_model()
    model.set_weights(weights)
    x, y = batch_of(step)
    with tf.GradientTape() as tape:
        loss = keras.losses.sparse_categorical_crossentropy(y, model(x, training=True))
        loss = tf.reduce_mean(loss)
    return [g.numpy() for g in tape.gradient(loss, model.trainable_weights)], float(loss)


NAMES = ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
GRADS = ["gradients/dense/kernelGrad", "gradients/dense/biasGrad",
         "gradients/dense_1/kernelGrad", "gradients/dense_1/biasGrad"]


# -- the README example ----------------------------------------------------------------

@pytest.fixture(scope="module")
def readme_trial(tmp_path_factory):
    """examples/keras_fit.py (the README example) in a subprocess, saving weights and
    gradients too, every 2 steps; the hook is closed when the script exits."""
    out = tmp_path_factory.mktemp("readme") / "run"
    p = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "keras_fit.py"), "--out_dir", str(out),
         "--save_interval", "2", "--include_collections", *ALL_PARAMS],
        capture_output=True, text=True, timeout=300,
        env=subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def test_readme_example(readme_trial):
    out, stdout = readme_trial
    # Read while the hook was open (in the script): step 8 (EVAL 0) was published when
    # EVAL step 1 began; EVAL step 1 (global 9) is not due (every 2 mode steps). Steps 3
    # and 7, the epochs' last, are not due either: the epochs' losses and metrics are
    # forced into them.
    assert "steps: [0, 2, 3, 4, 6, 7, 8]" in stdout
    assert (out / "training_job_end.ts").exists()
    tr = create_trial(str(out))
    # 64 samples / 16 = 4 batches x 2 epochs = TRAIN 0..7, then 2 EVAL batches: 8, 9.
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 2, 3, 4, 6, 7]
    assert tr.steps(mode=smd.modes.EVAL) == [0]
    assert tr.steps() == [0, 2, 3, 4, 6, 7, 8]
    assert tr.global_step(smd.modes.EVAL, 0) == 8
    names = set(tr.tensor_names())
    assert {"loss", "accuracy", "batch"} <= names
    assert set(NAMES) <= names and set(GRADS) <= names
    assert tr.tensor("loss").steps() == [0, 2, 3, 4, 6, 7, 8]
    assert tr.tensor("batch").value(7)[0] == 1  # the epoch's index
    assert tr.tensor("gradients/dense/kernelGrad").steps() == [0, 2, 4, 6]  # TRAIN only
    assert tr.tensor("dense/kernel:0").steps() == [0, 2, 4, 6, 8]
    assert tr.tensor("dense/kernel:0").value(0).shape == (8, 16)
    cols = tr.collections()
    assert "dense/kernel:0" in cols["weights"].tensor_names
    assert "dense/bias:0" in cols["biases"].tensor_names
    assert set(GRADS) <= cols["gradients"].tensor_names
    assert "loss" in cols["losses"].tensor_names
    assert "accuracy" in cols["metrics"].tensor_names


def test_readme_default_hook_saves_losses_and_metrics(tmp_path):
    # The README's hook exactly (`KerasHook(out_dir=...)`): losses and metrics, every 500.
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"))
    _, logs, _ = fit(hook)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert sorted(tr.tensor_names()) == ["accuracy", "batch", "loss"]
    # Step 0, and the epochs' last steps (3, 7), where the epochs' values are forced.
    assert tr.steps() == [0, 3, 7]
    assert tr.tensor("loss").value(0)[0] == logs.train[0]["loss"]
    assert tr.tensor("loss").value(7)[0] == logs.epochs[1]["loss"]


def test_the_original_reader_reads_the_trial(readme_trial, tmp_path):
    """smdebug 1.0.34's reader (tests/peer/dump.py in the peer venv) and ours
    (dump_rs.py) say the same about the trial: steps, modes, names, values, collections."""
    out, _ = readme_trial
    assert PEER_PYTHON, "SMDEBUG_PEER_PYTHON is not set: run the suite with `cargo xtask test`"
    assert os.path.exists(PEER_PYTHON), f"the peer venv is missing: {PEER_PYTHON}"
    py_doc, rs_doc = tmp_path / "py.json", tmp_path / "rs.json"
    p = subprocess.run([PEER_PYTHON, os.path.join(PEER, "dump.py"), str(out), "--out",
                        str(py_doc), "--timeout", "300"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([sys.executable, os.path.join(HERE, "dump_rs.py"), str(out), "--out",
                        str(rs_doc), "--timeout", "300"], capture_output=True, text=True,
                       env=subprocess_env(SMDEBUG_RS_PEER_DIR=PEER))
    assert p.returncode == 0, p.stdout + p.stderr
    with open(py_doc) as f:
        py = json.load(f)
    assert "error" not in json.dumps(py["trial"]["steps"])
    assert py["trial"]["steps"] == {"GLOBAL": [0, 2, 3, 4, 6, 7, 8],
                                    "TRAIN": [0, 2, 3, 4, 6, 7],
                                    "EVAL": [0], "PREDICT": []}
    assert sorted(py["trial"]["modes"]) == ["EVAL", "TRAIN"]
    assert set(NAMES + GRADS + ["loss", "accuracy", "batch"]) == set(py["trial"]["tensor_names"])
    equal, report = compare(py_doc, rs_doc, NUMERIC_IGNORES + mode_keyerror_ignores(py))
    assert equal, report


# -- what is saved at which step -------------------------------------------------------

@pytest.mark.parametrize("run_eagerly,jit_compile", [(False, "auto"), (True, "auto"),
                                                     (False, True)],
                         ids=["compiled", "eager", "xla"])
def test_saved_values_are_those_of_the_step(tmp_path, run_eagerly, jit_compile):
    """Weights at s: those step s's forward used (the initial ones at 0, then each SGD
    update); gradients at s: step s's batch loss's at those weights (a GradientTape
    reference); loss at s: what Keras reported in step s's logs."""
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    model, logs, initial = fit(hook, run_eagerly=run_eagerly, jit_compile=jit_compile)
    assert model.jit_compile == (jit_compile is True)
    if jit_compile != True:  # noqa: E712 - the hook leaves training as it is
        assert _losses(logs) == reference_losses(run_eagerly)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    steps = 2 * (N // BATCH)
    assert tr.steps(mode=smd.modes.TRAIN) == list(range(steps))
    for name, w0 in zip(NAMES, initial):
        np.testing.assert_array_equal(tr.tensor(name).value(0), w0)
    for s in range(steps):
        weights = [np.array(tr.tensor(n).value(s)) for n in NAMES]
        grads = [tr.tensor(g).value(s) for g in GRADS]
        ref, batch_loss = reference_gradients(weights, s)
        for g, r, name in zip(grads, ref, GRADS):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-7, err_msg=f"{name} at {s}")
        if s + 1 < steps:  # SGD: the next step's weights are these minus lr * gradient
            for n, w, g in zip(NAMES, weights, grads):
                np.testing.assert_allclose(tr.tensor(n).value(s + 1), w - LR * g,
                                           rtol=1e-5, atol=1e-6, err_msg=f"{n} at {s + 1}")
        assert tr.tensor("loss").value(s)[0] == logs.train[s]["loss"]
        assert tr.tensor("accuracy").value(s)[0] == logs.train[s]["accuracy"]
        per = N // BATCH  # at an epoch's last step, the epoch's index (forced at its end)
        assert tr.tensor("batch").value(s)[0] == (s // per if s % per == per - 1 else s % per)
        if s % (N // BATCH) == 0:  # the epoch's first batch: Keras's mean is this batch's
            assert tr.tensor("loss").value(s)[0] == pytest.approx(batch_loss, rel=1e-5)
    # The final weights are the model's (the update after the last saved step).
    last = steps - 1
    for n, w in zip(NAMES, model.get_weights()):
        np.testing.assert_allclose(
            tr.tensor(n).value(last) - LR * tr.tensor(GRADS[NAMES.index(n)]).value(last), w,
            rtol=1e-5, atol=1e-6)


def test_modes_steps_and_validation(tmp_path):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    model, logs, _ = fit(hook, validation=True)
    x, y = data()
    model.predict(x, batch_size=16, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    per_epoch = N // BATCH
    # Per epoch: 4 TRAIN steps, then 4 EVAL steps of the validation; then 2 PREDICT steps.
    assert tr.steps(mode=smd.modes.TRAIN) == list(range(2 * per_epoch))
    assert tr.steps(mode=smd.modes.EVAL) == list(range(2 * per_epoch))
    assert tr.steps(mode=smd.modes.PREDICT) == [0, 1]
    assert tr.mode_modestep(4) == (smd.modes.EVAL, 0)
    assert tr.mode_modestep(8) == (smd.modes.TRAIN, 4)
    assert tr.global_step(smd.modes.PREDICT, 1) == 17
    # No gradients in EVAL / PREDICT steps; weights in every mode.
    assert tr.tensor("gradients/dense/kernelGrad").steps() == [0, 1, 2, 3, 8, 9, 10, 11]
    assert tr.tensor("dense/kernel:0").steps() == list(range(18))
    # EVAL losses are the validation batches' logs, but at an epoch's last step (EVAL 3,
    # 7), where the epoch's values are forced (training loss, val_*, batch = the epoch).
    assert [tr.tensor("loss").value(s, mode=smd.modes.EVAL)[0] for s in (0, 1, 2, 4, 5, 6)] \
        == [d["loss"] for i, d in enumerate(logs.test) if i % 4 != 3]
    assert tr.tensor("loss").value(3, mode=smd.modes.EVAL)[0] == logs.epochs[0]["loss"]
    assert tr.tensor("batch").value(7, mode=smd.modes.EVAL)[0] == 1
    assert tr.tensor("val_loss").steps() == [7, 15]
    assert tr.tensor("val_loss").value(15)[0] == logs.epochs[1]["val_loss"]
    assert tr.tensor("val_accuracy").value(7)[0] == logs.epochs[0]["val_accuracy"]


def test_epoch_end_forces_the_epochs_losses_and_metrics(tmp_path):
    """The original's on_epoch_end: the epoch's logs and batch = the epoch's index are
    written into the epoch's last step (EVAL after a validation) though it is not due,
    with the mode and mode step of that step; a due step keeps its other values."""
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         save_config=smd.SaveConfig(save_steps=[1]))
    _, logs, _ = fit(hook, validation=True)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    # Per epoch 4 TRAIN then 4 EVAL steps: TRAIN 0 and 1, EVAL 0 and 1 are due (global 0,
    # 1, 4, 5); the epochs end at EVAL 3 and 7 (global 7, 15), which are not.
    assert tr.steps() == [0, 1, 4, 5, 7, 15]
    assert tr.steps(mode=smd.modes.EVAL) == [0, 1, 3, 7]
    assert tr.mode_modestep(15) == (smd.modes.EVAL, 7)
    for step, epoch in ((7, 0), (15, 1)):
        assert sorted(tr.tensor_names(step=step)) == [
            "accuracy", "batch", "loss", "val_accuracy", "val_loss"]
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert tr.tensor(key).value(step)[0] == logs.epochs[epoch][key], (key, step)
        assert tr.tensor("batch").value(step)[0] == epoch
    # Not forced into other steps; the due steps hold the batches' values.
    assert tr.tensor("val_loss").steps() == [7, 15]
    assert tr.tensor("loss").value(1)[0] == logs.train[1]["loss"]
    assert tr.tensor("loss").value(5)[0] == logs.test[1]["loss"]
    cols = tr.collections()
    assert {"loss", "val_loss"} <= cols["losses"].tensor_names
    assert {"accuracy", "val_accuracy", "batch"} <= cols["metrics"].tensor_names


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["compiled", "eager"])
def test_layer_inputs_and_outputs(tmp_path, run_eagerly):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"),
                         include_collections=["layers", "weights", "biases"],
                         save_config=smd.SaveConfig(save_steps=[2]))
    model, _, _ = fit(hook, run_eagerly=run_eagerly, epochs=1)
    x, y = data()
    model.evaluate(x, y, batch_size=BATCH, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor("dense/outputs").steps() == [0, 2, 4, 6]  # TRAIN 0, 2; EVAL 0, 2
    assert sorted(tr.tensor_names()) == sorted(
        ["accuracy", "batch", "dense/inputs", "dense/outputs", "dense_1/inputs",
         "dense_1/outputs", "loss"] + NAMES)
    assert {"dense/inputs", "dense/outputs", "dense_1/inputs", "dense_1/outputs"} <= \
        set(tr.tensor_names())
    xb, _ = batch_of(2)
    np.testing.assert_array_equal(tr.tensor("dense/inputs").value(2), xb)
    np.testing.assert_array_equal(tr.tensor("dense/inputs").value(0, mode=smd.modes.EVAL),
                                  batch_of(0)[0])
    np.testing.assert_array_equal(tr.tensor("dense_1/inputs").value(2),
                                  tr.tensor("dense/outputs").value(2))
    # The outputs are those of the weights the step used.
    w, b = tr.tensor("dense/kernel:0").value(2), tr.tensor("dense/bias:0").value(2)
    np.testing.assert_allclose(tr.tensor("dense/outputs").value(2), np.tanh(xb @ w + b),
                               rtol=1e-5, atol=1e-6)
    assert tr.tensor("dense_1/outputs").value(2).shape == (BATCH, 2)


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["compiled", "eager"])
def test_model_inputs_labels_and_predictions(tmp_path, run_eagerly):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"),
                         include_collections=["inputs", "outputs", "weights", "biases"],
                         save_config=smd.SaveConfig(save_steps=[1]))
    model, _, _ = fit(hook, run_eagerly=run_eagerly, epochs=1)
    x, y = data()
    pred = model.predict(x, batch_size=BATCH, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor("inputs").steps() == [0, 1]  # TRAIN 0, 1 (PREDICT: no inputs)
    assert tr.tensor("predictions").steps() == [0, 1, 4, 5]  # and PREDICT 0, 1
    xb, yb = batch_of(1)
    np.testing.assert_array_equal(tr.tensor("inputs").value(1), xb)
    np.testing.assert_array_equal(tr.tensor("labels").value(1), yb)
    # The predictions of step 1's forward, at the weights it used.
    w = [np.array(tr.tensor(n).value(1)) for n in NAMES]
    ref = make_model()
    ref.set_weights(w)
    np.testing.assert_allclose(tr.tensor("predictions").value(1), ref(xb).numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(tr.tensor("predictions").value(1, mode=smd.modes.PREDICT),
                                  pred[BATCH:2 * BATCH])
    cols = tr.collections()
    assert "inputs" in cols["inputs"].tensor_names
    assert {"labels", "predictions"} <= cols["outputs"].tensor_names


def test_only_due_steps_are_saved_and_save_tensor(tmp_path):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         save_config=smd.SaveConfig(save_steps=[1, 6]))

    class Custom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            hook.save_tensor("custom", np.full(3, batch, "float32"), "custom")
            hook.save_scalar("lr", LR)

    x, y = data()
    model = make_model()
    model.fit(x, y, epochs=2, batch_size=BATCH, shuffle=False, verbose=0,
              callbacks=[hook, Custom()])
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    # Step 0 too: SaveConfig(save_steps=…) keeps its save_interval (500), as the
    # original's; steps 3 and 7 (the epochs' last) get the epochs' forced values and the
    # scalars cached since the last saved step; custom tensors only in due steps.
    assert tr.steps() == [0, 1, 3, 6, 7]
    assert tr.tensor_names(step=7) == ["accuracy", "batch", "loss", "scalar/lr"]
    assert tr.tensor("gradients/dense/kernelGrad").steps() == [0, 1, 6]
    assert tr.tensor("custom").steps() == [0, 1, 6]
    np.testing.assert_array_equal(tr.tensor("custom").value(6), np.full(3, 2, "float32"))
    assert "custom" in tr.collection("custom").tensor_names
    assert "scalar/lr" in tr.tensor_names()


# -- optimizer_variables ----------------------------------------------------------------

ADAM_SLOTS = [f"Adam/{slot}/{n}" for n in NAMES for slot in ("momentum", "velocity")]


def test_optimizer_variables(tmp_path):
    """Adam's variables under the Keras 2 form of their names, read when a TRAIN batch
    ends (after its update, as the original reads them): the slots follow Adam's update
    from the gradients saved at each step; no values in EVAL steps."""
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"),
                         include_collections=["optimizer_variables", "gradients"], **EVERY)
    b1, b2 = 0.9, 0.999
    model, _, _ = fit(hook, validation=True,
                      optimizer=keras.optimizers.Adam(learning_rate=0.01, beta_1=b1,
                                                      beta_2=b2))
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    opt_names = set(tr.collections()["optimizer_variables"].tensor_names)
    assert opt_names == set(ADAM_SLOTS + ["Adam/iteration:0", "Adam/learning_rate:0"])
    assert opt_names <= set(tr.tensor_names())
    steps = tr.steps(mode=smd.modes.TRAIN)
    assert steps == list(range(8))
    assert tr.tensor("Adam/iteration:0").steps() == [0, 1, 2, 3, 8, 9, 10, 11]  # TRAIN only
    m = {n: 0.0 for n in NAMES}
    v = {n: 0.0 for n in NAMES}
    for s in steps:
        assert tr.tensor("Adam/iteration:0").value(s, mode=smd.modes.TRAIN) == s + 1
        np.testing.assert_allclose(
            tr.tensor("Adam/learning_rate:0").value(s, mode=smd.modes.TRAIN), 0.01)
        for n, g in zip(NAMES, GRADS):
            grad = tr.tensor(g).value(s, mode=smd.modes.TRAIN)
            m[n] = b1 * m[n] + (1 - b1) * grad
            v[n] = b2 * v[n] + (1 - b2) * grad * grad
            np.testing.assert_allclose(
                tr.tensor(f"Adam/momentum/{n}").value(s, mode=smd.modes.TRAIN), m[n],
                rtol=1e-5, atol=1e-8, err_msg=f"momentum of {n} at {s}")
            np.testing.assert_allclose(
                tr.tensor(f"Adam/velocity/{n}").value(s, mode=smd.modes.TRAIN), v[n],
                rtol=1e-4, atol=1e-10, err_msg=f"velocity of {n} at {s}")
    # The last values are the optimizer's.
    last = dict(keras_module.optimizer_variable_names(model.optimizer, model))
    for name, var in last.items():
        np.testing.assert_allclose(tr.tensor(name).value(7, mode=smd.modes.TRAIN),
                                   var.numpy(), rtol=1e-6)


def test_optimizer_variable_names():
    model = make_model(optimizer=keras.optimizers.SGD(learning_rate=LR, momentum=0.9))
    x, y = data()
    model.fit(x, y, epochs=1, batch_size=BATCH, verbose=0)
    names = [n for n, _ in keras_module.optimizer_variable_names(model.optimizer, model)]
    assert names == ["SGD/iteration:0", "SGD/learning_rate:0"] + [
        f"SGD/momentum/{n}" for n in NAMES]
    # Without the model the slot variables keep Keras 3's names.
    assert [n for n, _ in keras_module.optimizer_variable_names(model.optimizer)][2] == \
        "SGD/sequential_dense_kernel_momentum:0"


# -- wrap_tape ------------------------------------------------------------------------

def test_wrap_tape_loop(tmp_path):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    model = make_model()
    hook.register_model(model)
    opt = keras.optimizers.SGD(learning_rate=LR)
    x, y = data()
    seen = []
    for s in range(3):
        xb, yb = batch_of(s)
        before = [w.numpy().copy() for w in model.trainable_weights]
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                yb, model(xb, training=True)))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        seen.append((before, [g.numpy() for g in grads], float(loss)))
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    assert sorted(tr.tensor_names()) == sorted(
        ["loss"] + GRADS + ["weights/" + n for n in NAMES])
    for s, (before, grads, loss) in enumerate(seen):
        for n, g, w in zip(NAMES, grads, before):
            gname = "gradients/" + n.split(":")[0] + "Grad"
            np.testing.assert_array_equal(tr.tensor(gname).value(s), g)
            np.testing.assert_array_equal(tr.tensor("weights/" + n).value(s), w)
        assert tr.tensor("loss").value(s) == np.float32(loss)
    cols = tr.collections()
    assert "weights/dense/kernel:0" in cols["weights"].tensor_names
    assert "weights/dense/bias:0" in cols["biases"].tensor_names
    assert "loss" in cols["losses"].tensor_names


# -- names ----------------------------------------------------------------------------

def test_names():
    seq = make_model()
    assert [keras_module.keras2_name(v, seq) for v in seq.weights] == NAMES
    assert [keras_module.gradient_name(v, seq) for v in seq.trainable_weights] == GRADS
    # Without the model, the Keras 3 path stays whole.
    assert keras_module.keras2_name(seq.weights[0]) == "sequential/dense/kernel:0"
    inp = keras.Input((3,))
    out = keras.layers.Dense(2, name="head")(keras.layers.Dense(4, name="hid")(inp))
    fn = keras.Model(inp, out, name="fn")
    assert [keras_module.keras2_name(v, fn) for v in fn.weights] == \
        ["hid/kernel:0", "hid/bias:0", "head/kernel:0", "head/bias:0"]
    assert keras_module.keras2_name(tf.Variable(1.0, name="plain")) == "plain:0"
    # A Sequential inside a functional model keeps its own name.
    inner = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")],
                             name="inner")
    i = keras.Input((3,))
    outer = keras.Model(i, keras.layers.Dense(1, name="top")(inner(i)), name="outer")
    assert [keras_module.keras2_name(v, outer) for v in outer.weights] == \
        ["inner/dense/kernel:0", "inner/dense/bias:0", "top/kernel:0", "top/bias:0"]


# -- configuration --------------------------------------------------------------------

def _json_config(tmp_path, out):
    cfg = tmp_path / "debughookconfig.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "3"},
        "CollectionConfigurations": [{"CollectionName": "weights"},
                                     {"CollectionName": "gradients"}],
    }))
    return cfg


def test_json_config_and_get_hook(tmp_path, monkeypatch):
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    monkeypatch.delenv("USE_SMDEBUG", raising=False)
    assert smd.get_hook() is None
    cfg = _json_config(tmp_path, tmp_path / "t")
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert smd.get_hook(create_if_not_exists=True) is None
    monkeypatch.setenv("USE_SMDEBUG", "true")
    assert smd.get_hook() is None  # the original's default: create_if_not_exists=False
    assert smd.get_hook(hook_type="session", create_if_not_exists=True) is None
    hook = smd.get_hook(hook_type="keras", create_if_not_exists=True)
    assert isinstance(hook, smd.KerasHook) and smd.get_hook() is hook
    assert hook.out_dir == str(tmp_path / "t")
    assert hook.include_collections == ["weights", "gradients", "metrics", "losses",
                                        "sm_metrics"]
    fit(hook, epochs=1)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3]
    assert sorted(tr.tensor_names()) == sorted(["dense/kernel:0", "dense_1/kernel:0",
                                                "accuracy", "batch", "loss"] + GRADS)
    with pytest.raises(FileNotFoundError):
        smd.KerasHook.create_from_json_file(str(tmp_path / "missing.json"))
    assert isinstance(smd.KerasHook.create_from_json_file(str(cfg)), smd.KerasHook)


def test_exports():
    for name in ["KerasHook", "SaveConfig", "SaveConfigMode", "ReductionConfig", "Collection",
                 "CollectionKeys", "modes", "create_trial", "get_hook", "get_collection"]:
        assert hasattr(smd, name), name
    assert not hasattr(smd, "SessionHook") and not hasattr(smd, "EstimatorHook")
    assert issubclass(smd.KerasHook, keras.callbacks.Callback)
    assert singleton_utils.get_hook is smd.get_hook


# -- faults ---------------------------------------------------------------------------


def _losses(logs):
    return [d["loss"] for d in logs.train]


_REFERENCE = {}


def reference_losses(run_eagerly=False):
    """The losses of fit() without a hook (trained once per mode)."""
    if run_eagerly not in _REFERENCE:
        _REFERENCE[run_eagerly] = _losses(fit(None, run_eagerly=run_eagerly)[1])
    return _REFERENCE[run_eagerly]


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["compiled", "eager"])
def test_a_fault_does_not_break_training(tmp_path, smdebug_log, run_eagerly):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    real = hook._native
    calls = {"n": 0}

    class Exploding:
        def __getattr__(self, name):
            if name == "save":
                def save(n, v):
                    calls["n"] += 1
                    if calls["n"] == 7:
                        raise RuntimeError("native hook exploded (injected)")
                    return real.save(n, v)
                return save
            return getattr(real, name)

    hook._native = Exploding()
    model, logs, _ = fit(hook, run_eagerly=run_eagerly)
    assert _losses(logs) == reference_losses(run_eagerly)
    assert not hook.enabled and hook.fault is not None
    assert_one_fault_logged(smdebug_log, "smdebug_rs.tensorflow", "RuntimeError",
                             "native hook exploded (injected)", "saving ")
    real.close()
    hook.close()  # off: does nothing
    # Training goes on with the wrappers inert; what was written is a finished trial.
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0] and tr.loaded_all_steps


def test_a_fault_in_the_gradient_tap_does_not_break_training(tmp_path, smdebug_log,
                                                            monkeypatch):

    def failing(self, opt, grads, variables):
        fail(self, "optimizer.apply", ValueError("tap failed (injected)"))

    monkeypatch.setattr(keras_module.KerasHook, "_tap_gradients", failing)
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    _, logs, _ = fit(hook)
    assert _losses(logs) == reference_losses()
    assert_one_fault_logged(smdebug_log, "optimizer.apply", "tap failed (injected)")


def test_unwritable_out_dir(tmp_path, smdebug_log):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    hook = smd.KerasHook(out_dir=str(blocker / "trial"), include_collections=ALL_PARAMS,
                         **EVERY)
    _, logs, _ = fit(hook)
    assert _losses(logs) == reference_losses()
    assert not hook.enabled and hook.fault is not None
    assert_one_fault_logged(smdebug_log, "smdebug_rs.tensorflow", "the hook is off")


def test_close_takes_the_wrappers_off(tmp_path):
    hook = smd.KerasHook(out_dir=str(tmp_path / "t"), include_collections=ALL_PARAMS,
                         **EVERY)
    model, _, _ = fit(hook, epochs=1)
    assert "apply" in model.optimizer.__dict__
    hook.close()
    assert "apply" not in model.optimizer.__dict__
    # Training again without the hook works (a new train function is traced).
    x, y = data()
    model.make_train_function(force=True)
    model.fit(x, y, epochs=1, batch_size=BATCH, verbose=0)
