"""smdebug_rs.huggingface.DebuggerCallback on real transformers Trainer runs (CPU, a
two-layer GPT-2 made from a configuration, random tokens, HF_HUB_OFFLINE=1): TRAIN steps
follow the trainer's optimizer steps (state.global_step, gradient accumulation included),
evaluate and predict are EVAL and PREDICT, what is saved is what the trainer computed
(weights, gradients, the model's loss, logged numbers), the hook closes at the end of train
and when train raises, callback failures never reach the training, and zero code change
adds the callback."""

import json
import os
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: E402

from conftest import assert_one_fault_logged  # noqa: E402
import smdebug_rs.pytorch as smd  # noqa: E402
from smdebug_rs import modes  # noqa: E402
from smdebug_rs.huggingface import DebuggerCallback  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)
ROOT = "GPT2LMHeadModel"
# Parameters checked by name (the weights collection holds those named *weight).
CHECKED = ("transformer.h.0.attn.c_attn.weight", "transformer.h.1.mlp.c_proj.weight",
           "transformer.wte.weight")


@pytest.fixture(autouse=True)
def fresh_singleton():
    smd.del_hook()
    yield
    smd.del_hook()


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed=1):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 64, (n, 8), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_gpt2():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=64,
                                      n_positions=8, bos_token_id=0, eos_token_id=0))


class Probe(transformers.TrainerCallback):
    """Records, for each optimizer step (by state.global_step), the parameters before it,
    the .grad the optimizer steps with, and the loss of each forward of the model."""

    def __init__(self, model):
        self.weights, self.grads, self.losses, self.lr = {}, {}, {}, {}
        self.state = None
        model.register_forward_hook(self._forward)

    def _forward(self, module, inputs, outputs):
        if module.training and self.state is not None:
            self.losses.setdefault(self.state.global_step, []).append(outputs.loss.item())

    def on_train_begin(self, args, state, control, **kwargs):
        self.state = state

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        self.weights[state.global_step] = {
            n: p.detach().clone() for n, p in model.named_parameters()}

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads[state.global_step] = {
            n: p.grad.detach().clone() for n, p in model.named_parameters()}

    def on_log(self, args, state, control, logs=None, **kwargs):
        if "learning_rate" in logs:
            self.lr[state.global_step] = logs["learning_rate"]


def callback(out, collections=("weights", "gradients", "losses"), **kwargs):
    return DebuggerCallback(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1),
                            include_collections=list(collections), **kwargs)


def hf_trainer(model, *callbacks, train=16, evaluate=0, **kwargs):
    options = dict(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4,
                   per_device_eval_batch_size=4, max_steps=4, logging_steps=1,
                   save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
                   seed=0, max_grad_norm=0.0)
    options.update(kwargs)
    return Trainer(model=model, args=TrainingArguments(**options),
                   train_dataset=Tokens(train), eval_dataset=Tokens(evaluate, seed=2)
                   if evaluate else None, callbacks=list(callbacks))


def finished(out):
    return (out / "training_job_end.ts").is_file()


def check_steps_follow_the_optimizer(tr, probe, accumulate):
    steps = sorted(probe.grads)
    assert tr.steps(mode=modes.TRAIN) == steps
    for k in steps:
        for name in CHECKED:
            saved = tr.tensor(f"gradient/{ROOT}_{name}").value(k, mode=modes.TRAIN)
            np.testing.assert_allclose(saved, probe.grads[k][name].numpy(), rtol=1e-5,
                                       atol=1e-7, err_msg=f"gradient of {name} at {k}")
            weight = tr.tensor(f"{ROOT}_{name}").value(k, mode=modes.TRAIN)
            np.testing.assert_array_equal(weight, probe.weights[k][name].numpy())
        losses = [tr.tensor(f"loss_output_{i}").value(k, mode=modes.TRAIN).item()
                  for i in range(accumulate)]
        np.testing.assert_allclose(losses, probe.losses[k], rtol=1e-6)


