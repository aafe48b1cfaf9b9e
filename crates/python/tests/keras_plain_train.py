"""A Keras training script that knows nothing of smdebug (the zero-code-change test).

  python -m smdebug_rs run keras_plain_train.py       # the hook from the JSON config
  python keras_plain_train.py --explicit-hook         # the same with an explicit hook

Fits (with validation), evaluates and predicts; prints the losses (JSON) as its last line:
each epoch's, each training batch's (as Keras reported them), evaluate's and predict's
outputs, and the Keras backend it ran on (``KERAS_BACKEND`` chooses it).
"""

import json
import sys

import keras
import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(11)

rng = np.random.default_rng(3)
x = rng.normal(size=(32, 4)).astype("float32")
y = (x[:, 0] - x[:, 2] > 0).astype("int64")
model = keras.Sequential([keras.Input((4,)),
                          keras.layers.Dense(5, activation="tanh", name="dense"),
                          keras.layers.Dense(2, activation="softmax", name="dense_1")],
                         name="sequential")
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])


class BatchLosses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(logs["loss"])


batch_losses = BatchLosses()
callbacks = [batch_losses]
hook = None
if "--explicit-hook" in sys.argv:
    import smdebug_rs.tensorflow as smd

    hook = smd.get_hook(create_if_not_exists=True)
    callbacks = [hook, batch_losses]

history = model.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:16], y[:16]),
                    shuffle=False, verbose=0, callbacks=callbacks)
evaluated = model.evaluate(x, y, batch_size=16, verbose=0, callbacks=callbacks)
predicted = model.predict(x[:8], batch_size=8, verbose=0, callbacks=callbacks)
if hook is not None:
    hook.close()
print(json.dumps({"fit": history.history["loss"], "val": history.history["val_loss"],
                  "batches": batch_losses.losses, "evaluate": evaluated,
                  "predict": predicted.tolist(), "backend": keras.backend.backend()}))
