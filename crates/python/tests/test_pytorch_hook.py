"""smdebug_rs.pytorch on its own: what is saved at which step, the fault policy, get_hook,
conversions only when due, built-in rules on real runs, zero code change and
torch.distributed workers. The side-by-side runs with the original are in
test_pytorch_vs_original.py."""

import json
import os
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

try:
    import torch
except ImportError as e:  # not installed, or installed but broken
    pytest.skip(f"torch is not importable ({e}): no PyTorch hook tests", allow_module_level=True)

import torch.nn as nn  # noqa: E402

from conftest import assert_one_fault_logged, rule_firings  # noqa: E402
import smdebug_rs.pytorch as smd  # noqa: E402
from smdebug_rs import rules  # noqa: E402
from smdebug_rs.pytorch import autohook, singleton_utils  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# Subprocesses import smdebug_rs from where this process found it (the installed wheel, or
# a source tree with the extension beside it).
PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smd.__file__)))

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    smd.del_hook()


class Net(nn.Module):
    def __init__(self, aux=False):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(6, 3)
        self.aux = aux

    def forward(self, x):
        out = self.fc2(self.relu(self.fc1(x)))
        if self.aux:
            # A value numpy cannot take (complex32); training uses only `out`.
            return out, torch.zeros(2, dtype=torch.complex32)
        return out


def batch(step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(8, 4, generator=g), torch.randint(0, 3, (8,), generator=g)


def train(hook=None, steps=4, aux=False, record=None, frozen=False):
    """A seeded run; returns the losses. ``record`` (a dict) gets, per step, the weights the
    forward used, the gradients of the loss and the loss."""
    torch.manual_seed(0)
    model = Net(aux=aux)
    if frozen:
        model.fc1.weight.requires_grad_(False)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    if hook is not None:
        hook.register_module(model)
        hook.register_loss(crit)
    losses = []
    for s in range(steps):
        x, y = batch(s)
        if record is not None:
            record[s] = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt.zero_grad()
        out = model(x)
        loss = crit(out[0] if aux else out, y)
        loss.backward()
        if record is not None:
            record[s].update({"gradient/" + n: p.grad.clone()
                              for n, p in model.named_parameters() if p.grad is not None})
            record[s]["loss"] = loss.detach().clone()
        opt.step()
        losses.append(loss.item())
    if hook is not None:
        hook.close()
    return losses


EVERY = dict(save_config=smd.SaveConfig(save_interval=1))
WGL = ["weights", "biases", "gradients", "losses"]


def test_saved_values_are_those_of_the_step(tmp_path):
    """Weights at step s are what step s's forward used (before the optimizer update),
    gradients at step s those of step s's loss, the loss at step s the one computed then."""
    rec = {}
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=WGL, **EVERY)
    train(hook, steps=3, record=rec)
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 1, 2]
    for s in range(3):
        for n in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
            np.testing.assert_array_equal(tr.tensor("Net_" + n).value(s), rec[s][n].numpy())
            np.testing.assert_array_equal(tr.tensor("gradient/Net_" + n).value(s),
                                          rec[s]["gradient/" + n].numpy())
        np.testing.assert_array_equal(tr.tensor("CrossEntropyLoss_output_0").value(s),
                                      rec[s]["loss"].numpy())
    # The weights do change between steps (so the test can tell before from after).
    assert not np.array_equal(tr.tensor("Net_fc1.weight").value(0),
                              tr.tensor("Net_fc1.weight").value(1))


def test_frozen_parameters_have_weights_but_no_gradients(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=WGL, **EVERY)
    train(hook, steps=2, frozen=True)
    assert hook.fault is None
    names = create_trial(str(tmp_path / "t")).tensor_names()
    assert "Net_fc1.weight" in names and "gradient/Net_fc1.weight" not in names
    assert "gradient/Net_fc1.bias" in names


