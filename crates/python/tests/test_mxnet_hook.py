"""smdebug_rs.mxnet on its own: what is saved at which step (the parameter and gradient
timing), which blocks get hooks, conversions only when due, the fault policy and get_hook.
The side-by-side runs with the original are in test_mxnet_vs_original.py."""

import json
import os
import re

os.environ.setdefault("MXNET_ENGINE_TYPE", "NaiveEngine")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

try:
    import mxnet as mx
except Exception as e:  # not installed, or installed but broken (numpy too new: OSError…)
    pytest.skip(f"mxnet is not importable ({type(e).__name__}: {e}): no MXNet hook tests",
                allow_module_level=True)

from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

from conftest import assert_one_fault_logged  # noqa: E402
import smdebug_rs.mxnet as smd  # noqa: E402
from smdebug_rs.mxnet import hook as hook_module  # noqa: E402
from smdebug_rs.mxnet import singleton_utils  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

EVERY = {"save_config": smd.SaveConfig(save_interval=1)}
LR = 0.1
BATCH = 8
LOSSES_REGEX = ".*loss._(?!input).*output"


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    smd.del_hook()


def make_net(deferred=False):
    net = nn.HybridSequential()
    with net.name_scope():
        if deferred:
            net.add(nn.Dense(6, activation="relu"), nn.Dense(3))
        else:
            net.add(nn.Dense(6, in_units=4, activation="relu"), nn.Dense(3, in_units=6))
    net.initialize(mx.init.Xavier())
    return net


def batch(step):
    rng = np.random.RandomState(step)
    x = rng.standard_normal((BATCH, 4)).astype(np.float32)
    y = rng.randint(0, 3, size=(BATCH,)).astype(np.float32)
    return mx.nd.array(x), mx.nd.array(y)


def _values(params, what):
    out = {}
    for p in params:
        try:
            out[p.name] = (p.data() if what == "data" else p.grad()).asnumpy().copy()
        except RuntimeError:  # deferred initialisation, before the first forward
            pass
    return out


def train(hook, steps=3, eval_steps=0, deferred=False, record=None, register=True):
    """A small seeded run; returns the losses (and fills ``record`` with what each step's
    forward used, its gradients and its loss)."""
    mx.random.seed(0)
    net = make_net(deferred)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    params = list(net.collect_params().values())
    if hook is not None and register:
        hook.register_block(net)
        hook.register_block(loss_fn)
        if eval_steps:
            hook.set_mode(smd.modes.TRAIN)
    losses = []
    for s in range(steps):
        x, y = batch(s)
        before = _values(params, "data")
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        if record is not None:
            record.append({"mode": "TRAIN" if eval_steps else "GLOBAL", "step": s,
                           "w": {**_values(params, "data"), **before},
                           "g": _values(params, "grad"), "loss": loss.asnumpy()})
        trainer.step(BATCH)
        losses.append(float(loss.mean().asscalar()))
    if eval_steps:
        if hook is not None:
            hook.set_mode(smd.modes.EVAL)
        for s in range(eval_steps):
            x, y = batch(100 + s)
            w = _values(params, "data")
            loss = loss_fn(net(x), y)
            if record is not None:
                record.append({"mode": "EVAL", "step": s, "w": w, "g": {},
                               "loss": loss.asnumpy()})
            losses.append(float(loss.mean().asscalar()))
    if hook is not None:
        hook.close()
    train.net, train.loss_fn = net, loss_fn
    return losses


# -- names, steps, values -------------------------------------------------------------------


def test_names_as_the_original(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, **EVERY)
    train(hook, steps=2)
    net, loss_fn = train.net, train.loss_fn
    d0, d1 = net[0], net[1]
    names = set(create_trial(str(tmp_path / "t")).tensor_names())
    for p in net.collect_params().values():
        assert p.name in names and "gradient/" + p.name in names
    assert d0.name + "_weight" in names  # hybridsequential0_dense0_weight style
    for n in (f"{d0.name}_relu_output_0", f"{d0.name}_output_0", f"{d1.name}_input_0",
              f"{net.name}_input_0", f"{net.name}_output_0", f"{loss_fn.name}_output_0",
              f"{loss_fn.name}_input_1"):
        assert n in names, (n, sorted(names))
    assert loss_fn.name.startswith("softmaxcrossentropyloss")


