"""A Keras fit under tf.distribute.MirroredStrategy on two logical CPU devices, with a
KerasHook saving every step (test_tensorflow_distributed.py runs it in a subprocess: the
logical devices must be set before TensorFlow starts).

  python tf_mirrored_train.py OUT_DIR LOGS_JSON
"""

import json
import sys

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import smdebug_rs.tensorflow as smd  # noqa: E402

out_dir, logs_path = sys.argv[1], sys.argv[2]
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(3)
x = rng.normal(size=(32, 4)).astype("float32")
y = (x[:, 0] - x[:, 2] > 0).astype("int64")
with strategy.scope():
    keras.utils.set_random_seed(11)
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(5, activation="tanh", name="dense"),
                              keras.layers.Dense(2, activation="softmax", name="dense_1")],
                             name="sequential")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])


class Logs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.train, self.epochs = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.train.append({k: float(v) for k, v in logs.items()})

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append({k: float(v) for k, v in logs.items()})


hook = smd.KerasHook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                     include_collections=["weights", "biases", "gradients", "losses",
                                          "metrics", "optimizer_variables", "layers"])
logs = Logs()
model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0, callbacks=[hook, logs],
          validation_data=(x, y))
hook.close()
with open(logs_path, "w") as f:
    json.dump({"replicas": strategy.num_replicas_in_sync, "train": logs.train,
               "epochs": logs.epochs,
               "final": [w.tolist() for w in model.get_weights()]}, f)