def test_only_due_tensors_are_converted(tmp_path, monkeypatch):
    import smdebug_rs.pytorch.hook as hook_mod

    seen = []
    real = hook_mod.to_numpy

    def counting(t):
        seen.append(hook.step)
        return real(t)

    monkeypatch.setattr(hook_mod, "to_numpy", counting)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True,
                    save_config=smd.SaveConfig(save_interval=3))
    train(hook, steps=7)
    assert seen and set(seen) == {0, 3, 6}


def test_a_step_with_nothing_due_does_no_per_tensor_work(tmp_path, monkeypatch):
    """On a step where no collection is due, no callback looks at a tensor: no conversion,
    no tensor check, no save decision per name, no parameter walk (no forward or gradient
    hook of ours is on the modules; the root's pre-hook returns at once)."""
    import smdebug_rs.core.hook as core_hook
    import smdebug_rs.pytorch.hook as hook_mod

    calls = {"to_numpy": [], "is_tensor": [], "should_save_tensor": [], "named_parameters": []}

    def counting(key, real):
        def call(*args, **kwargs):
            calls[key].append(hook.step)
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(hook_mod, "to_numpy", counting("to_numpy", hook_mod.to_numpy))
    monkeypatch.setattr(hook_mod, "is_tensor", counting("is_tensor", hook_mod.is_tensor))
    monkeypatch.setattr(core_hook.Hook, "should_save_tensor",
                        counting("should_save_tensor", core_hook.Hook.should_save_tensor))
    monkeypatch.setattr(nn.Module, "named_parameters",
                        counting("named_parameters", nn.Module.named_parameters))
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True,
                    save_config=smd.SaveConfig(save_interval=3))
    train(hook, steps=7)
    assert hook.fault is None
    for key in ("to_numpy", "is_tensor", "should_save_tensor"):
        assert calls[key] and set(calls[key]) == {0, 3, 6}, (key, calls[key])
    # The gradients were offered on the due steps (asked for by name).
    assert calls["should_save_tensor"].count(3) > calls["is_tensor"].count(3)
    # The parameters are walked at register_module (before the first step), not at any
    # step: the module did not change.
    assert [s for s in calls["named_parameters"] if s >= 0] == []
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3, 6]
    assert "gradient/Net_fc1.weight" in tr.tensor_names()


def test_callbacks_are_on_the_modules_only_in_steps_that_save(tmp_path):
    """Between due steps a module call and the backward pass run none of the hook's Python
    but the root's pre-hook: the forward hooks (modules, loss) and the gradient hooks are
    registered when a due step starts and removed when a step with nothing due starts;
    close leaves none. The script's own hooks stay where they are."""
    torch.manual_seed(0)
    model, crit = Net(), nn.CrossEntropyLoss()
    mine = []
    model.fc1.register_forward_hook(lambda m, i, o: mine.append("fwd"))
    model.fc1.weight.register_hook(lambda g: mine.append("grad"))
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True,
                    save_config=smd.SaveConfig(save_interval=3))
    hook.register_module(model)
    hook.register_loss(crit)

    def ours():
        forward = sum(len(m._forward_hooks) for m in model.modules()) - 1
        forward += len(crit._forward_hooks)
        grad = sum(len(p._backward_hooks or {}) for p in model.parameters()) - 1
        return forward, grad

    seen = []
    for s in range(7):
        x, y = batch(s)
        loss = crit(model(x), y)
        seen.append(ours())
        loss.backward()
    hook.close()
    # Net, fc1, relu, fc2 and the loss; four parameters.
    assert seen == [(5, 4), (0, 0), (0, 0), (5, 4), (0, 0), (0, 0), (5, 4)]
    assert ours() == (0, 0)
    assert mine == ["fwd", "grad"] * 7
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps() == [0, 3, 6]
    assert tr.tensor("CrossEntropyLoss_output_0").steps() == [0, 3, 6]
    assert tr.tensor("gradient/Net_fc1.weight").steps() == [0, 3, 6]


