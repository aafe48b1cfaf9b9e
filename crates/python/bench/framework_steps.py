"""Step time of a small model trained on the CPU without a hook and with smdebug_rs's hook
or the original smdebug's, for `cargo xtask bench` (xtask/src/bench/frameworks.rs).

    python framework_steps.py FRAMEWORK HOOK CASE STEPS

FRAMEWORK: ``pytorch`` or ``mxnet`` (a small CNN, the hook registered on the module), or
``tensorflow`` (a small dense Keras model trained by ``model.fit``, the ``KerasHook`` passed
as a callback). HOOK: ``smdebug_rs`` or ``smdebug`` (the package whose
``<framework>.Hook``, or ``KerasHook``, is attached). CASE: ``interval`` (weights, gradients
and losses every 100 steps) or ``every`` (weights and gradients every step). Prints
``{"plain_s": …, "hooked_s": …}``: the mean step time without and with the hook. Means, not
medians: at a save interval of 100 the steps that save are the cost; the hook's end of trial
(``close``) is included, spread over the steps.

Measured in pairs: the process trains two identical models, one with the hook and one
without, alternately. Two processes running the same script differ by more than the 3 %
goal (the CPUs a process's threads land on, memory placement); within one process both
models share them.

* PyTorch and MXNet: blocks of ``BLOCK`` steps (which model runs first changes every block)
  after a warm-up of ``PAIRED_WARMUP`` steps each. Each hooked block that saves starts
  with the saving step (the warm-up ends where a save interval starts), so that work a
  hook leaves to a background thread after saving falls into the hooked model's time (for
  the rest of that block).
* Keras: ``KERAS_FITS`` calls of ``fit`` per model, alternated the same way, each over
  ``WARMUP`` batches, then its share of the measured steps, then one batch more. A step is
  the time from one batch's first callback to the next one's (taken by a callback placed
  before the hook), so what ``fit`` does before its first batches and after its last (the
  hook's ``on_train_begin``, ``on_epoch_end`` and ``on_train_end`` too, which a training
  of one long fit does once) is left out for both models.

One process per hook, so that no hook's state (the original keeps module hooks and a
singleton) reaches another; xtask interleaves the processes of the hooks.
"""

import gc
import importlib
import json
import os
import sys
import tempfile
import time

import numpy as np

WARMUP = 10
# The paired networks' warm-up: a whole save interval, so that measuring starts at a step
# that saves.
PAIRED_WARMUP = 100
BLOCK = 10
# The `fit` calls of each Keras model in a process, alternated.
KERAS_FITS = 12
BATCH = 32
CASES = {
    "interval": (100, ["weights", "gradients", "losses"]),
    "every": (1, ["weights", "gradients"]),
}


# The hook class of each package module, where it is not `Hook`.
HOOK_CLASS = {"tensorflow": "KerasHook"}
# The hook methods registering a model and its loss, where networks are measured in pairs.
REGISTER = {"pytorch": ("register_module", "register_loss"),
            "mxnet": ("register_block", "register_block")}


def hook_of(pkg, framework, case, out):
    smd = importlib.import_module(f"{pkg}.{framework}")
    interval, collections = CASES[case]
    cls = getattr(smd, HOOK_CLASS.get(framework, "Hook"))
    return cls(out_dir=out, save_config=smd.SaveConfig(save_interval=interval),
               include_collections=collections)


def torch_steps(pkg, case, steps, out):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    x = torch.randn(BATCH, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 10, (BATCH,), generator=torch.Generator().manual_seed(2))

    def network():
        torch.manual_seed(0)
        net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(16 * 5 * 5, 10))
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(net.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()

        return net, loss_fn, step

    return paired("pytorch", network, pkg, case, steps, out)


def mxnet_steps(pkg, case, steps, out):
    import mxnet as mx
    from mxnet import autograd, gluon
    from mxnet.gluon import nn

    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32))
    y = mx.nd.array(rng.randint(0, 10, size=(BATCH,)).astype(np.float32))

    def network():
        mx.random.seed(0)
        net = nn.HybridSequential()
        net.add(nn.Conv2D(8, 3, activation="relu"), nn.MaxPool2D(2),
                nn.Conv2D(16, 3, activation="relu"), nn.MaxPool2D(2), nn.Dense(10))
        net.initialize(mx.init.Xavier())
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
        net(x)  # shapes known before a hook looks at the parameters

        def step():
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(BATCH)
            mx.nd.waitall()

        return net, loss_fn, step

    return paired("mxnet", network, pkg, case, steps, out)


