"""One rank of a torchrun job (gloo, CPU): the smdebug_rs PyTorch hook on a wrapped model —
KIND ``ddp`` (DistributedDataParallel), ``ddp_compiled`` (torch.compile of it) or ``fsdp2``
(``fully_shard`` on each layer and the root) — writing one trial, a worker per rank
(``fsdp2_one``: FSDP2 with include_workers="one"). Each
rank saves what an unwrapped replica of the model computes at each step to
EXPECTED_<rank>.npz ("<step>:<tensor name>" → value): the weights, the loss, and the
gradients the hook should save (the rank's own for DDP, whose tensor hooks see a rank's
gradient before the all-reduce; the average over ranks for FSDP2, whose gradients are the
reduced shards, saved whole).

  torchrun --standalone --nproc_per_node N torch_sharded_worker.py OUT_DIR EXPECTED KIND
"""

import copy
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 3


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def main(out, expected, kind):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    import smdebug_rs.pytorch as smd

    torch.manual_seed(0)
    model = MLP()
    replica = copy.deepcopy(model)
    if kind.startswith("ddp"):
        call = nn.parallel.DistributedDataParallel(model)
        if kind == "ddp_compiled":
            call = torch.compile(call, backend="aot_eager")
    elif kind.startswith("fsdp2"):
        from torch.distributed.fsdp import fully_shard
        fully_shard(model.fc1)
        fully_shard(model.fc2)
        fully_shard(model)
        call = model
    else:
        raise SystemExit(f"unknown kind {kind}")
    hook = smd.Hook(out_dir=out, include_workers="one" if kind == "fsdp2_one" else "all",
                    save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(call)
    crit = nn.MSELoss()
    hook.register_loss(crit)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(replica.parameters(), lr=0.1)
    keep = {}
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 * rank + step)
        x, y = torch.randn(5, 6, generator=g), torch.randn(5, 4, generator=g)
        for n, p in replica.named_parameters():
            keep[f"{step}:MLP_{n}"] = p.detach().numpy().copy()
        opt.zero_grad()
        loss = crit(call(x), y)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = nn.functional.mse_loss(replica(x), y)
        ref_loss.backward()
        keep[f"{step}:MSELoss_output_0"] = ref_loss.detach().numpy().copy()
        for n, p in replica.named_parameters():
            local = p.grad.numpy().copy()
            # The replica steps as the wrapped model does: with the averaged gradient.
            dist.all_reduce(p.grad)
            p.grad /= world
            saved = p.grad.numpy().copy() if kind.startswith("fsdp2") else local
            keep[f"{step}:gradient/MLP_{n}"] = saved
        ref_opt.step()
    hook.close()
    assert hook.fault is None, hook.fault
    np.savez(f"{expected}_{rank}.npz", **keep)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:4])