def test_a_loss_registered_during_a_due_step_is_saved_in_it(tmp_path):
    """A module registered while a due step is open (the zero-code-change hook registers a
    loss at its first call) gets its callbacks at once."""
    torch.manual_seed(0)
    model, crit = Net(), nn.CrossEntropyLoss()
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["losses"],
                    save_config=smd.SaveConfig(save_interval=2))
    hook.register_module(model)
    for s in range(3):
        x, y = batch(s)
        out = model(x)
        if s == 0:
            hook.register_loss(crit)
        crit(out, y).backward()
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor("CrossEntropyLoss_output_0").steps() == [0, 2]


def test_parameters_changed_after_registering_are_seen(tmp_path):
    """The parameter list kept between steps follows the module: a submodule replaced and a
    parameter added after register_module are saved from the next due step on, with the
    values the forward used."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["weights", "biases"],
                    **EVERY)
    torch.manual_seed(0)
    model = Net()
    hook.register_module(model)
    x, _ = batch(0)
    model(x)
    model.fc2 = nn.Linear(6, 3)
    model.register_parameter("extra_weight", nn.Parameter(torch.full((2,), 7.0)))
    model(x)
    # Replaced in place of the old object, as a .to() that makes new Parameters does.
    model.fc1._parameters["bias"] = nn.Parameter(torch.full((6,), 5.0))
    model(x)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor("Net_extra_weight").steps() == [1, 2]
    np.testing.assert_array_equal(tr.tensor("Net_extra_weight").value(1),
                                  np.full(2, 7.0, np.float32))
    np.testing.assert_array_equal(tr.tensor("Net_fc2.weight").value(1),
                                  model.fc2.weight.detach().numpy())
    assert not np.array_equal(tr.tensor("Net_fc2.weight").value(0),
                              tr.tensor("Net_fc2.weight").value(1))
    np.testing.assert_array_equal(tr.tensor("Net_fc1.bias").value(2), np.full(6, 5.0, np.float32))
    assert not np.array_equal(tr.tensor("Net_fc1.bias").value(1), np.full(6, 5.0, np.float32))


def test_bfloat16_tensors_are_saved_as_float32(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["weights"], **EVERY)
    model = nn.Linear(3, 2).to(torch.bfloat16)
    hook.register_module(model)
    model(torch.ones(1, 3, dtype=torch.bfloat16))
    hook.close()
    v = create_trial(str(tmp_path / "t")).tensor("Linear_weight").value(0)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v, model.weight.detach().float().numpy())


def test_a_module_called_twice_continues_the_count(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_regex=["act_"], **EVERY)
    model = nn.Sequential()
    act = nn.Tanh()
    model.add_module("act", act)
    model.add_module("lin", nn.Linear(2, 2))
    hook.register_module(model)
    x = torch.ones(1, 2)
    model(x)
    act(x * 2)  # the same module again in this step
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert sorted(n for n in tr.tensor_names() if n.startswith("act_")) == [
        "act_input_0", "act_input_1", "act_output_0", "act_output_1"]
    np.testing.assert_allclose(tr.tensor("act_output_1").value(0), np.tanh(2 * np.ones((1, 2))),
                               rtol=1e-6)


# -- faults -------------------------------------------------------------------------------



def test_fault_unwritable_out_dir(tmp_path, smdebug_log):
    reference = train(None)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    hook = smd.Hook(out_dir=str(blocker / "trial"), save_all=True, **EVERY)
    assert train(hook) == reference
    assert not hook.enabled and hook.fault is not None
    assert_one_fault_logged(smdebug_log, "the hook is off", type(hook.fault.error).__name__)


def test_fault_value_that_cannot_be_converted(tmp_path, smdebug_log):
    reference = train(None, aux=True)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, **EVERY)
    assert train(hook, aux=True) == reference
    assert hook.fault is not None and hook.fault.where == "_forward_hook saving Net_output_1"
    assert_one_fault_logged(smdebug_log, "_forward_hook saving Net_output_1", "TypeError",
                             "ComplexHalf")
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


def test_faulty_hook_calls_from_the_script_do_nothing(tmp_path, smdebug_log):
    blocker = tmp_path / "f"
    blocker.write_text("x")
    hook = smd.Hook(out_dir=str(blocker / "t"))
    hook.save_scalar("lr", 0.1)
    hook.save_tensor("t", torch.ones(2))
    hook.record_tensor_value("v", torch.ones(2))
    hook.set_mode(smd.modes.EVAL)
    assert hook.get_collection("weights").name == "weights"
    assert hook.should_stop() is False
    hook.close()
    assert len(smdebug_log) == 1


# -- get_hook / JSON ----------------------------------------------------------------------


def _json_config(tmp_path, out, name="debughookconfig.json", **params):
    cfg = tmp_path / name
    cfg.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "1", **params},
        "CollectionConfigurations": [{"CollectionName": "weights"},
                                     {"CollectionName": "losses"}],
    }))
    return cfg


def test_get_hook(tmp_path, monkeypatch):
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    monkeypatch.delenv("USE_SMDEBUG", raising=False)
    assert smd.get_hook() is None
    if not os.path.exists(singleton_utils.DEFAULT_CONFIG_FILE_PATH):
        assert smd.get_hook(create_if_not_exists=True) is None
    cfg = _json_config(tmp_path, tmp_path / "t")
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert smd.get_hook(create_if_not_exists=True) is None
    monkeypatch.setenv("USE_SMDEBUG", "true")
    hook = smd.get_hook(create_if_not_exists=True)
    assert isinstance(hook, smd.Hook) and smd.get_hook() is hook
    assert hook.out_dir == str(tmp_path / "t")
    train(hook, steps=2)
    assert sorted(create_trial(str(tmp_path / "t")).tensor_names()) == [
        "CrossEntropyLoss_output_0", "Net_fc1.weight", "Net_fc2.weight"]
    with pytest.raises(FileNotFoundError):
        smd.Hook.create_from_json_file(str(tmp_path / "missing.json"))


# -- built-in rules on real runs ----------------------------------------------------------


def _rule_run(out, deep_sigmoid):
    torch.manual_seed(0)
    if deep_sigmoid:
        layers = []
        for _ in range(8):
            lin = nn.Linear(16, 16)
            nn.init.normal_(lin.weight, std=0.01)
            nn.init.zeros_(lin.bias)
            layers += [lin, nn.Sigmoid()]
        model = nn.Sequential(*layers, nn.Linear(16, 2))
    else:
        model = nn.Sequential(OrderedDict(fc1=nn.Linear(16, 32), relu=nn.ReLU(),
                                          fc2=nn.Linear(32, 2)))
    hook = smd.Hook(out_dir=out, include_collections=["weights", "gradients", "losses",
                                                      "relus"], **EVERY)
    hook.get_collection("relus").include(".*relu_output")
    crit = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(crit)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(64, 16, generator=g)
    y = (x[:, 0] > 0).long()
    for _ in range(12):
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
    hook.close()
    return create_trial(out)


def test_vanishing_gradient_fires_on_a_deep_sigmoid_network(tmp_path):
    tr = _rule_run(str(tmp_path / "deep"), deep_sigmoid=True)
    firings = rule_firings(rules.VanishingGradient(tr))
    assert firings and firings[0]["step"] == 0
    assert all(f["tensor"].startswith("gradient/Sequential_") for f in firings)
    # The first layers do not learn either: WeightUpdateRatio sees (almost) no update. (So
    # the rules the healthy run keeps silent can fire on these trials.)
    assert rule_firings(rules.WeightUpdateRatio(tr))


def test_default_rules_stay_silent_on_a_healthy_network(tmp_path):
    tr = _rule_run(str(tmp_path / "healthy"), deep_sigmoid=False)
    assert {"gradient/Sequential_fc1.weight", "relu_output_0"} <= set(tr.tensor_names())
    for rule in (rules.VanishingGradient(tr),
                 rules.ExplodingTensor(tr, collection_names="gradients"),
                 rules.WeightUpdateRatio(tr),
                 rules.LossNotDecreasing(tr, num_steps=5),
                 rules.DeadRelu(tr)):
        assert rule_firings(rule) == [], type(rule).__name__


# -- zero code change ---------------------------------------------------------------------


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SMDEBUG_LOG_LEVEL="error", **extra)
    return env


def test_zero_code_change_writes_what_an_explicit_hook_writes(tmp_path):
    from conftest import zero_code_change_trials

    run, _ = zero_code_change_trials(
        tmp_path, os.path.join(HERE, "torch_plain_train.py"),
        lambda cfg, out: _json_config(cfg.parent, out, name=cfg.name), timeout=120)
    assert {"CrossEntropyLoss_output_0", "Net_fc1.weight"} <= set(run.tensor_names())
    assert run.steps() == [0, 1, 2, 3]


def test_autohook_without_config_leaves_training_alone(monkeypatch):
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    if os.path.exists(singleton_utils.DEFAULT_CONFIG_FILE_PATH):
        pytest.skip("a SageMaker hook configuration exists on this machine")
    assert autohook.install()
    try:
        assert train(None, steps=2) == train(None, steps=2)
        assert not autohook.installed()
    finally:
        autohook.uninstall()


# -- torch.distributed --------------------------------------------------------------------


@pytest.fixture(scope="module")
def gloo_trials(tmp_path_factory):
    """include_workers → (trial folder, expected values prefix, ranks) of two gloo workers
    (torch_dist_worker.py), each run once per module."""
    dist = torch.distributed
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.fail("torch.distributed with gloo is not available")
    runs = {}

    def get(include):
        if include not in runs:
            base = tmp_path_factory.mktemp(f"gloo_{include}")
            out, expected = base / "dist", str(base / "expected")
            p = subprocess.run([sys.executable, os.path.join(HERE, "torch_dist_worker.py"),
                                str(out), expected, include], env=_env(),
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stdout + p.stderr
            runs[include] = (str(out), expected, [0, 1] if include == "all" else [0])
        return runs[include]

    return get


def _original_create_trial(path):
    from smdebug.trials import create_trial as original_create_trial
    return original_create_trial(path)


@pytest.mark.parametrize("include", ["all", "one"])
@pytest.mark.parametrize("read", [
    create_trial,
    pytest.param(_original_create_trial, marks=pytest.mark.original, id="original_reader"),
])
def test_two_gloo_workers_write_one_trial(gloo_trials, include, read):
    out, expected_prefix, ranks = gloo_trials(include)
    tr = read(out)
    assert sorted(tr.workers()) == [f"worker_{r}" for r in ranks]
    assert tr.num_workers == len(ranks) and tr.steps() == [0, 1, 2]
    for rank in ranks:
        expected = np.load(expected_prefix + f"_{rank}.npz")
        assert len(expected.files) == 3 * 9
        for key in expected.files:
            step, name = key.split(":", 1)
            np.testing.assert_array_equal(
                tr.tensor(name).value(int(step), worker=f"worker_{rank}"), expected[key])


# -- documented differences from the original ---------------------------------------------


def test_save_tensor_goes_to_the_step_it_was_given_in(tmp_path):
    """Deviation: a save_tensor after backward() belongs to that step (the original writes
    it from the next step's callbacks); a collection first made after the first step works
    (the original raises AttributeError); registering a module twice is a no-op."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"), **EVERY)
    model = nn.Linear(2, 1)
    hook.register_module(model)
    hook.register_module(model)  # a warning, nothing more
    for s in range(3):
        model(torch.ones(1, 2)).sum().backward()
        hook.save_tensor("after_backward", torch.full((2,), float(s)), "late_collection")
    hook.close()
    assert hook.fault is None
    t = create_trial(str(tmp_path / "t")).tensor("after_backward")
    assert t.steps() == [0, 1, 2]
    for s in range(3):
        np.testing.assert_array_equal(t.value(s), np.full(2, s, np.float32))


def test_the_pytorch_loop_example_runs(tmp_path):
    """examples/pytorch_loop.py (hand-saved tensors through smdebug_rs.Hook) runs."""
    example = os.path.join(HERE, "..", "examples", "pytorch_loop.py")
    p = subprocess.run([sys.executable, example, str(tmp_path / "o")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "o" / "training_job_end.ts").exists()
