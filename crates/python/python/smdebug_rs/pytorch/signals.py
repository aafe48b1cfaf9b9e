"""What the PyTorch hook saves for the rules that watch transformers (docs/src/rules.md):
cheap summaries computed only at the steps that save them, each in a collection of its
own that exists only when the hook is asked for it (``include_collections``).

* ``attention``: for the n-th call of ``torch.nn.functional.scaled_dot_product_attention``
  in a forward (attention modules written that way — nanoGPT's, Hugging Face models with
  ``attn_implementation="sdpa"`` — call it once a layer: in a transformer the n-th call is
  layer n; so do ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` when no
  attention weights are asked for, but only in eager mode: under ``torch.compile`` dynamo
  runs their functional core while it traces instead of tracing it, so their calls are
  not seen),
  ``attention_logit_max/<n>``: the largest pre-softmax logit ``q·k·scale`` of each head over
  the batch and the positions the mask lets through (shape ``[heads]``), and
  ``attention_entropy/<n>``: each head's softmax entropy in nats, averaged over the batch and
  the queries (shape ``[heads]``). ``scaled_dot_product_attention`` is wrapped (once, when a
  hook asks for the collection); the wrapper computes nothing at a step that does not save.
* ``output_logits``: ``output_log_partition``, the mean over positions of
  ``logsumexp`` over the last dimension of the registered model's output (its ``logits``
  for a Hugging Face output): 0 for normalised logits, drifting when they diverge.
* ``optimizer_variables``: with :meth:`Hook.register_optimizer`, each tensor of the
  optimizer's state of a registered parameter as ``optimizer/<Root>_<param>/<key>``
  (Adam's ``exp_avg``, ``exp_avg_sq``, ``step``; SGD's ``momentum_buffer``) and the
  parameter's group's ``eps`` and ``betas`` as ``optimizer/<Root>_<param>/eps``, ``beta1``
  and ``beta2``, taken when the optimizer is about to step.

The global gradient norm is not saved: rules take it from the per-tensor norms of the
``gradients`` collection's reductions.
"""

from typing import Any
import functools
import math

import torch

__all__ = ["ATTENTION", "OUTPUT_LOGITS", "OPTIMIZER_VARIABLES", "REGEXES",
           "attention_stats", "keep_out_of_weights", "log_partition", "optimizer_variables",
           "watch_attention",
           "unwatch_attention"]

ATTENTION = "attention"
OUTPUT_LOGITS = "output_logits"
OPTIMIZER_VARIABLES = "optimizer_variables"
#: The regex each collection gets when a hook is asked for it.
REGEXES = {
    ATTENTION: r"^attention_(logit_max|entropy)/",
    OUTPUT_LOGITS: r"^output_log_partition$",
    OPTIMIZER_VARIABLES: r"^optimizer/",
}
LOGIT_MAX_PREFIX = "attention_logit_max/"
ENTROPY_PREFIX = "attention_entropy/"
LOG_PARTITION = "output_log_partition"
OPTIMIZER_PREFIX = "optimizer/"

# The hooks that asked for attention summaries. A plain list (not a WeakSet) so that
# dynamo can trace the wrapper: a hook leaves it when it closes.
_watching: "list[Any]" = []
_installed: "list[Any]" = []
_TRACING_TENSORS = ("FakeTensor", "FunctionalTensor")


def keep_out_of_weights(hook):
    """Keeps the optimizer's state out of the ``weights`` and ``biases`` collections: it is
    named after its parameter (``optimizer/<Root>_<p>.weight/exp_avg``), which their default
    regexes (``^(?!gradient).*weight``) would take. A regex the user set stays."""
    for name, word in (("weights", "weight"), ("biases", "bias")):
        collection = hook.get_collection(name)
        if list(collection.include_regex) == [f"^(?!gradient).*{word}"]:
            collection.include_regex = [f"^(?!gradient|{OPTIMIZER_PREFIX}).*{word}"]


