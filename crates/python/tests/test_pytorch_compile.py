"""smdebug_rs.pytorch on PyTorch as it is trained today: compiled models (dynamo's own
counters say whether the hook recompiles or breaks graphs), wrapped models' names, one
step per optimizer step for gradient accumulation, and gradients of a GradScaler-scaled
loss saved unscaled."""

import logging

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

WGL = ["weights", "biases", "gradients", "losses"]


@pytest.fixture(autouse=True)
def fresh():
    smd.del_hook()
    torch._dynamo.reset()
    counters.clear()
    yield
    smd.del_hook()
    torch._dynamo.reset()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc3(self.act(self.fc2(self.act(self.fc1(x)))))


def batch(step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(8, 6, generator=g), torch.randint(0, 3, (8,), generator=g)


def run(out, how, steps, backend="aot_eager", interval=10, fault=False):
    """Trains MLP for ``steps`` with the hook at ``interval``, the model compiled ``how``
    (None: eager); returns the losses. ``fault``: the hook must have switched itself off."""
    torch.manual_seed(0)
    model = MLP()
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=interval),
                    include_collections=WGL + ["relu_activations"])
    hook.get_collection("relu_activations").include("act_output")
    call = model
    if how == "wrapper":
        call = torch.compile(model, backend=backend)
        hook.register_module(call)
    elif how == "before":
        hook.register_module(model)
        call = torch.compile(model, backend=backend)
    elif how == "method_after":
        hook.register_module(model)
        model.compile(backend=backend)
    elif how == "method_before":
        model.compile(backend=backend)
        hook.register_module(model)
    else:
        hook.register_module(model)
    hook.register_loss(crit)
    losses = []
    for s in range(steps):
        x, y = batch(s)
        opt.zero_grad()
        loss = crit(call(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    assert (hook.fault is not None) == fault, hook.fault
    return losses


def trial_values(path):
    t = create_trial(str(path))
    return {(n, s): t.tensor(n).value(s) for n in t.tensor_names() for s in t.tensor(n).steps()}


def assert_same_trials(a, b):
    va, vb = trial_values(a), trial_values(b)
    assert sorted(va) == sorted(vb)
    for key, value in va.items():
        np.testing.assert_allclose(value, vb[key], rtol=1e-5, atol=1e-6, err_msg=str(key))


def graph_breaks():
    return sum(counters["graph_break"].values())


@pytest.mark.parametrize("how", ["wrapper", "before", "method_after", "method_before"])
def test_a_compiled_model_saves_what_eager_saves_without_recompiling(tmp_path, how, caplog):
    caplog.set_level(logging.WARNING, logger="torch._dynamo")
    steps = 1000
    losses = run(tmp_path / "compiled", how, steps)
    graphs = counters["stats"]["unique_graphs"]
    assert graphs <= 2, f"{graphs} graphs"
    assert graph_breaks() == 0, dict(counters["graph_break"])
    assert "recompile_limit" not in caplog.text
    torch._dynamo.reset()
    eager = run(tmp_path / "eager", None, steps)
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    assert_same_trials(tmp_path / "compiled", tmp_path / "eager")
    names = create_trial(str(tmp_path / "compiled")).tensor_names()
    assert "MLP_fc1.weight" in names and "gradient/MLP_fc3.bias" in names, names
    assert "act_output_0" in names and "act_output_1" in names, names
    assert not [n for n in names if "_orig_mod" in n], names
    assert create_trial(str(tmp_path / "compiled")).steps() == list(range(0, steps, 10))


def test_a_fault_in_a_compiled_run_turns_the_hook_off_and_training_goes_on(
        tmp_path, monkeypatch, smdebug_log):
    from conftest import assert_one_fault_logged

    reference = run(tmp_path / "ref", "wrapper", 60)
    torch._dynamo.reset()
    counters.clear()
    real = smd.Hook._framework_to_numpy

    def convert(value):
        if value.dim() == 2 and value.shape[1] == 16 and value.shape[0] == 8:
            raise RuntimeError("injected conversion failure")
        return real(value)

    monkeypatch.setattr(smd.Hook, "_framework_to_numpy", staticmethod(convert))
    losses = run(tmp_path / "t", "wrapper", 60, fault=True)
    np.testing.assert_allclose(losses, reference, rtol=1e-6)
    assert graph_breaks() == 0, dict(counters["graph_break"])
    assert_one_fault_logged(smdebug_log, "_forward_end saving", "injected conversion failure")
    # What was saved before the fault is a readable, finished trial.
    assert create_trial(str(tmp_path / "t")).steps() == [0]


def test_inductor_compiled_model_is_compiled_once_per_flag_value(tmp_path):
    run(tmp_path / "compiled", "wrapper", 300, backend="inductor")
    assert counters["stats"]["unique_graphs"] <= 2, dict(counters["stats"])
    assert graph_breaks() == 0, dict(counters["graph_break"])
    t = create_trial(str(tmp_path / "compiled"))
    assert t.steps() == list(range(0, 300, 10))
    assert "gradient/MLP_fc1.weight" in t.tensor_names()


def test_wrapped_models_are_named_as_the_model_inside(tmp_path):
    torch.manual_seed(0)
    model = MLP()
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "biases", "gradients"])
    wrapped = nn.DataParallel(model)
    hook.register_module(wrapped)
    x, y = batch(0)
    nn.functional.cross_entropy(wrapped(x), y).backward()
    hook.close()
    names = create_trial(str(tmp_path)).tensor_names()
    assert sorted(names) == sorted(["MLP_" + n for n, _ in model.named_parameters()]
                           + ["gradient/MLP_" + n for n, _ in model.named_parameters()])


