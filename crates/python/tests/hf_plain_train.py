"""A Hugging Face Trainer script that knows nothing of smdebug (the zero-code-change test):
a two-layer GPT-2 made from a configuration, on random tokens (nothing downloaded).

  python -m smdebug_rs run hf_plain_train.py   # the callback from the JSON config
  python hf_plain_train.py --explicit-hook     # the script adds the callback itself

Prints the logged training losses (JSON) as its last line.
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 64, (n, 8), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=64,
                                   n_positions=8, bos_token_id=0, eos_token_id=0))
callbacks = []
if "--explicit-hook" in sys.argv:
    from smdebug_rs.huggingface import DebuggerCallback

    callbacks.append(DebuggerCallback(json_file_path=os.environ["SMDEBUG_CONFIG_FILE_PATH"]))
args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4,
                         max_steps=4, logging_steps=1, save_strategy="no", report_to=[],
                         use_cpu=True, disable_tqdm=True, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(16, 1), callbacks=callbacks)
trainer.train()
print(json.dumps([h["loss"] for h in trainer.state.log_history if "loss" in h]))