def test_train_steps_are_the_optimizer_steps(tmp_path):
    model = tiny_gpt2()
    probe = Probe(model)
    t = hf_trainer(model, callback(tmp_path / "t"), probe)
    t.train()
    assert t.state.global_step == 4
    assert finished(tmp_path / "t")
    check_steps_follow_the_optimizer(create_trial(str(tmp_path / "t")), probe, accumulate=1)


def test_accumulated_gradients_are_those_the_optimizer_steps_with(tmp_path):
    model = tiny_gpt2()
    probe = Probe(model)
    t = hf_trainer(model, callback(tmp_path / "t"), probe, gradient_accumulation_steps=2,
                   train=32)
    t.train()
    assert t.state.global_step == 4
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    check_steps_follow_the_optimizer(tr, probe, accumulate=2)


def test_evaluation_during_training_is_eval(tmp_path):
    model = tiny_gpt2()
    probe = Probe(model)
    # An evaluation of 2 batches after optimizer steps 2 and 4.
    t = hf_trainer(model, callback(tmp_path / "t", collections=["weights", "losses"]), probe,
                   evaluate=8, eval_strategy="steps", eval_steps=2)
    t.train()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.TRAIN) == list(range(t.state.global_step)) == [0, 1, 2, 3]
    assert tr.steps(mode=modes.EVAL) == [0, 1, 2, 3]
    # The first evaluation sees the weights after two optimizer steps.
    np.testing.assert_array_equal(
        tr.tensor(f"{ROOT}_transformer.wte.weight").value(0, mode=modes.EVAL),
        probe.weights[2]["transformer.wte.weight"].numpy())
    assert "loss_output_0" in tr.tensor_names()
    eval_loss = tr.tensor("scalar/eval_loss")
    assert len(eval_loss.steps(mode=modes.EVAL) + eval_loss.steps(mode=modes.TRAIN)) == 2


def test_evaluate_and_predict_modes(tmp_path):
    cb = callback(tmp_path / "t", collections=["weights"])
    t = hf_trainer(tiny_gpt2(), cb, evaluate=8)
    t.evaluate()                 # 2 batches
    t.predict(Tokens(12, 3))     # 3 batches
    assert cb.hook.enabled       # only the end of train closes it
    cb.hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=modes.EVAL) == [0, 1]
    assert tr.steps(mode=modes.PREDICT) == [0, 1, 2]
    assert tr.steps(mode=modes.TRAIN) == []


def test_logged_numbers_are_scalars(tmp_path):
    model = tiny_gpt2()
    probe = Probe(model)
    t = hf_trainer(model, callback(tmp_path / "t", collections=["losses"]), probe)
    t.train()
    tr = create_trial(str(tmp_path / "t"))
    logged = {h["step"]: h for h in t.state.log_history if "loss" in h}
    assert sorted(logged) == [1, 2, 3, 4]
    loss, lr = tr.tensor("scalar/loss"), tr.tensor("scalar/learning_rate")
    # The trainer logs after optimizer step g - 1 (its global_step is g then), before the
    # next forward starts step g: the numbers land in step g - 1, whose loss they are.
    for g, h in logged.items():
        assert loss.value(g - 1, mode=modes.TRAIN).item() == pytest.approx(h["loss"])
        assert lr.value(g - 1, mode=modes.TRAIN).item() == pytest.approx(h["learning_rate"])
        np.testing.assert_allclose(
            tr.tensor("loss_output_0").value(g - 1, mode=modes.TRAIN), h["loss"], rtol=1e-3)


def test_hook_arguments_json_config_and_a_given_hook(tmp_path):
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(tmp_path / "json"),
        "HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [{"CollectionName": "weights"}]}))
    hf_trainer(tiny_gpt2(), DebuggerCallback(json_file_path=str(cfg))).train()
    tr = create_trial(str(tmp_path / "json"))
    assert tr.tensor(f"{ROOT}_transformer.wte.weight").steps(mode=modes.TRAIN) == [0, 2]

    hook = smd.Hook(out_dir=str(tmp_path / "given"), save_config=smd.SaveConfig(save_interval=3),
                    include_collections=["weights"])
    cb = DebuggerCallback(hook=hook)
    hf_trainer(tiny_gpt2(), cb).train()
    assert cb.hook is hook and not hook.enabled  # closed at the end of train
    tr = create_trial(str(tmp_path / "given"))
    assert tr.tensor(f"{ROOT}_transformer.wte.weight").steps(mode=modes.TRAIN) == [0, 3]


