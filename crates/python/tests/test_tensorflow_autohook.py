"""smdebug_rs.tensorflow.autohook (zero code change for Keras: ``python -m smdebug_rs run``
on an unchanged Keras script) and the built-in rules on real Keras runs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import import_tensorflow, rule_firings, subprocess_env, zero_code_change_trials

tf, keras = import_tensorflow("Keras autohook tests")

import smdebug_rs.tensorflow as smd  # noqa: E402
from smdebug_rs import rules  # noqa: E402
from smdebug_rs.tensorflow import autohook, singleton_utils  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    autohook.uninstall()
    smd.del_hook()


def _json_config(path, out):
    path.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": "weights"},
                                     {"CollectionName": "gradients"},
                                     {"CollectionName": "losses"}],
    }))
    return path


def _model(lr=0.1, loss="sparse_categorical_crossentropy", units=2, activation="softmax"):
    keras.utils.set_random_seed(11)
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(5, activation="tanh", name="dense"),
                              keras.layers.Dense(units, activation=activation,
                                                 name="dense_1")])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss=loss)
    return model


def _data(n=32):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x[:, 0] - x[:, 2] > 0).astype("int64")


# -- zero code change ---------------------------------------------------------------------


def test_zero_code_change_writes_what_an_explicit_hook_writes(tmp_path):
    run, explicit = zero_code_change_trials(tmp_path, os.path.join(HERE, "keras_plain_train.py"),
                                            _json_config, TF_CPP_MIN_LOG_LEVEL="3")
    assert {"loss", "dense/kernel:0", "gradients/dense/kernelGrad"} <= set(run.tensor_names())
    # fit: 2 epochs of 4 batches, each followed by 2 validation batches; evaluate: 2
    # batches; predict: 1.
    assert run.steps() == list(range(15))
    assert len(run.steps(mode=smd.modes.PREDICT)) == 1


def test_install_wraps_only_fit_evaluate_predict(tmp_path, monkeypatch):
    before = dict(vars(keras.Model))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH",
                       str(_json_config(tmp_path / "c.json", tmp_path / "t")))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert not autohook.install() and not autohook.installed()
    monkeypatch.delenv("USE_SMDEBUG")
    assert autohook.install() and autohook.installed()
    changed = {k for k, v in vars(keras.Model).items() if before.get(k, None) is not v}
    assert changed == set(autohook.PATCHED)
    x, y = _data()
    model = _model()
    model.fit(x, y, 8, 1, 0)  # callbacks may come positionally: none given here
    hook = smd.get_hook()
    assert isinstance(hook, smd.KerasHook)
    model.predict(x[:8], batch_size=8, verbose=0)
    # A KerasHook given is kept, not doubled; positional callbacks are seen. (Made last, it
    # is the singleton from now on, as in the original.)
    other = smd.KerasHook(out_dir=str(tmp_path / "other"), include_collections=["losses"],
                          save_config=smd.SaveConfig(save_interval=1))
    model.evaluate(x, y, 16, 0, None, None, [other])
    assert smd.get_hook() is other
    hook.close()
    other.close()
    t = create_trial(str(tmp_path / "t"))
    assert t.steps() == [0, 1, 2, 3, 4]
    assert [t.steps(mode=m) for m in (smd.modes.TRAIN, smd.modes.EVAL, smd.modes.PREDICT)] \
        == [[0, 1, 2, 3], [], [0]]
    assert create_trial(str(tmp_path / "other")).steps(mode=smd.modes.EVAL) == [0, 1]
    autohook.uninstall()
    assert not autohook.installed() and dict(vars(keras.Model)) == before


def test_without_config_the_wrappers_take_themselves_off(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "missing.json"))
    monkeypatch.delenv("USE_SMDEBUG", raising=False)
    assert autohook.install()
    x, y = _data()
    loss = _model().fit(x, y, batch_size=8, verbose=0).history["loss"]
    assert not autohook.installed() and smd.get_hook() is None
    assert loss == _model().fit(x, y, batch_size=8, verbose=0).history["loss"]


# -- built-in rules on real Keras runs ----------------------------------------------------


def _rule_run(out, lr):
    """A small regression fitted with SGD at ``lr``: 0.05 learns, 50 diverges to inf/NaN."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32"))[:, None]
    model = _model(lr=lr, loss="mse", units=1, activation=None)
    hook = smd.KerasHook(out_dir=out, include_collections=["weights", "gradients", "losses"],
                         save_config=smd.SaveConfig(save_interval=1))
    history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
                        callbacks=[hook])
    hook.close()
    return create_trial(out), history.history["loss"]


def test_exploding_tensor_fires_on_a_diverging_keras_run(tmp_path):
    tr, loss = _rule_run(str(tmp_path / "diverging"), lr=50.0)
    assert not np.isfinite(loss[-1])
    for collection in ("gradients", "weights", "losses"):
        firings = rule_firings(rules.ExplodingTensor(tr, collection_names=collection))
        assert firings, collection
    firings = rule_firings(rules.ExplodingTensor(tr, collection_names="losses"))
    first = firings[0]["step"]
    assert not np.isfinite(tr.tensor("loss").value(first))
    assert all(np.isfinite(tr.tensor("loss").value(s)) for s in tr.steps() if s < first)


def test_default_rules_stay_silent_on_a_healthy_keras_run(tmp_path):
    tr, loss = _rule_run(str(tmp_path / "healthy"), lr=0.05)
    assert loss[-1] < loss[0]
    assert {"gradients/dense/kernelGrad", "dense/kernel:0", "loss"} <= set(tr.tensor_names())
    for rule in (rules.VanishingGradient(tr),
                 rules.ExplodingTensor(tr, collection_names="gradients"),
                 rules.ExplodingTensor(tr, collection_names="losses"),
                 rules.WeightUpdateRatio(tr),
                 rules.LossNotDecreasing(tr, num_steps=5)):
        assert rule_firings(rule) == [], type(rule).__name__


def test_run_imports_no_framework_the_script_does_not(tmp_path):
    """`run` installs a framework's autohook only once the script imports the framework, so a
    script that uses none does not pay for TensorFlow's (or torch's) import."""
    script = tmp_path / "plain.py"
    script.write_text("import json, sys\n"
                      "print(json.dumps(sorted(m for m in ('tensorflow', 'keras', 'torch')"
                      " if m in sys.modules)))\n")
    cfg = _json_config(tmp_path / "c.json", tmp_path / "out")
    env = subprocess_env(SMDEBUG_CONFIG_FILE_PATH=str(cfg), SMDEBUG_LOG_LEVEL="error")
    p = subprocess.run([sys.executable, "-m", "smdebug_rs", "run", str(script)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == []
    assert not (tmp_path / "out").exists()