def accumulate(out, per_update, micro=3, updates=4, scaler=None):
    """SGD with ``micro`` micro-batches an update; returns each update's .grad before the
    step (as the optimizer sees it, unscaled)."""
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    if per_update:
        hook.register_optimizer(opt)
    crit = nn.CrossEntropyLoss()
    hook.register_loss(crit)
    seen = []
    for u in range(updates):
        opt.zero_grad()
        for m in range(micro):
            x, y = batch(u * micro + m)
            loss = crit(model(x), y) / micro
            (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.unscale_(opt)
        seen.append({n: p.grad.clone() for n, p in model.named_parameters()})
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
    hook.close()
    assert hook.fault is None, hook.fault
    return seen


def test_one_step_per_optimizer_step_saves_the_accumulated_gradients(tmp_path):
    seen = accumulate(tmp_path, per_update=True)
    t = create_trial(str(tmp_path))
    assert t.steps() == [0, 1, 2, 3]
    for step, grads in enumerate(seen):
        for n, g in grads.items():
            np.testing.assert_allclose(t.tensor("gradient/MLP_" + n).value(step), g.numpy(),
                                       rtol=1e-6, atol=1e-7)
    # Every micro-batch's loss of the step, in order.
    assert sorted(n for n in t.tensor_names() if "Loss" in n) == [
        "CrossEntropyLoss_output_0", "CrossEntropyLoss_output_1", "CrossEntropyLoss_output_2"]


def test_the_default_stays_one_step_per_forward(tmp_path):
    accumulate(tmp_path, per_update=False)
    assert create_trial(str(tmp_path)).steps() == list(range(12))


def test_gradients_of_a_scaled_loss_are_saved_unscaled(tmp_path):
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12)
    accumulate(tmp_path / "scaled", per_update=False, micro=1, scaler=scaler)
    accumulate(tmp_path / "plain", per_update=False, micro=1)
    a, b = create_trial(str(tmp_path / "scaled")), create_trial(str(tmp_path / "plain"))
    for step in range(4):
        for n in ["gradient/MLP_fc1.weight", "gradient/MLP_fc3.bias"]:
            np.testing.assert_allclose(a.tensor(n).value(step), b.tensor(n).value(step),
                                       rtol=1e-4, atol=1e-6)


def test_accumulated_gradients_of_a_scaled_loss_are_saved_unscaled(tmp_path):
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12)
    seen = accumulate(tmp_path, per_update=True, scaler=scaler)
    t = create_trial(str(tmp_path))
    for step, grads in enumerate(seen):
        np.testing.assert_allclose(t.tensor("gradient/MLP_fc2.weight").value(step),
                                   grads["fc2.weight"].numpy(), rtol=1e-5, atol=1e-7)


def torchrun(tmp_path, kind, nproc):
    """Runs torch_sharded_worker.py under torchrun; returns (trial, expected prefix)."""
    import os
    import subprocess
    import sys

    from conftest import subprocess_env

    out, expected = tmp_path / "trial", str(tmp_path / "expected")
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={nproc}", os.path.join(here, "torch_sharded_worker.py"),
         str(out), expected, kind],
        env=subprocess_env(OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return create_trial(str(out)), expected


@pytest.mark.parametrize("kind,nproc", [("ddp", 2), ("ddp", 4), ("ddp_compiled", 2),
                                        ("fsdp2", 2), ("fsdp2", 4)])
def test_wrapped_and_sharded_models_write_one_trial_named_as_the_model(tmp_path, kind, nproc):
    t, expected_prefix = torchrun(tmp_path, kind, nproc)
    assert sorted(t.workers()) == [f"worker_{r}" for r in range(nproc)]
    assert t.steps() == [0, 1, 2]
    for rank in range(nproc):
        expected = np.load(f"{expected_prefix}_{rank}.npz")
        names = {key.split(":", 1)[1] for key in expected.files}
        assert set(t.tensor_names()) == names
        for key in expected.files:
            step, name = key.split(":", 1)
            np.testing.assert_allclose(
                t.tensor(name).value(int(step), worker=f"worker_{rank}"), expected[key],
                rtol=1e-5, atol=1e-6, err_msg=f"{key} of worker_{rank}")


def test_sharded_tensors_with_one_writing_worker_are_left_out_without_a_hang(tmp_path):
    """With include_workers="one" the other ranks cannot know which steps gather: the
    sharded parameters and gradients are not saved (no rank waits in a gather); the rest
    is, and training ends normally."""
    t, expected_prefix = torchrun(tmp_path, "fsdp2_one", 2)
    assert t.workers() == ["worker_0"]
    assert t.tensor_names() == ["MSELoss_output_0"]
    expected = np.load(f"{expected_prefix}_0.npz")
    for step in range(3):
        np.testing.assert_allclose(t.tensor("MSELoss_output_0").value(step),
                                   expected[f"{step}:MSELoss_output_0"], rtol=1e-6)
