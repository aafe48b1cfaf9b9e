"""Step time of a small transformer trained as PyTorch jobs train today, without a hook and
with one, for `cargo xtask bench` (xtask/src/bench/pytorch_practice.rs).

    python torch_practice_steps.py SETUP HOOK STEPS
    torchrun --standalone --nproc_per_node 2 torch_practice_steps.py ddp smdebug_rs STEPS

SETUP: ``compiled`` (``torch.compile`` with inductor) or ``ddp`` (DistributedDataParallel on
gloo, under torchrun; rank 0 prints). HOOK, each saving weights, gradients and the loss
every 100 steps: ``smdebug_rs`` (``smdebug_rs.pytorch.Hook`` on the model), ``tensorboard``
(a ``torch.utils.tensorboard.SummaryWriter`` writing a histogram of every weight and
gradient and the loss as a scalar) or ``wandb`` (``wandb.watch(model, log="all",
log_freq=100)`` in offline mode, the loss logged at the same steps). Prints
``{"plain_s": …, "hooked_s": …}``: mean step times of two identical models, one without a
hook, trained alternately in one process (framework_steps.py's ``alternate``).
"""

import json
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from framework_steps import alternate  # noqa: E402

INTERVAL = 100
VOCAB, SEQ, BATCH, WIDTH, LAYERS, HEADS = 256, 32, 8, 64, 2, 4


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0,
                                           batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


def network(setup, hook_kind, out):
    """``step()`` of a fresh seeded TinyLM set up as ``setup``, with ``hook_kind`` (or None)
    attached; and what ends the hook."""
    torch.manual_seed(0)
    model = TinyLM()
    call = model
    if setup == "ddp":
        call = nn.parallel.DistributedDataParallel(model)
    if setup == "compiled":
        call = torch.compile(model)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    y = torch.randint(0, VOCAB, (BATCH * SEQ,), generator=g)
    log, end = None, lambda: None
    if hook_kind == "smdebug_rs":
        import smdebug_rs.pytorch as smd

        hook = smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=INTERVAL),
                        include_collections=["weights", "gradients", "losses"])
        hook.register_module(call)
        hook.register_loss(loss_fn)
        end = hook.close
    elif hook_kind == "tensorboard":
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(out)

        def log(n, loss):
            for name, p in model.named_parameters():
                writer.add_histogram(name, p, n)
                writer.add_histogram(name + "/grad", p.grad, n)
            writer.add_scalar("loss", loss, n)

        end = writer.close
    elif hook_kind == "wandb":
        import wandb

        run = wandb.init(mode="offline", dir=out, project="bench", settings=wandb.Settings(
            silent=True, console="off"))
        wandb.watch(model, log="all", log_freq=INTERVAL)

        def log(n, loss):
            run.log({"loss": loss}, step=n)

        end = run.finish
    elif hook_kind is not None:
        raise SystemExit(f"unknown hook {hook_kind}")
    count = [0]

    def step():
        opt.zero_grad()
        loss = loss_fn(call(x).reshape(-1, VOCAB), y)
        loss.backward()
        if log is not None and count[0] % INTERVAL == 0:
            log(count[0], loss.item())
        opt.step()
        count[0] += 1

    return step, end


def main():
    setup, hook_kind, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    os.environ.setdefault("WANDB_SILENT", "true")
    torch.set_num_threads(1)
    rank = 0
    if setup == "ddp":
        import torch.distributed as dist

        dist.init_process_group("gloo")
        rank = dist.get_rank()
    with tempfile.TemporaryDirectory() as d:
        plain, _ = network(setup, None, None)
        hooked, end = network(setup, hook_kind, os.path.join(d, "out"))
        plain_s, hooked_s = alternate(plain, hooked, steps)
        # Ending the hook (its last writes) is spread over the steps, as for the others.
        started = time.perf_counter()
        end()
        hooked_s += time.perf_counter() - started
    if rank == 0:
        print(json.dumps({"plain_s": plain_s / steps, "hooked_s": hooked_s / steps}))


if __name__ == "__main__":
    main()