def test_saved_values_are_those_of_the_step(tmp_path):
    """Weights at step s = those step s's forward used; gradients at step s = step s's
    backward's (TRAIN only; the last TRAIN step before set_mode(EVAL) has both); the loss
    at s = step s's. EVAL steps have the weights and no gradients."""
    record = []
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=[
        "weights", "biases", "gradients", "losses"], **EVERY)
    train(hook, steps=3, eval_steps=2, record=record)
    loss_name = train.loss_fn.name + "_output_0"
    tr = create_trial(str(tmp_path / "t"))
    mode = {"TRAIN": smd.modes.TRAIN, "EVAL": smd.modes.EVAL}
    for r in record:
        m = mode[r["mode"]]
        for name, w in r["w"].items():
            np.testing.assert_array_equal(tr.tensor(name).value(r["step"], mode=m), w)
        for name, g in r["g"].items():
            np.testing.assert_array_equal(
                tr.tensor("gradient/" + name).value(r["step"], mode=m), g)
        np.testing.assert_array_equal(tr.tensor(loss_name).value(r["step"], mode=m),
                                      r["loss"])
    grad = "gradient/" + next(iter(record[0]["g"]))
    assert tr.tensor(grad).steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    assert tr.tensor(grad).steps(mode=smd.modes.EVAL) == []
    weight = next(iter(record[0]["w"]))
    assert tr.tensor(weight).steps(mode=smd.modes.EVAL) == [0, 1]


