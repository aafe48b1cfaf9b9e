"""What smdebug_rs.pytorch saves for the rules that watch transformers
(smdebug_rs.pytorch.signals): attention logit maxima and entropies per head, the output's
log-partition and the optimizer's state, each checked against the same quantity computed
by hand, in eager and compiled runs."""

import math

import numpy as np
import pytest

try:
    import torch
except ImportError as e:  # not installed, or installed but broken
    pytest.skip(f"torch is not importable ({e}): no PyTorch hook tests", allow_module_level=True)

import torch.nn as nn  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

import smdebug_rs.pytorch as smd  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

torch.set_num_threads(1)

VOCAB, SEQ, BATCH, WIDTH, HEADS = 32, 6, 3, 16, 4
SIGNALS = ["attention", "output_logits", "optimizer_variables"]


@pytest.fixture(autouse=True)
def fresh():
    smd.del_hook()
    torch._dynamo.reset()
    counters.clear()
    yield
    smd.del_hook()
    torch._dynamo.reset()


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: one projection for q, k and v, then
    scaled_dot_product_attention."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def split(self, t):
        return t.reshape(t.shape[0], t.shape[1], HEADS, WIDTH // HEADS).transpose(1, 2)

    def forward(self, x):
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, -1))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(x.shape))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.attn = CausalSelfAttention()
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.GELU(),
                                 nn.Linear(2 * WIDTH, WIDTH))

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 2 * WIDTH, dropout=0.0,
                                           batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        return self.head(self.blocks(self.embed(tokens), mask=mask, is_causal=True))


def tokens(step):
    g = torch.Generator().manual_seed(step)
    return torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)


def by_hand_attention(layer, x, mask):
    """(logit max, entropy) per head of ``layer``'s attention on input ``x``."""
    if isinstance(layer, Block):
        q, k, _ = layer.attn.qkv(layer.norm(x)).chunk(3, -1)
    else:
        attn = layer.self_attn
        q, k, _ = nn.functional.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, -1)
    split = lambda t: t.reshape(BATCH, SEQ, HEADS, WIDTH // HEADS).transpose(1, 2)  # noqa: E731
    logits = split(q) @ split(k).transpose(-2, -1) / math.sqrt(WIDTH // HEADS) + mask
    p = torch.softmax(logits, -1)
    ent = -(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum(-1)
    return logits.amax(dim=(0, 2, 3)), ent.mean(dim=(0, 2))


def train(out, model_class, steps=3, compile_model=False):
    torch.manual_seed(0)
    model = model_class()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=SIGNALS)
    call = torch.compile(model, backend="aot_eager") if compile_model else model
    hook.register_module(call)
    hook.register_optimizer(opt)
    expected = {}
    inputs = {}
    layers = model.blocks if model_class is GPT else model.blocks.layers
    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(
            lambda m, args, kwargs, i=i: inputs.__setitem__(i, args[0].detach().clone()),
            with_kwargs=True)
    for step in range(steps):
        t = tokens(step)
        opt.zero_grad()
        logits = call(t[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), t[:, 1:].reshape(-1))
        loss.backward()
        mask = nn.Transformer.generate_square_subsequent_mask(SEQ)
        with torch.no_grad():
            for i, layer in enumerate(layers):
                # The encoder layer normalises after attention (norm_first=False): the
                # attention's input is the layer's.
                expected[(step, f"attention_logit_max/{i}")], \
                    expected[(step, f"attention_entropy/{i}")] = by_hand_attention(
                        layer, inputs[i], mask)
            expected[(step, "output_log_partition")] = torch.logsumexp(logits, -1).mean()
            p = model.head.weight
            if p in opt.state:
                expected[(step, f"optimizer/{model_class.__name__}_head.weight/exp_avg_sq")] = \
                    opt.state[p]["exp_avg_sq"].clone()
        opt.step()
    hook.close()
    assert hook.fault is None, hook.fault
    return expected


@pytest.mark.parametrize("model_class,compile_model", [
    (GPT, False), (GPT, True), (TinyLM, False)], ids=["sdpa", "sdpa-compiled", "mha"])
def test_transformer_signals_equal_what_is_computed_by_hand(tmp_path, model_class,
                                                          compile_model):
    expected = train(tmp_path, model_class, compile_model=compile_model)
    t = create_trial(str(tmp_path))
    names = t.tensor_names()
    for (step, name), value in expected.items():
        assert name in names, (name, names)
        np.testing.assert_allclose(t.tensor(name).value(step), value.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=f"{name} at step {step}")
    assert t.tensor("attention_logit_max/0").value(0).shape == (HEADS,)
    prefix = f"optimizer/{model_class.__name__}_head.weight/"
    assert prefix + "eps" in names
    assert float(t.tensor(prefix + "beta2").value(1)) == pytest.approx(0.999)
    if compile_model:
        assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
        assert counters["stats"]["unique_graphs"] <= 2, dict(counters["stats"])


def test_without_the_collections_nothing_more_is_saved_or_computed(tmp_path, monkeypatch):
    from smdebug_rs.pytorch import signals

    calls = []
    real = signals.attention_stats
    monkeypatch.setattr(signals, "attention_stats", lambda *a: calls.append(1) or real(*a))
    torch.manual_seed(0)
    model = TinyLM()
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights"])
    hook.register_module(model)
    model(tokens(0)[:, :-1]).sum().backward()
    hook.close()
    names = create_trial(str(tmp_path)).tensor_names()
    assert not [n for n in names if n.startswith(("attention_", "output_", "optimizer/"))]
    assert calls == []
    collections = create_trial(str(tmp_path)).collections()
    assert not set(SIGNALS) & set(collections), sorted(collections)
