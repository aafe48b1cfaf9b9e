"""A PyTorch training script that knows nothing of smdebug (the zero-code-change test).

  python -m smdebug_rs run torch_plain_train.py       # the hook from the JSON config
  python torch_plain_train.py --explicit-hook         # the same with an explicit hook

Prints the losses (JSON) as its last line.
"""

import json
import sys

import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


model = Net()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
hook = None
if "--explicit-hook" in sys.argv:
    import smdebug_rs.pytorch as smd

    hook = smd.get_hook(create_if_not_exists=True)
    hook.register_module(model)
    hook.register_loss(criterion)

losses = []
for step in range(4):
    g = torch.Generator().manual_seed(step)
    x, y = torch.randn(8, 4, generator=g), torch.randint(0, 3, (8,), generator=g)
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
if hook is not None:
    hook.close()
print(json.dumps(losses))