def test_the_hook_closes_when_train_raises(tmp_path):
    class Fails(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise RuntimeError("the training fails")

    cb = callback(tmp_path / "t", collections=["weights"])
    with pytest.raises(RuntimeError, match="the training fails"):
        hf_trainer(tiny_gpt2(), cb, Fails()).train()
    assert not cb.hook.enabled
    assert finished(tmp_path / "t")
    assert create_trial(str(tmp_path / "t")).steps(mode=modes.TRAIN)[:2] == [0, 1]


def test_a_failing_callback_method_never_reaches_training(tmp_path, smdebug_log,
                                                          monkeypatch):
    def weights(*callbacks):
        model = tiny_gpt2()
        hf_trainer(model, *callbacks).train()
        return [p.detach().clone() for p in model.parameters()]

    plain = weights()
    cb = callback(tmp_path / "t")

    def broken(self, values, only_changed=False):
        raise ValueError("broken scalars")

    monkeypatch.setattr(type(cb), "_save_scalars", broken)
    for a, b in zip(plain, weights(cb)):
        assert torch.equal(a, b)
    assert_one_fault_logged(smdebug_log, "on_log", "broken scalars")
    assert cb.fault is not None and cb.hook is None
    assert finished(tmp_path / "t")


def test_zero_code_change_adds_the_callback(tmp_path):
    from conftest import zero_code_change_trials

    def config(path, out):
        path.write_text(json.dumps({
            "LocalPath": str(out), "HookParameters": {"save_interval": "1"},
            "CollectionConfigurations": [{"CollectionName": "weights"},
                                         {"CollectionName": "losses"}]}))
        return path

    # USE_SMDEBUG=false is checked in-process (test_autohook_...): each process that
    # imports transformers' Trainer spends seconds of CPU on it.
    run, _ = zero_code_change_trials(tmp_path, os.path.join(HERE, "hf_plain_train.py"),
                                     config, timeout=120, off=False, HF_HUB_OFFLINE="1")
    assert {f"{ROOT}_transformer.wte.weight", "loss_output_0"} <= set(run.tensor_names())
    assert run.steps(mode=modes.TRAIN) == [0, 1, 2, 3]


def test_autohook_adds_one_callback_only_with_a_configuration(tmp_path, monkeypatch):
    from smdebug_rs.huggingface import autohook
    from smdebug_rs.pytorch import singleton_utils

    def added(t):
        return [cb for cb in t.callback_handler.callbacks if isinstance(cb, DebuggerCallback)]

    init = Trainer.__init__
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(tmp_path / "t")}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.setenv("USE_SMDEBUG", "false")
    assert not autohook.install() and not autohook.installed()
    monkeypatch.delenv("USE_SMDEBUG")
    assert autohook.install()
    try:
        first, second = hf_trainer(tiny_gpt2()), hf_trainer(tiny_gpt2())
        (cb,) = added(first)
        assert added(second) == [cb]  # one per process
        own = callback(tmp_path / "own")
        assert added(hf_trainer(tiny_gpt2(), own)) == [own]  # the script's own is kept alone
        if not os.path.exists(singleton_utils.DEFAULT_CONFIG_FILE_PATH):
            monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "absent.json"))
            assert added(hf_trainer(tiny_gpt2())) == []
    finally:
        autohook.uninstall()
    assert Trainer.__init__ is init
    assert getattr(second, "_smdebug_rs_callback", None) is cb  # on_init_end found it
    cb.hook.close()  # made when the trainers were (their models registered)
