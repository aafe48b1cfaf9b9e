"""Step time of a small CNN trained on the CPU, with no hook, with smdebug_rs's module hook or
with the original smdebug's, for `cargo xtask bench` (xtask/src/bench_frameworks.rs).

    python framework_steps.py FRAMEWORK HOOK CASE STEPS

FRAMEWORK: ``pytorch`` or ``mxnet``. HOOK: ``none``, ``smdebug_rs`` or ``smdebug`` (the
package whose ``<framework>.Hook`` is attached). CASE: ``interval`` (weights, gradients and
losses every 100 steps) or ``every`` (weights and gradients every step). Prints
``{"step_s": …}``: the mean step time over STEPS steps after a warm-up (a mean, not a
median: at a save interval of 100 the steps that save are the cost), the hook's end of trial
(``close``) included, spread over the steps.

One process per measurement, so that no hook's state (the original keeps module hooks and
a singleton) reaches another; xtask interleaves the processes of the three hooks.
"""

import importlib
import json
import os
import sys
import tempfile
import time

import numpy as np

WARMUP = 10
BATCH = 32
CASES = {
    "interval": (100, ["weights", "gradients", "losses"]),
    "every": (1, ["weights", "gradients"]),
}


def hook_of(pkg, framework, case, out):
    if pkg == "none":
        return None
    smd = importlib.import_module(f"{pkg}.{framework}")
    interval, collections = CASES[case]
    return smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=interval),
                    include_collections=collections)


def torch_steps(pkg, case, steps, out):
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,))
    hook = hook_of(pkg, "pytorch", case, out)
    if hook is not None:
        hook.register_module(net)
        hook.register_loss(loss_fn)

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    return run(step, steps, hook)


def mxnet_steps(pkg, case, steps, out):
    import mxnet as mx
    from mxnet import autograd, gluon
    from mxnet.gluon import nn

    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, activation="relu"), nn.MaxPool2D(2),
            nn.Conv2D(16, 3, activation="relu"), nn.MaxPool2D(2), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32))
    y = mx.nd.array(rng.randint(0, 10, size=(BATCH,)).astype(np.float32))
    net(x)  # shapes known before a hook looks at the parameters
    hook = hook_of(pkg, "mxnet", case, out)
    if hook is not None:
        hook.register_block(net)
        hook.register_block(loss_fn)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        mx.nd.waitall()

    return run(step, steps, hook)


def run(step, steps, hook):
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    if hook is not None:
        hook.close()
    closing = time.perf_counter() - t
    return (sum(times) + closing) / steps


def main():
    framework, pkg, case, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if case not in CASES or pkg not in ("none", "smdebug_rs", "smdebug"):
        sys.exit(f"usage: {sys.argv[0]} pytorch|mxnet none|smdebug_rs|smdebug "
                 "interval|every STEPS")
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    with tempfile.TemporaryDirectory() as d:
        fn = {"pytorch": torch_steps, "mxnet": mxnet_steps}[framework]
        step_s = fn(pkg, case, steps, os.path.join(d, "trial"))
    print(json.dumps({"step_s": step_s}))


if __name__ == "__main__":
    main()