def keras_steps(pkg, case, steps, out):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    def model():
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
        m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    per_fit = steps // KERAS_FITS
    rng = np.random.default_rng(0)
    # One batch more than the warm-up and the measured steps: the last measured step ends
    # where that batch begins.
    n = (WARMUP + per_fit + 1) * BATCH
    x = rng.standard_normal((n, 64)).astype(np.float32)
    y = rng.integers(0, 10, size=(n,))

    class Clock(keras.callbacks.Callback):
        """The time from the first measured batch's first callback to the first callback of
        the batch after the measured ones."""

        start = None
        seconds = None

        def on_train_batch_begin(self, batch, logs=None):
            if batch == WARMUP:
                self.start = time.perf_counter()
            elif batch == WARMUP + per_fit:
                self.seconds = time.perf_counter() - self.start

    # Batches read in the train function's thread: with Keras's own pipeline (prefetching
    # threads) each step of a busy two-core machine waits a scheduler tick for the prefetch
    # thread, which hides what the hook costs.
    options = tf.data.Options()
    options.autotune.enabled = False
    options.threading.private_threadpool_size = 1
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).with_options(options)
    plain, hooked = model(), model()
    hook = hook_of(pkg, "tensorflow", case, out)
    # A first fit of each model traces its train function (and sets the hook up); its
    # objects are then frozen with the rest (see freeze_heap).
    for m in (plain, hooked):
        m.fit(data.take(WARMUP), epochs=1, verbose=0, callbacks=[hook] if m is hooked else [])
    freeze_heap()
    spent = {plain: 0.0, hooked: 0.0}
    for k in range(KERAS_FITS):
        for m in (plain, hooked) if k % 2 == 0 else (hooked, plain):
            clock = Clock()
            m.fit(data, epochs=1, verbose=0, callbacks=[clock] + ([hook] if m is hooked else []))
            spent[m] += clock.seconds
    measured = per_fit * KERAS_FITS
    return {"plain_s": spent[plain] / measured,
            "hooked_s": (spent[hooked] + close_seconds(hook)) / measured}


def freeze_heap():
    """Collects, then moves every object made so far (the framework's modules, the models,
    the traced functions) out of the garbage collector's reach. Otherwise a full collection
    walks all of them, over 100 ms with TensorFlow loaded, at moments that fall in one
    model's steps or the other's by chance: a difference between two runs of the same
    script larger than the hook's."""
    gc.collect()
    gc.freeze()


def close_seconds(hook):
    t = time.perf_counter()
    hook.close()
    return time.perf_counter() - t


def paired(framework, network, pkg, case, steps, out):
    """Mean step times of two networks from ``network()`` (``(model, loss, step)``), the
    second with the hook, alternated in blocks."""
    _, _, plain = network()
    model, loss, hooked = network()
    hook = hook_of(pkg, framework, case, out)
    register_model, register_loss = REGISTER[framework]
    getattr(hook, register_model)(model)
    getattr(hook, register_loss)(loss)
    plain_s, hooked_s = alternate(plain, hooked, steps)
    return {"plain_s": plain_s / steps, "hooked_s": (hooked_s + close_seconds(hook)) / steps}


def alternate(plain, hooked, steps):
    """Seconds spent in ``steps`` calls of each step function, alternated in blocks of
    ``BLOCK`` after ``PAIRED_WARMUP`` calls of each."""
    for _ in range(PAIRED_WARMUP):
        plain()
        hooked()
    freeze_heap()
    spent = {plain: 0.0, hooked: 0.0}
    for k, start in enumerate(range(0, steps, BLOCK)):
        # Which network runs first changes every block, so that neither is always the one
        # running after the other's work.
        for step in (plain, hooked) if k % 2 == 0 else (hooked, plain):
            t = time.perf_counter()
            for _ in range(min(BLOCK, steps - start)):
                step()
            spent[step] += time.perf_counter() - t
    return spent[plain], spent[hooked]


def main():
    framework, pkg, case, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if case not in CASES or pkg not in ("smdebug_rs", "smdebug"):
        sys.exit(f"usage: {sys.argv[0]} pytorch|mxnet|tensorflow smdebug_rs|smdebug "
                 "interval|every STEPS")
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    with tempfile.TemporaryDirectory() as d:
        fn = {"pytorch": torch_steps, "mxnet": mxnet_steps,
              "tensorflow": keras_steps}[framework]
        times = fn(pkg, case, steps, os.path.join(d, "trial"))
    print(json.dumps(times))


if __name__ == "__main__":
    main()
