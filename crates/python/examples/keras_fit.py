#!/usr/bin/env python3
"""The original smdebug README's Keras example with ``smdebug`` changed to ``smdebug_rs``
(runs where TensorFlow 2 with Keras 3 is installed): a KerasHook passed to ``fit`` and
``evaluate``, then the trial read back.

  python keras_fit.py --out_dir OUT [--epochs 2] [--save_interval N]
                      [--include_collections weights gradients ...] [--run_eagerly]

Without the optional arguments the hook is the README's ``smd.KerasHook(out_dir=...)``
(losses and metrics every 500 steps).
"""

import argparse

import keras
import numpy as np

import smdebug_rs.tensorflow as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--save_interval", type=int)
parser.add_argument("--include_collections", nargs="*")
parser.add_argument("--run_eagerly", action="store_true")
args = parser.parse_args()

keras.utils.set_random_seed(7)
rng = np.random.default_rng(7)
x_train = rng.normal(size=(64, 8)).astype("float32")
y_train = (x_train[:, 0] + x_train[:, 1] > 0).astype("int64")
x_test, y_test = x_train[:32], y_train[:32]
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              metrics=["accuracy"], run_eagerly=args.run_eagerly)

extra = {}
if args.save_interval is not None:
    extra["save_config"] = smd.SaveConfig(save_interval=args.save_interval)
if args.include_collections is not None:
    extra["include_collections"] = args.include_collections

hook = smd.KerasHook(out_dir=args.out_dir, **extra)
model.fit(x_train, y_train, epochs=args.epochs, batch_size=16, callbacks=[hook], verbose=0)
model.evaluate(x_test, y_test, batch_size=16, callbacks=[hook], verbose=0)
trial = smd.create_trial(out_dir=args.out_dir)
print("steps:", trial.steps())
print("tensors:", trial.tensor_names())
# The hook is closed when Python exits: the last step is published, the end marker written.