def test_no_stale_gradients_in_eval_with_save_all(tmp_path):
    """The original's `all` collection saves the last TRAIN step's gradients again at every
    EVAL step; here EVAL steps have none, and the last TRAIN step has its own."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, **EVERY)
    train(hook, steps=2, eval_steps=2)
    tr = create_trial(str(tmp_path / "t"))
    grads = [n for n in tr.tensor_names() if n.startswith("gradient/")]
    assert len(grads) == 4
    for g in grads:
        assert tr.tensor(g).steps(mode=smd.modes.TRAIN) == [0, 1]
        assert tr.tensor(g).steps(mode=smd.modes.EVAL) == []


def test_deferred_initialisation(tmp_path):
    """Parameters waiting for their shapes at the first forward are saved when it ends."""
    record = []
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["weights"], **EVERY)
    train(hook, steps=2, deferred=True, record=record)
    tr = create_trial(str(tmp_path / "t"))
    weights = sorted(n for n in tr.tensor_names() if n.endswith("weight"))
    assert weights == sorted(n for n in record[0]["w"] if n.endswith("weight"))
    for r in record:
        for name in weights:
            np.testing.assert_array_equal(tr.tensor(name).value(r["step"]), r["w"][name])


def test_only_the_registered_block_unless_needed(tmp_path):
    """As the original: hooks on the children only when a collection beyond weights,
    biases, gradients and losses (or `default` with regexes) is saved."""
    hook = smd.Hook(out_dir=str(tmp_path / "a"), include_collections=["weights", "losses"])
    train(hook, steps=1)
    assert hook.registered_blocks == {train.net, train.loss_fn}
    hook = smd.Hook(out_dir=str(tmp_path / "b"), include_regex=["relu_output"], **EVERY)
    train(hook, steps=1)
    net = train.net
    assert net[0] in hook.registered_blocks and net[0].act in hook.registered_blocks
    names = create_trial(str(tmp_path / "b")).tensor_names()
    assert f"{net[0].name}_relu_output_0" in names


def test_only_due_tensors_leave_the_device(tmp_path, monkeypatch):
    converted = []
    real = hook_module.to_numpy

    def counting(value):
        converted.append(hook._saving)
        return real(value)

    monkeypatch.setattr(hook_module, "to_numpy", counting)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["weights", "losses"],
                    save_config=smd.SaveConfig(save_interval=2))
    train(hook, steps=3)
    net, loss_fn = train.net, train.loss_fn
    weights = sorted(p.name for p in net.collect_params().values() if p.name.endswith("weight"))
    expect = sorted(weights * 2 + [loss_fn.name + "_output_0"] * 2)  # steps 0 and 2
    assert sorted(converted) == expect


def test_a_step_with_nothing_due_does_no_per_tensor_work(tmp_path, monkeypatch):
    """On a step where no collection is due, no callback looks at an NDArray: no
    conversion, no NDArray check, no save decision per name, no gradient read (no forward
    hook of ours is on a block or the loss; the pre-hook's parameters and the gradients read
    when the step ends are not walked). Gradients of step s are read when s ends, at the next
    forward or at close: still step s."""
    import smdebug_rs.core.hook as core_hook

    calls = {"to_numpy": [], "is_ndarray": [], "should_save_tensor": [], "grad": []}

    def counting(key, real):
        def call(*args, **kwargs):
            calls[key].append(hook.step)
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(hook_module, "to_numpy", counting("to_numpy", hook_module.to_numpy))
    monkeypatch.setattr(hook_module, "is_ndarray",
                        counting("is_ndarray", hook_module.is_ndarray))
    monkeypatch.setattr(core_hook.Hook, "should_save_tensor",
                        counting("should_save_tensor", core_hook.Hook.should_save_tensor))
    monkeypatch.setattr(mx.gluon.Parameter, "grad", counting("grad", mx.gluon.Parameter.grad))
    # save_all: forward hooks on every child block too.
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True,
                    save_config=smd.SaveConfig(save_interval=3))
    mx.random.seed(0)
    net = make_net()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    hook.register_block(net)
    hook.register_block(loss_fn)

    def forward_hooks():
        # Ours only on the steps that save (the root's pre-hook stays).
        blocks = [loss_fn]
        net.apply(blocks.append)
        return sum(len(b._forward_hooks) for b in blocks)

    seen = []
    for s in range(7):
        x, y = batch(s)
        with autograd.record():
            loss = loss_fn(net(x), y)
        seen.append(forward_hooks())
        loss.backward()
        trainer.step(BATCH)
    hook.close()
    assert hook.fault is None
    n = seen[0]
    assert n > 2 and seen == [n, 0, 0, n, 0, 0, n], seen
    assert forward_hooks() == 0
    for key in calls:
        assert calls[key] and set(calls[key]) == {0, 3, 6}, (key, calls[key])
    # The parameters and gradients were offered on the due steps (asked for by name).
    assert calls["should_save_tensor"].count(3) > calls["is_ndarray"].count(3)
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3, 6]
    params = net.collect_params().values()
    assert {"gradient/" + p.name for p in params} <= set(tr.tensor_names())
    assert set(tr.tensor("gradient/" + net[0].weight.name).steps()) == {0, 3, 6}


def test_save_tensor_and_scalar(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["custom", "losses"],
                    **EVERY)
    mx.random.seed(0)
    net = make_net()
    hook.register_block(net)
    for s in range(2):
        x, _ = batch(s)
        out = net(x)
        hook.save_tensor("out_mean", out.mean(axis=0), "custom")
        hook.save_scalar("lr", mx.nd.array([0.5]))
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor("out_mean").steps() == [0, 1]  # the step it was given in
    assert tr.tensor("scalar/lr").value(1).tolist() == [0.5]
    assert "out_mean" in tr.collection("custom").tensor_names


def test_close_detaches_and_is_idempotent(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    train(hook, steps=2)
    hook.close()
    assert not hook.enabled and hook.fault is None
    train.net(batch(0)[0])  # no hook left on the block
    assert create_trial(str(tmp_path / "t")).steps() == [0]


def test_register_what_is_not_a_block_or_twice(tmp_path, smdebug_log):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    hook.register_block(object())
    assert len(smdebug_log) == 1 and "unsupported" in smdebug_log[0].getMessage()
    net = make_net()
    hook.register_block(net)
    hook.register_block(net)
    assert hook.enabled and hook.fault is None
    hook.close()


# -- faults -------------------------------------------------------------------------------



def test_fault_unwritable_out_dir(tmp_path, smdebug_log):
    reference = train(None)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    hook = smd.Hook(out_dir=str(blocker / "trial"), save_all=True, **EVERY)
    assert train(hook) == reference
    assert not hook.enabled and hook.fault is not None
    assert_one_fault_logged(smdebug_log, "smdebug_rs.mxnet", "the hook is off",
                             type(hook.fault.error).__name__)


def test_fault_converting_a_value(tmp_path, smdebug_log, monkeypatch):
    reference = train(None)
    real = hook_module.to_numpy

    def failing(value):
        if value.shape == (BATCH, 6):
            raise mx.base.MXNetError("device lost (injected)")
        return real(value)

    monkeypatch.setattr(hook_module, "to_numpy", failing)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, **EVERY)
    assert train(hook) == reference
    # A block's output is read when its step ends: at the next forward's start.
    assert hook.fault is not None and hook.fault.where.startswith("_forward_pre_hook saving ")
    assert_one_fault_logged(smdebug_log, "_forward_pre_hook saving", "MXNetError",
                             "device lost (injected)")
    # What was saved before the fault is a readable, finished trial.
    tr = create_trial(str(tmp_path / "t"))
    assert tr.loaded_all_steps or tr.steps() == [0]


def test_fault_in_the_native_hook(tmp_path, smdebug_log):
    reference = train(None)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, **EVERY)
    real = hook._native

    class Exploding:
        def __getattr__(self, name):
            if name == "step":
                raise RuntimeError("native hook exploded (injected)")
            return getattr(real, name)

    hook._native = Exploding()
    assert train(hook) == reference
    assert_one_fault_logged(smdebug_log, "_forward_pre_hook", "RuntimeError",
                             "native hook exploded (injected)")
    real.close()


def test_fault_reading_gradients(tmp_path, smdebug_log, monkeypatch):
    """A failure at the end of a step (reading the gradients, at the next forward) switches
    the hook off too; training (whose trainer reads gradients with list_grad) goes on."""
    reference = train(None, eval_steps=1)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["gradients"], **EVERY)

    def boom(self, ctx=None):
        raise ValueError("no gradients (injected)")

    monkeypatch.setattr(mx.gluon.Parameter, "grad", boom)
    assert train(hook, eval_steps=1) == reference
    assert_one_fault_logged(smdebug_log, "_forward_pre_hook saving gradient/",
                             "no gradients (injected)")


def test_faulty_hook_calls_from_the_script_do_nothing(tmp_path, smdebug_log):
    blocker = tmp_path / "f"
    blocker.write_text("x")
    hook = smd.Hook(out_dir=str(blocker / "t"))
    hook.register_block(make_net())
    hook.save_scalar("lr", 0.1)
    hook.save_tensor("t", mx.nd.ones((2,)))
    hook.set_mode(smd.modes.EVAL)
    assert hook.get_collection("weights").name == "weights"
    assert hook.should_stop() is False
    hook.close()
    assert len(smdebug_log) == 1


# -- get_hook / JSON ----------------------------------------------------------------------


def _json_config(tmp_path, out):
    cfg = tmp_path / "debughookconfig.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": "weights"},
                                     {"CollectionName": "losses"}],
    }))
    return cfg


def test_get_hook(tmp_path, monkeypatch):
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    monkeypatch.delenv("USE_SMDEBUG", raising=False)
    if not os.path.exists(singleton_utils.DEFAULT_CONFIG_FILE_PATH):
        assert smd.get_hook() is None
    cfg = _json_config(tmp_path, tmp_path / "t")
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert smd.get_hook() is None
    monkeypatch.setenv("USE_SMDEBUG", "true")
    assert smd.get_hook(create_if_not_exists=False) is None
    hook = smd.get_hook()  # the original's mxnet get_hook creates by default
    assert isinstance(hook, smd.Hook) and smd.get_hook(create_if_not_exists=True) is hook
    assert hook.out_dir == str(tmp_path / "t")
    assert hook.include_collections == ["weights", "losses"]
    train(hook, steps=2)
    net, loss_fn = train.net, train.loss_fn
    weights = sorted(p.name for p in net.collect_params().values() if p.name.endswith("weight"))
    # The original's losses regex `.*loss._(?!input).*output` (kept) takes loss blocks
    # numbered 0-9 only: softmaxcrossentropyloss12_output_0 is not a loss.
    loss = [loss_fn.name + "_output_0"] if re.search(LOSSES_REGEX, loss_fn.name + "_output_0") \
        else []
    assert sorted(create_trial(str(tmp_path / "t")).tensor_names()) == sorted(weights + loss)
    with pytest.raises(FileNotFoundError):
        smd.Hook.create_from_json_file(str(tmp_path / "missing.json"))


def test_the_losses_regex_is_the_originals(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    assert hook.get_collection("losses").include_regex == [LOSSES_REGEX]
    assert re.search(LOSSES_REGEX, "softmaxcrossentropyloss0_output_0")
    assert not re.search(LOSSES_REGEX, "softmaxcrossentropyloss12_output_0")
    hook.close()


def test_workers_without_horovod(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    assert hook.worker == "worker_0"
    hook.close()
