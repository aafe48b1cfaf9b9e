"""smdebug_rs.lightning.DebuggerCallback on real Lightning 2.x runs (CPU, a tiny model):
steps follow the trainer's optimizer steps (global_step), modes follow fit, validate, test
and predict, what is saved is what the trainer computed (weights, accumulated gradients,
the loss, logged numbers), the hook closes at the end of fit and on an exception, callback
failures never reach the training, and zero code change adds the callback."""

import json
import os

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as L  # noqa: E402

from conftest import assert_one_fault_logged  # noqa: E402
import smdebug_rs.pytorch as smd  # noqa: E402
from smdebug_rs import modes  # noqa: E402
from smdebug_rs.lightning import DebuggerCallback  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)
ALL = ["weights", "gradients", "losses"]


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    smd.del_hook()


class Regression(L.LightningModule):
    """A two-layer regression whose training_step calls the module itself (its forward)."""

    def __init__(self, fail_at=None):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 1)
        self.fail_at = fail_at
        self.step_losses = {}  # global_step → training_step's losses

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

    def training_step(self, batch, batch_idx):
        if self.fail_at is not None and self.global_step == self.fail_at:
            raise RuntimeError("the training fails")
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        self.step_losses.setdefault(self.global_step, []).append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", nn.functional.mse_loss(self(x), y))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(n=32, batch_size=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    data = TensorDataset(torch.randn(n, 4, generator=g), torch.randn(n, 1, generator=g))
    return DataLoader(data, batch_size=batch_size)


class Probe(L.Callback):
    """Records what the trainer did, for each optimizer step (by trainer.global_step): the
    parameters before the step's first forward, the .grad the optimizer steps with (after
    Lightning unscaled it), the learning rate."""

    def __init__(self):
        self.weights, self.grads, self.lr = {}, {}, {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.weights.setdefault(trainer.global_step, {
            n: p.detach().clone() for n, p in pl_module.named_parameters()})

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.grads[trainer.global_step] = {
            n: p.grad.detach().clone() for n, p in pl_module.named_parameters()}
        self.lr[trainer.global_step] = optimizer.param_groups[0]["lr"]


def finished(out):
    """Whether the hook closed the trial (its end marker)."""
    return (out / "training_job_end.ts").is_file()


def trainer(*callbacks, **kwargs):
    options = dict(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                   enable_progress_bar=False, enable_model_summary=False,
                   num_sanity_val_steps=0, log_every_n_steps=1)
    options.update(kwargs)
    return L.Trainer(callbacks=list(callbacks), **options)


def callback(out, collections=ALL, **kwargs):
    return DebuggerCallback(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                            include_collections=collections, **kwargs)


def check_steps_follow_the_optimizer(tr, probe, model, accumulate):
    steps = sorted(probe.grads)
    assert tr.steps(mode=modes.TRAIN) == steps
    for k in steps:
        for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
            saved = tr.tensor(f"gradient/Regression_{name}").value(k, mode=modes.TRAIN)
            np.testing.assert_allclose(saved, probe.grads[k][name].numpy(), rtol=1e-6,
                                       atol=1e-7, err_msg=f"gradient of {name} at {k}")
        for name in ("fc1.weight", "fc2.weight"):  # (biases are not in "weights")
            weight = tr.tensor(f"Regression_{name}").value(k, mode=modes.TRAIN)
            np.testing.assert_array_equal(weight, probe.weights[k][name].numpy())
        # The loss backward started from: training_step's, divided by the accumulation.
        losses = [tr.tensor(f"loss_output_{i}").value(k, mode=modes.TRAIN).item()
                  for i in range(accumulate)]
        np.testing.assert_allclose(losses, np.array(model.step_losses[k]) / accumulate,
                                   rtol=1e-6)
        assert f"loss_output_{accumulate}" not in tr.tensor_names() or not tr.tensor(
            f"loss_output_{accumulate}").steps(mode=modes.TRAIN)


def test_train_steps_are_the_optimizer_steps(tmp_path):
    probe = Probe()
    t = trainer(callback(tmp_path / "t"), probe)
    model = Regression()
    t.fit(model, loader())
    assert t.global_step == 8
    assert finished(tmp_path / "t")
    tr = create_trial(str(tmp_path / "t"))
    check_steps_follow_the_optimizer(tr, probe, model, accumulate=1)


def test_accumulated_gradients_are_those_the_optimizer_steps_with(tmp_path):
    probe = Probe()
    t = trainer(callback(tmp_path / "t"), probe, accumulate_grad_batches=2)
    model = Regression()
    t.fit(model, loader())
    assert t.global_step == 4
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    check_steps_follow_the_optimizer(tr, probe, model, accumulate=2)


def test_mixed_precision_gradients_and_loss_are_unscaled_and_skipped_steps_count(tmp_path):
    from lightning.pytorch.plugins.precision import MixedPrecision

    probe = Probe()
    scaler = torch.amp.GradScaler("cpu")  # starts at 2**16: the first step overflows
    t = trainer(callback(tmp_path / "t"), probe,
                plugins=[MixedPrecision("16-mixed", "cpu", scaler=scaler)])
    model = Regression()
    t.fit(model, loader())
    # The scaler skipped an optimizer.step (no optimizer hooks ran), which Lightning counts.
    assert scaler.get_scale() < 2.0 ** 16 and t.global_step == 8
    tr = create_trial(str(tmp_path / "t"))
    check_steps_follow_the_optimizer(tr, probe, model, accumulate=1)


def test_validation_steps_are_eval_steps(tmp_path):
    probe = Probe()
    t = trainer(callback(tmp_path / "t", collections=["weights", "losses"]), probe,
                num_sanity_val_steps=1)
    # 4 training batches and 2 validation batches per epoch, a sanity check of 1 batch.
    t.fit(Regression(), loader(), loader(batch_size=16, seed=2))
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN) == list(range(t.global_step)) == list(range(8))
    assert tr.steps(mode=modes.EVAL) == list(range(1 + 2 * 2))
    assert tr.steps(mode=modes.PREDICT) == []
    # The validation of epoch 0 sees the weights after its 4 optimizer steps.
    after_epoch_0 = probe.weights[4]["fc1.weight"].numpy()
    np.testing.assert_array_equal(
        tr.tensor("Regression_fc1.weight").value(1, mode=modes.EVAL), after_epoch_0)
    assert "scalar/val_loss" in tr.tensor_names()


