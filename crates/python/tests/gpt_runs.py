"""Real training runs of a small GPT for the transformer rules (issue 44): one healthy run and
one run per failure, each made to fail the way the rules' sources describe, hooked by
smdebug_rs.pytorch at every step. ``python gpt_runs.py RUN OUT_DIR`` trains run RUN into the
trial OUT_DIR and prints one JSON line: the run's first bad step and its losses.

The data is learnable: each sequence is an arithmetic progression modulo the vocabulary (a
random start and an odd stride), so the loss falls steadily and a bad batch stands out.
"""

import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug_rs.pytorch as smd

VOCAB, SEQ, BATCH, WIDTH, HEADS, LAYERS = 64, 32, 8, 32, 4, 2
STEPS = 400
BAD = 330
LR = 3e-4
# Every gradient the optimizer sees is clipped to this global norm, as GPT trainers do; the
# hook saves the gradients before the clip (they are what the rules judge).
CLIP = 160.0

COLLECTIONS = ["weights", "gradients", "losses", "attention", "output_logits",
               "optimizer_variables", "activations"]
# The activations ActivationOutlier watches: each block's MLP output.
ACTIVATIONS = r"mlp\.2_output_0$"
OPTIMIZER_STATE = r"^optimizer/.+/(exp_avg_sq|step|eps|beta2)$"


class SelfAttention(nn.Module):
    """Causal self-attention without QK-norm (the setting where logits grow, Wortsman et
    al. 2023 §3.1.1): separate q, k and v projections so that a run can change the query's
    and key's learning rate alone."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(WIDTH, WIDTH, bias=False)
        self.k = nn.Linear(WIDTH, WIDTH, bias=False)
        self.v = nn.Linear(WIDTH, WIDTH, bias=False)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def heads(self, t):
        return t.reshape(t.shape[0], t.shape[1], HEADS, WIDTH // HEADS).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(x.shape))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attn = SelfAttention()
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(),
                                 nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.zeros(SEQ, WIDTH))
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def batch(step, random_tokens=False):
    g = torch.Generator().manual_seed(1000 + step)
    if random_tokens:
        return torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    stride = 2 * torch.randint(0, 4, (BATCH, 1), generator=g) + 1
    return (start + stride * torch.arange(SEQ + 1)) % VOCAB


# Each failure: how its run departs from the healthy one, and the first step it does.
RUNS = {
    "healthy": None,
    # A bad batch (OLMo-core's and llm-foundry's loss spikes): three batches of random
    # tokens in a row.
    "loss_spike": BAD,
    # One step whose gradient is a thousand times the loss's (a gradient blow-up that leaves
    # the loss as it is): the loss gets a term that is zero in value and 999 times the
    # loss in gradient.
    "gradient_norm_spike": BAD,
    # Too high a learning rate on the queries and keys without QK-norm: the attention logits
    # grow until the softmax saturates.
    "attention_logit_growth": BAD,
    # The output layer's bias pushed up by the same amount on every logit each step: the
    # softmax, the loss and the gradients are unchanged while log Z drifts from 0.
    "output_logit_divergence": BAD,
    # One update ten times too large on one weight matrix.
    "update_ratio": BAD,
    # A tiny loss scale from the first step (Wortsman et al. 2023 §3.4's gradient RMS
    # against ε, reached by scaling the loss by 1e-9): AdamW's ε swamps √v̂.
    "adam_epsilon": 0,
    # One channel of the last MLP's output thirty times larger for one step.
    "activation_outlier": BAD,
}


def train(run, out_dir):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT()
    qk = [p for n, p in model.named_parameters() if n.endswith((".q.weight", ".k.weight"))]
    rest = [p for n, p in model.named_parameters() if not n.endswith((".q.weight", ".k.weight"))]
    opt = torch.optim.AdamW([{"params": qk}, {"params": rest}], lr=LR)
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=COLLECTIONS)
    activations = hook.get_collection("activations")
    activations.include(ACTIVATIONS)
    # The largest magnitude is what ActivationOutlier judges: the values stay in the job.
    activations.reduction_config = smd.ReductionConfig(abs_reductions=["max"])
    # AdamEpsilon reads the second moment and the step's constants: the first moment stays
    # in the job.
    optimizer_state = hook.get_collection("optimizer_variables")
    optimizer_state.include_regex[:] = [OPTIMIZER_STATE]
    hook.register_module(model)
    hook.register_optimizer(opt)
    bad = RUNS[run]
    target = model.blocks[1].mlp[0].weight
    scale_out = []
    model.blocks[1].mlp[2].register_forward_hook(
        lambda m, args, out: out * scale_out[0] if scale_out else None)
    losses = []
    for step in range(STEPS):
        hit = bad is not None and step >= bad
        t = batch(step, random_tokens=run == "loss_spike" and hit and step < bad + 3)
        scale_out.clear()
        if run == "activation_outlier" and step == bad:
            scale_out.append(torch.ones(WIDTH).index_fill_(0, torch.tensor([7]), 30.0))
        if run == "attention_logit_growth" and step == bad:
            opt.param_groups[0]["lr"] = LR * 1000
        extra_step = run == "update_ratio" and step == bad
        opt.zero_grad()
        logits = model(t[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), t[:, 1:].reshape(-1))
        hook.save_tensor("loss", loss, "losses")
        losses.append(loss.item())
        # The gradient of a sequence's summed token losses, as GPT trainers take it.
        objective = loss * SEQ
        if run == "gradient_norm_spike" and step == bad:
            objective = objective + 999 * (objective - objective.detach())
        if run == "adam_epsilon":
            objective = objective * 1e-9
        objective.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        if extra_step:
            # A sign-descent step of ten times the learning rate on the one matrix, on top
            # of AdamW's (whose steps are about the learning rate per element).
            with torch.no_grad():
                target -= 10 * LR * target.grad.sign()
        opt.step()
        if run == "output_logit_divergence" and hit:
            with torch.no_grad():
                model.head.bias += 6.0
    hook.close()
    if hook.fault is not None:
        raise RuntimeError(f"the hook failed: {hook.fault}")
    return {"run": run, "bad": bad, "losses": losses,
            "final_loss": sum(losses[-10:]) / 10, "first_loss": losses[0],
            "log_vocab": math.log(VOCAB)}


if __name__ == "__main__":
    print(json.dumps(train(sys.argv[1], sys.argv[2])))