def watch_attention(hook):
    """Calls ``hook._on_attention(query, key, attn_mask, is_causal, scale)`` from every
    ``scaled_dot_product_attention`` call until :func:`unwatch_attention`."""
    if not any(h is hook for h in _watching):
        _watching.append(hook)
    if not _installed:
        _install()


def unwatch_attention(hook):
    """Stops the calls of :func:`watch_attention`."""
    _watching[:] = [h for h in _watching if h is not hook]


def _install():
    functional = torch.nn.functional
    real = functional.scaled_dot_product_attention

    @functools.wraps(real)
    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                     is_causal=False, scale=None, **kwargs):
        out = real(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                   is_causal=is_causal, scale=scale, **kwargs)
        # A compiler that runs a torch function while it traces (dynamo does so with
        # `F.multi_head_attention_forward`) calls this with its own tensor subclasses:
        # those calls are not the step's.
        if type(query).__name__ not in _TRACING_TENSORS:
            for hook in _watching:
                hook._on_attention(query, key, attn_mask, is_causal, scale)
        return out

    functional.scaled_dot_product_attention = scaled_dot_product_attention
    _installed.append(real)


def attention_stats(query, key, attn_mask=None, is_causal=False, scale=None):
    """``(logit max, entropy)`` of one attention call, each of shape ``[heads]``: the
    largest masked pre-softmax logit per head, and the mean softmax entropy per head. Query
    ``[..., heads, L, E]``, key ``[..., heads_kv, S, E]`` (grouped-query keys are repeated
    to the query's heads)."""
    with torch.no_grad():
        q, k = query.detach().float(), key.detach().float()
        heads = q.shape[-3]
        if k.shape[-3] != heads:
            k = k.repeat_interleave(heads // k.shape[-3], dim=-3)
        s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        logits = (q @ k.transpose(-2, -1)) * s
        length, keys = logits.shape[-2], logits.shape[-1]
        if is_causal:
            allowed = torch.ones(length, keys, dtype=torch.bool, device=logits.device).tril(
                keys - length)
            logits = logits.masked_fill(~allowed, float("-inf"))
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                logits = logits.masked_fill(~attn_mask, float("-inf"))
            else:
                logits = logits + attn_mask.float()
        per_head = logits.movedim(-3, 0).reshape(heads, -1)
        logit_max = per_head.amax(dim=1)
        p = torch.softmax(logits, dim=-1)
        plogp = torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))
        entropy = (-plogp.sum(dim=-1)).movedim(-2, 0).reshape(heads, -1).mean(dim=1)
        return logit_max, entropy


def log_partition(output):
    """The mean ``logsumexp`` over the last dimension of a model's output (a tensor, a
    Hugging Face output's ``logits``, or the first tensor of a tuple), or None."""
    logits = getattr(output, "logits", output)
    if isinstance(logits, (tuple, list)) and logits:
        logits = logits[0]
    if not isinstance(logits, torch.Tensor) or logits.dim() < 2 \
            or not logits.dtype.is_floating_point:
        return None
    with torch.no_grad():
        return torch.logsumexp(logits.detach().float(), dim=-1).mean()


def optimizer_variables(optimizer, param, name):
    """``[(saved name, tensor)]`` of ``param``'s optimizer state (``name``: the parameter's
    saved name, ``<Root>_<param>``) and its group's ``eps`` and ``betas``."""
    out = []
    prefix = OPTIMIZER_PREFIX + name + "/"
    for key, value in optimizer.state.get(param, {}).items():
        if isinstance(value, torch.Tensor):
            out.append((prefix + str(key), value))
    for group in optimizer.param_groups:
        if any(p is param for p in group["params"]):
            if "eps" in group:
                out.append((prefix + "eps", torch.tensor(float(group["eps"]))))
            betas = group.get("betas")
            if isinstance(betas, (tuple, list)) and len(betas) == 2:
                out.append((prefix + "beta1", torch.tensor(float(betas[0]))))
                out.append((prefix + "beta2", torch.tensor(float(betas[1]))))
            break
    return out
