"""One small MXNet Gluon training run per configuration, with the hook of either package.

  python mxnet_train.py PACKAGE OUT_BASE CONFIG[,CONFIG…]

Each configuration writes the trial OUT_BASE/CONFIG, the loss of every step to
OUT_BASE/CONFIG.losses.json and OUT_BASE/CONFIG.meta.json (the parameter names, the custom
tensor names, the TRAIN steps), for test_mxnet_vs_original.py.

PACKAGE is ``smdebug`` (the original, smdebug.mxnet) or ``smdebug_rs``
(smdebug_rs.mxnet), or ``none`` (no hook at all: the reference losses). Runs are seeded,
on the CPU with MXNet's NaiveEngine and one OpenMP thread, so both packages see the same
arrays and name the blocks alike (Gluon numbers blocks per process: every package runs
the same configurations in the same order).

CONFIG:
  default    Hook(out_dir): the defaults (losses at step 0)
  save_all   save_all=True, every step
  json       get_hook from $SMDEBUG_CONFIG_FILE_PATH (create_if_not_exists=True here)
  custom     save_tensor into a custom collection, add_block_tensors, save_scalar
  nested     Sequential of HybridSequential and Sequential, everything every step
  deferred   layers without in_units (deferred initialisation), weights every step
  modes      TRAIN steps, then EVAL steps (weights, biases, gradients, losses every step)
  reductions weights and gradients as reductions (min, max, mean, l1, l2, abs_max) only
"""

import importlib
import json
import os
import sys

os.environ.setdefault("MXNET_ENGINE_TYPE", "NaiveEngine")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

STEPS = 4
EVAL_STEPS = 3


def make_net(config):
    if config == "nested":
        net = nn.Sequential()
        with net.name_scope():
            head = nn.HybridSequential()
            with head.name_scope():
                head.add(nn.Dense(5, in_units=4, activation="relu"))
            tail = nn.Sequential()
            with tail.name_scope():
                tail.add(nn.Dense(5, in_units=5), nn.Activation("tanh"),
                         nn.Dense(2, in_units=5))
            net.add(head, tail)
    elif config == "deferred":
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(6, activation="relu"), nn.Dense(2))
    else:
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(6, in_units=4, activation="relu"), nn.Dense(2, in_units=6))
    net.initialize(mx.init.Xavier())
    return net


def data(step):
    rng = np.random.RandomState(1000 + step)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.randint(0, 2, size=(8,)).astype(np.float32)
    return mx.nd.array(x), mx.nd.array(y)


def make_hook(pkg, smd, config, out, net):
    if config == "default":
        return smd.Hook(out_dir=out)
    if config == "json":
        if pkg == "smdebug_rs":
            return smd.get_hook(create_if_not_exists=True)
        return smd.get_hook()  # the original's has no create_if_not_exists: it always creates
    every = smd.SaveConfig(save_interval=1)
    if config == "custom":
        hook = smd.Hook(out_dir=out, save_config=every,
                        include_collections=["custom", "losses", "mine"])
        # The original needs the collection before its first step (made later, it has no
        # reduction config and save_tensor raises AttributeError).
        hook.get_collection("custom").add_tensor_name("custom_out_mean")
        hook.get_collection("mine").add_block_tensors(net[0], inputs=True, outputs=True)
        return hook
    if config in ("deferred", "modes"):
        return smd.Hook(out_dir=out, save_config=every,
                        include_collections=["weights", "biases", "gradients", "losses"])
    if config == "reductions":
        return smd.Hook(out_dir=out, save_config=every,
                        include_collections=["weights", "gradients", "losses"],
                        reduction_config=smd.ReductionConfig(
                            reductions=["min", "max", "mean"], abs_reductions=["max"],
                            norms=["l1", "l2"]))
    # save_all, nested: everything, every step
    return smd.Hook(out_dir=out, save_all=True, save_config=every)


def main():
    pkg, base = sys.argv[1:3]
    smd = None if pkg == "none" else importlib.import_module(pkg + ".mxnet")
    for config in sys.argv[3].split(","):
        out = os.path.join(base, config)
        losses, meta = train(pkg, smd, config, out)
        with open(out + ".losses.json", "w") as f:
            json.dump(losses, f)
        with open(out + ".meta.json", "w") as f:
            json.dump(meta, f)
        if smd is not None:
            smd.del_hook()


def train(pkg, smd, config, out):
    mx.random.seed(0)
    np.random.seed(0)
    net = make_net(config)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})

    hook = None
    if smd is not None:
        hook = make_hook(pkg, smd, config, out, net)
        hook.register_block(net)
        hook.register_block(loss_fn)
        if config == "modes":
            hook.set_mode(smd.modes.TRAIN)

    losses = []
    for step in range(STEPS):
        x, y = data(step)
        with autograd.record():
            out_ = net(x)
            loss = loss_fn(out_, y)
        loss.backward()
        trainer.step(x.shape[0])
        if hook is not None and config == "custom":
            hook.save_tensor("custom_out_mean", out_.mean(axis=0), "custom")
            hook.save_scalar("lr", 0.1)
        losses.append(float(loss.mean().asscalar()))
    if config == "modes":
        if hook is not None:
            hook.set_mode(smd.modes.EVAL)
        for step in range(EVAL_STEPS):
            x, y = data(100 + step)
            losses.append(float(loss_fn(net(x), y).mean().asscalar()))
    if hook is not None:
        hook.close()
    meta = {
        "params": sorted(p.name for p in net.collect_params().values()),
        "custom": ["custom_out_mean"] if config == "custom" else [],
        "train_steps": STEPS,
        # The last TRAIN step before set_mode(EVAL): the original writes no parameters and
        # no gradients for it.
        "last_train_before_eval": STEPS - 1 if config == "modes" else None,
        # The global steps of the EVAL steps (their parameters are not shifted).
        "eval_global_steps": list(range(STEPS, STEPS + EVAL_STEPS)) if config == "modes"
        else [],
    }
    return losses, meta


if __name__ == "__main__":
    main()
