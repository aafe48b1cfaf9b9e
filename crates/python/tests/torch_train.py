"""One small PyTorch training run per configuration, with the hook of either package.

  python torch_train.py PACKAGE OUT_BASE CONFIG[,CONFIG…]

Each configuration writes the trial OUT_BASE/CONFIG and the loss of every step to
OUT_BASE/CONFIG.losses.json (JSON), to check that the hook leaves training unchanged.

PACKAGE is ``smdebug`` (the original, smdebug.pytorch) or ``smdebug_rs``
(smdebug_rs.pytorch), or ``none`` (no hook at all: the reference losses). Runs are
seeded and single-threaded, so both packages see the same tensors.

CONFIG:
  default    Hook(out_dir): the defaults (losses at step 0)
  save_all   save_all=True, every step
  json       get_hook(create_if_not_exists=True) from $SMDEBUG_CONFIG_FILE_PATH
  custom     record_tensor_value and save_tensor into a custom collection
  nested     nested Sequential models
  twice      one module called twice per step
  frozen     a layer with requires_grad=False
  modes      TRAIN steps, EVAL steps (no_grad), TRAIN again
"""

import importlib
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class Twice(nn.Module):
    """``act`` runs twice in every forward."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(6, 6)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        return self.out(self.act(self.fc2(self.act(self.fc1(x)))))


def nested():
    return nn.Sequential(
        nn.Sequential(nn.Linear(4, 5), nn.ReLU()),
        nn.Sequential(nn.Linear(5, 5), nn.Sequential(nn.Tanh(), nn.Linear(5, 2))),
    )


def data(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(8, 4, generator=g)
    y = torch.randint(0, 2, (8,), generator=g)
    return x, y


def make_hook(smd, config, out):
    if config == "default":
        return smd.Hook(out_dir=out)
    if config == "json":
        return smd.get_hook(create_if_not_exists=True)
    every = smd.SaveConfig(save_interval=1)
    if config == "save_all":
        return smd.Hook(out_dir=out, save_all=True, save_config=every)
    if config == "custom":
        hook = smd.Hook(out_dir=out, save_config=every,
                        include_collections=["custom", "losses", "mine"])
        hook.get_collection("mine").include("^relu_sum")
        # The original needs the collection before its first step (made later, it has no
        # reduction config and save_tensor raises AttributeError).
        hook.get_collection("custom").add_tensor_name("custom_logits_mean")
        return hook
    if config in ("frozen", "modes"):
        return smd.Hook(out_dir=out, save_config=smd.SaveConfig(save_interval=2),
                        include_collections=["weights", "biases", "gradients", "losses"])
    # nested, twice: everything, every step
    return smd.Hook(out_dir=out, save_all=True, save_config=every)


def main():
    pkg, base = sys.argv[1:3]
    torch.set_num_threads(1)
    smd = None if pkg == "none" else importlib.import_module(pkg + ".pytorch")
    for config in sys.argv[3].split(","):
        out = os.path.join(base, config)
        losses = train(smd, config, out)
        with open(out + ".losses.json", "w") as f:
            json.dump(losses, f)
        if smd is not None:
            smd.del_hook()


def train(smd, config, out):
    torch.manual_seed(0)

    model = {"nested": nested, "twice": Twice}.get(config, Net)()
    if config == "frozen":
        for p in model.fc1.parameters():
            p.requires_grad_(False)
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)

    hook = None
    if smd is not None:
        hook = make_hook(smd, config, out)
        hook.register_module(model)
        hook.register_loss(criterion)
        if config in ("frozen", "modes"):
            hook.set_mode(smd.modes.TRAIN)

    losses = []
    for step in range(STEPS):
        x, y = data(step)
        opt.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        if hook is not None and config == "custom":
            hook.record_tensor_value("relu_sum", logits.relu().sum())
            hook.record_tensor_value("my_loss", F.cross_entropy(logits, y))
            hook.save_tensor("custom_logits_mean", logits.mean(dim=0), "custom")
        loss.backward()
        opt.step()
        losses.append(loss.item())
    if config == "modes":
        hook.set_mode(smd.modes.EVAL)
        with torch.no_grad():
            for step in range(3):
                x, y = data(100 + step)
                losses.append(criterion(model(x), y).item())
        hook.set_mode(smd.modes.TRAIN)
        for step in range(2):
            x, y = data(200 + step)
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    if hook is not None:
        hook.close()
    return losses


if __name__ == "__main__":
    main()