def test_validate_test_and_predict_modes(tmp_path):
    cb = callback(tmp_path / "t", collections=["weights"])
    t = trainer(cb)
    model = Regression()
    t.validate(model, loader(batch_size=16))     # 2 batches
    t.test(model, loader(n=24, batch_size=8))    # 3 batches
    t.predict(model, loader(n=8, batch_size=4))  # 2 batches
    assert cb.hook.enabled  # only the end of fit closes it
    cb.hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.EVAL) == [0, 1, 2, 3, 4]
    assert tr.steps(mode=modes.PREDICT) == [0, 1]
    assert tr.steps(mode=modes.TRAIN) == []


def test_learning_rate_and_logged_metrics_are_scalars(tmp_path):
    probe = Probe()
    t = trainer(callback(tmp_path / "t", collections=["losses"]), probe)
    t.fit(Regression(), loader())
    tr = create_trial(str(tmp_path / "t"))
    lr = tr.tensor("scalar/learning_rate")
    assert lr.steps(mode=modes.TRAIN) == sorted(probe.lr)
    for k, value in probe.lr.items():
        assert lr.value(k, mode=modes.TRAIN).item() == pytest.approx(value)
    assert "scalar/train_loss" in tr.tensor_names()


def test_hook_arguments_json_config_and_a_given_hook(tmp_path):
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(tmp_path / "json"),
        "HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [{"CollectionName": "weights"}]}))
    trainer(DebuggerCallback(json_file_path=str(cfg)), max_epochs=1).fit(Regression(),
                                                                          loader())
    tr = create_trial(str(tmp_path / "json"))
    assert tr.tensor("Regression_fc1.weight").steps(mode=modes.TRAIN) == [0, 2]

    hook = smd.Hook(out_dir=str(tmp_path / "given"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights"])
    cb = DebuggerCallback(hook=hook)
    trainer(cb, max_epochs=1).fit(Regression(), loader())
    assert cb.hook is hook and not hook.enabled  # closed at the end of fit
    tr = create_trial(str(tmp_path / "given"))
    assert tr.tensor("Regression_fc1.weight").steps(mode=modes.TRAIN) == [0, 3]


def test_the_hook_closes_when_fit_raises(tmp_path):
    cb = callback(tmp_path / "t", collections=["weights"])
    with pytest.raises(RuntimeError, match="the training fails"):
        trainer(cb).fit(Regression(fail_at=3), loader())
    assert not cb.hook.enabled
    assert finished(tmp_path / "t")
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN)[:3] == [0, 1, 2]


def test_a_failing_callback_method_never_reaches_training(tmp_path, smdebug_log,
                                                          monkeypatch):
    def losses(cb):
        torch.manual_seed(0)
        model = Regression()
        trainer(*cb, max_epochs=1).fit(model, loader())
        return [p.detach().clone() for p in model.parameters()]

    plain = losses([])
    cb = callback(tmp_path / "t")

    def broken(self):
        raise ValueError("broken learning rates")

    monkeypatch.setattr(type(cb), "_save_learning_rates", broken)
    with_fault = losses([cb])
    for a, b in zip(plain, with_fault):
        assert torch.equal(a, b)
    assert_one_fault_logged(smdebug_log, "on_before_optimizer_step", "broken learning rates")
    assert cb.fault is not None and cb.hook is None
    assert finished(tmp_path / "t")
    assert create_trial(str(tmp_path / "t")).steps(mode=modes.TRAIN)[:1] == [0]


def test_pytorch_lightning_trainer(tmp_path):
    import pytorch_lightning as pl

    from smdebug_rs.lightning import PLDebuggerCallback

    class PLRegression(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 1)

        def forward(self, x):
            return self.fc1(x)

        def training_step(self, batch, batch_idx):
            return nn.functional.mse_loss(self(batch[0]), batch[1])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    cb = PLDebuggerCallback(out_dir=str(tmp_path / "t"),
                            save_config=smd.SaveConfig(save_interval=1),
                            include_collections=["weights", "losses"])
    assert isinstance(cb, pl.Callback)
    t = pl.Trainer(max_epochs=1, accelerator="cpu", callbacks=[cb], logger=False,
                   enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False)
    t.fit(PLRegression(), loader())
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN) == list(range(t.global_step)) == [0, 1, 2, 3]
    assert {"PLRegression_fc1.weight", "loss_output_0"} <= set(tr.tensor_names())


