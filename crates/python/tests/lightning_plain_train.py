"""A Lightning training script that knows nothing of smdebug (the zero-code-change test).

  python -m smdebug_rs run lightning_plain_train.py   # the callback from the JSON config
  python lightning_plain_train.py --explicit-hook     # the script adds the callback itself

Prints the training losses (JSON) as its last line.
"""

import json
import os
import sys

import lightning.pytorch as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 1)
        self.losses = []

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


g = torch.Generator().manual_seed(1)
data = TensorDataset(torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g))
callbacks = []
if "--explicit-hook" in sys.argv:
    from smdebug_rs.lightning import DebuggerCallback

    callbacks.append(DebuggerCallback(json_file_path=os.environ["SMDEBUG_CONFIG_FILE_PATH"]))
model = Regression()
trainer = L.Trainer(max_epochs=2, accelerator="cpu", callbacks=callbacks, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False, num_sanity_val_steps=1)
trainer.fit(model, DataLoader(data, batch_size=8), DataLoader(data, batch_size=16))
print(json.dumps(model.losses))
