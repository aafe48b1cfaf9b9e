"""Two torch.distributed (gloo) processes, each with the smdebug_rs PyTorch hook
(include_workers INCLUDE, "all" or "one"), writing one trial; each saves what it computed
to EXPECTED_<rank>.npz ("<step>:<tensor name>" → value) for the test to compare.

  python torch_dist_worker.py OUT_DIR EXPECTED_PREFIX INCLUDE
"""

import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, world, out, expected, include):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    import smdebug_rs.pytorch as smd

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    crit = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=out, include_workers=include,
                    save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "losses"])
    assert hook.worker == f"worker_{rank}", hook.worker
    hook.register_module(model)
    hook.register_loss(crit)
    keep = {}
    for step in range(3):
        g = torch.Generator().manual_seed(100 * rank + step)
        x, y = torch.randn(5, 3, generator=g), torch.randn(5, 1, generator=g)
        for n, p in model.named_parameters():
            keep[f"{step}:Sequential_{n}"] = p.detach().numpy().copy()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        for n, p in model.named_parameters():
            keep[f"{step}:gradient/Sequential_{n}"] = p.grad.numpy().copy()
            dist.all_reduce(p.grad)
            p.grad /= world
        keep[f"{step}:MSELoss_output_0"] = loss.detach().numpy().copy()
        opt.step()
    hook.close()
    np.savez(f"{expected}_{rank}.npz", **keep)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    out, expected, include = sys.argv[1:4]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    for k in ("RANK", "WORLD_SIZE"):
        os.environ.pop(k, None)
    # fork: the children inherit the imported torch (spawn would import it twice more).
    mp.start_processes(worker, args=(2, out, expected, include), nprocs=2, join=True,
                       start_method="fork")
