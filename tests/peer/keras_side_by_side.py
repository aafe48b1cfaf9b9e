"""The Keras script run through both KerasHooks for the side-by-side comparison: the
original's (smdebug 1.0.34 on TensorFlow 2.12.1 / Keras 2, recorded once by
tf212_record.py) and ours (smdebug_rs.tensorflow on TensorFlow 2.21 / Keras 3,
crates/python/tests/test_tensorflow_vs_original.py). Only ``tensorflow`` and the hook
module differ; the data and the initial weights come from numpy, so both start alike.

``train(smd, out_dir, run)`` trains with hook module ``smd``; ``record(create_trial,
out_dir)`` turns a trial into the JSON-able recording both sides compare.
"""

import numpy as np
import tensorflow as tf

#: The runs: name -> save_interval. "every" compares values step by step; "sparse" leaves
#: the epochs' last steps not due, which the epoch-end forced save writes anyway.
RUNS = {"every": 1, "sparse": 3}
COLLECTIONS = ["weights", "biases", "gradients", "losses", "metrics", "optimizer_variables"]
LR = 0.1


def data():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = (x[:, 0] - x[:, 2] > 0).astype("int64")
    xv = rng.normal(size=(16, 4)).astype("float32")
    yv = (xv[:, 0] - xv[:, 2] > 0).astype("int64")
    return x, y, xv, yv


def initial_weights():
    rng = np.random.default_rng(9)
    return [rng.uniform(-0.5, 0.5, size=(4, 5)).astype("float32"),
            rng.uniform(-0.1, 0.1, size=(5,)).astype("float32"),
            rng.uniform(-0.5, 0.5, size=(5, 2)).astype("float32"),
            rng.uniform(-0.1, 0.1, size=(2,)).astype("float32")]


def keras2():
    return tf.__version__.startswith("2.") and int(tf.__version__.split(".")[1]) < 16


def train(smd, out_dir, run):
    """fit (2 epochs of 4 batches, a validation of 2 batches after each), then evaluate,
    with ``smd.KerasHook`` saving COLLECTIONS every RUNS[run] steps; the optimizer goes
    through ``hook.wrap_optimizer`` (the original finds optimizer variables only so)."""
    keras = tf.keras
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(5, activation="tanh", name="dense"),
                              keras.layers.Dense(2, activation="softmax", name="dense_1")],
                             name="sequential")
    model.set_weights(initial_weights())
    hook = smd.KerasHook(out_dir=out_dir,
                         save_config=smd.SaveConfig(save_interval=RUNS[run]),
                         include_collections=COLLECTIONS)
    # Keras 2's default optimizer has no add_weight, where the original finds optimizer
    # variables: the legacy one has.
    opt = (keras.optimizers.legacy.SGD if keras2() else keras.optimizers.SGD)(learning_rate=LR)
    opt = hook.wrap_optimizer(opt)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y, xv, yv = data()
    model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0, callbacks=[hook],
              validation_data=(xv, yv))
    model.evaluate(xv, yv, batch_size=8, verbose=0, callbacks=[hook])
    hook.close()


def record(create_trial, out_dir):
    """What a trial says: workers, steps per mode, collections' tensor names, and each
    tensor's (mode, mode step) and value at each of its steps."""
    tr = create_trial(out_dir)
    names = sorted(tr.tensor_names())
    modes = {}
    tensors = {}
    for n in names:
        t = tr.tensor(n)
        at = {}
        for g in t.steps():
            mode, mode_step = tr.mode_modestep(g)
            modes[str(g)] = [mode.name, mode_step]
            v = np.asarray(t.value(g))
            at[str(g)] = {"dtype": str(v.dtype), "shape": list(v.shape),
                          "value": v.astype("float64").ravel().tolist()}
        tensors[n] = at
    return {
        "workers": sorted(tr.workers()),
        "steps": sorted(int(g) for g in modes),
        "modes": modes,
        "collections": {c.name: sorted(c.tensor_names) for c in tr.collections().values()
                        if c.tensor_names},
        "tensors": tensors,
    }