def test_zero_code_change_adds_the_callback(tmp_path):
    from conftest import zero_code_change_trials

    def config(path, out):
        path.write_text(json.dumps({
            "LocalPath": str(out), "HookParameters": {"save_interval": "1"},
            "CollectionConfigurations": [{"CollectionName": "weights"},
                                         {"CollectionName": "losses"}]}))
        return path

    # USE_SMDEBUG=false is checked in-process (test_autohook_...): each process that
    # imports Lightning spends seconds of CPU on it.
    run, _ = zero_code_change_trials(tmp_path, os.path.join(HERE, "lightning_plain_train.py"),
                                     config, timeout=120, off=False)
    assert {"Regression_fc1.weight", "loss_output_0"} <= set(run.tensor_names())
    assert run.steps(mode=modes.TRAIN) == list(range(8))
    assert run.steps(mode=modes.EVAL) == list(range(1 + 2 * 2))



def test_autohook_adds_one_callback_only_with_a_configuration(tmp_path, monkeypatch):
    from smdebug_rs.lightning import autohook
    from smdebug_rs.lightning.callback import LightningDebugger
    from smdebug_rs.pytorch import singleton_utils

    def added(t):
        return [cb for cb in t.callbacks if isinstance(cb, LightningDebugger)]

    init = L.Trainer.__init__
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(tmp_path / "t")}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert not autohook.install() and not autohook.installed()
    monkeypatch.delenv("USE_SMDEBUG")
    assert autohook.install()
    try:
        first, second = trainer(), trainer()
        (cb,) = added(first)
        assert added(second) == [cb] and first.callbacks[-1] is cb  # one per process
        own = callback(tmp_path / "own")
        assert added(trainer(own)) == [own]  # the script's own callback is kept alone
        if not os.path.exists(singleton_utils.DEFAULT_CONFIG_FILE_PATH):
            monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "absent.json"))
            assert added(trainer()) == []
    finally:
        autohook.uninstall()
    assert L.Trainer.__init__ is init
    assert cb.hook is None  # never used: no hook was made
