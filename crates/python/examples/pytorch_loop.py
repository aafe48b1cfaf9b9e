#!/usr/bin/env python3
"""The shape of a PyTorch loop with smdebug_rs.Hook (runs where torch is installed).

The framework-neutral ``smdebug_rs.Hook``: the loop offers what it wants saved (for module
hooks that find the tensors themselves, see ``smdebug_rs.pytorch.Hook``). CPU tensors go in
as they are (through ``__array__``, one copy); call ``.detach().cpu()`` on GPU tensors
first, ideally only when ``hook.should_save_tensor(name)`` says they are due this step.

  python pytorch_loop.py [OUT_DIR]
"""

import sys
import tempfile

import torch

import smdebug_rs as smd

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/torch"
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(128, 4), torch.randn(128, 1)

hook = smd.Hook(out, framework="pytorch", save_config=smd.SaveConfig(save_interval=10),
                include_collections=["weights", "gradients", "losses"])
hook.set_mode(smd.modes.TRAIN)
for step in range(100):
    hook.step()
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for name, p in model.named_parameters():
        if hook.should_save_tensor(name):
            hook.save(name, p.detach().cpu())
            hook.save(f"gradient/{name}", p.grad.detach().cpu())
    hook.save("MSELoss_output_0", loss.detach().cpu())
    opt.step()
    if hook.should_stop():
        break
hook.close()
print("written to", out)
