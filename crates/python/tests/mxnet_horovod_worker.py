"""One Horovod process (run two with ``horovodrun -np 2 -H localhost:2 --gloo``), with the
smdebug_rs MXNet hook (``include_workers="all"``) writing its worker of one trial: a Gluon
network whose parameters rank 0 broadcasts, trained on each rank's own data with
``hvd.DistributedTrainer`` (gradients all-reduced). Each rank saves what it computed to
EXPECTED_<rank>.npz ("<step>:<tensor name>" → value) for test_mxnet_horovod.py.

  python mxnet_horovod_worker.py OUT_DIR EXPECTED_PREFIX
"""

import os
import sys

os.environ.setdefault("MXNET_ENGINE_TYPE", "NaiveEngine")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import horovod.mxnet as hvd  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

STEPS = 3
BATCH = 4


def main():
    out, expected = sys.argv[1], sys.argv[2]
    hvd.init()
    # After hvd.init(), as the original asks: the hook takes its worker from Horovod.
    import smdebug_rs.mxnet as smd

    mx.random.seed(0)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, in_units=3, activation="tanh"), nn.Dense(1, in_units=4))
    net.initialize(mx.init.Xavier())
    params = net.collect_params()
    hvd.broadcast_parameters(params, root_rank=0)
    loss_fn = gluon.loss.L2Loss()
    hook = smd.Hook(out_dir=out, include_workers="all",
                    save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_block(net)
    hook.register_block(loss_fn)
    trainer = hvd.DistributedTrainer(params, "sgd", {"learning_rate": 0.1})
    rng = np.random.RandomState(hvd.rank())
    saved = {}
    for step in range(STEPS):
        x = mx.nd.array(rng.standard_normal((BATCH, 3)).astype(np.float32))
        y = mx.nd.array(rng.standard_normal((BATCH, 1)).astype(np.float32))
        for name, p in params.items():
            saved[f"{step}:{name}"] = p.data().asnumpy().copy()
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)  # all-reduces the gradients, then updates
        # What the hook saves as step s's gradients: those the update used.
        for name, p in params.items():
            saved[f"{step}:gradient/{name}"] = p.grad().asnumpy().copy()
        saved[f"{step}:{loss_fn.name}_output_0"] = loss.asnumpy().copy()
    hook.close()
    if hook.fault is not None:
        sys.exit(f"the hook failed: {hook.fault.where}: {hook.fault.error!r}")
    np.savez(f"{expected}_{hvd.rank()}.npz", **saved)


if __name__ == "__main__":
    main()
