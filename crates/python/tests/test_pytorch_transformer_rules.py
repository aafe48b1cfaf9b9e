"""The transformer rules (docs/src/rules.md §21–§27) proven on real training runs: a small GPT
(gpt_runs.py) trained on CPU with smdebug_rs.pytorch, once healthy and once per failure, each
failure made the way the rules' sources describe. Each new rule fires on its own run, at or a
few steps after the first bad step; on the healthy run no rule, old or new, fires; and on the
other failure runs the new rules fire exactly where the failure is the same event seen by
another rule (the table ALSO below), nowhere else."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("torch")

from smdebug_rs import rules  # noqa: E402
from smdebug_rs.rules import invoke_rule  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

pytestmark = pytest.mark.proof

sys.path.insert(0, str(Path(__file__).parent))
import gpt_runs  # noqa: E402
from conftest import smdebug_bin  # noqa: E402

# The rule each failure run is made for.
RULE_OF_RUN = {
    "loss_spike": "LossSpike",
    "gradient_norm_spike": "GradientNormSpike",
    "attention_logit_growth": "AttentionLogitGrowth",
    "output_logit_divergence": "OutputLogitDivergence",
    "update_ratio": "UpdateRatio",
    "adam_epsilon": "AdamEpsilon",
    "activation_outlier": "ActivationOutlier",
}
NEW_RULES = sorted(RULE_OF_RUN.values())
# How many steps after the first bad step a rule may first fire.
WITHIN = 5
# Arguments of the new rules where the default does not fit these runs.
ARGS = {"ActivationOutlier": {"collection_names": "activations"}}

# Failure runs where another new rule fires too, because the quantity it watches departs
# as well (measured, and each a true finding, not a false alarm):
ALSO = {
    # A bad batch's high loss comes with a large gradient.
    ("loss_spike", "GradientNormSpike"),
    # A learning rate too high for the queries and keys is also an update too large for
    # them, and their growing logits steepen the gradient.
    ("attention_logit_growth", "UpdateRatio"),
    ("attention_logit_growth", "GradientNormSpike"),
    # ε swamping √v̂ makes every update tiny.
    ("adam_epsilon", "UpdateRatio"),
    # An output thirty times larger sends a gradient thirty times larger back into its layer.
    ("activation_outlier", "GradientNormSpike"),
}

# The original's rules on the healthy run, with the parameters these runs need: the job has
# no evaluation mode (Overtraining's default patience counts evaluation steps), the trial is
# read after the job ended (StalledTrainingRule's default waits an hour for a step), the
# loss of a batch of eight sequences moves by up to a tenth from batch to batch
# (LossNotDecreasing's default allows 5% up), and AllZero, UnchangedTensor and TensorVariance
# take no default selection.
OLD_RULE_ARGS = {
    "Overtraining": {"patience_train": 50},
    "StalledTrainingRule": {"threshold": 10},
    "LossNotDecreasing": {"increase_threshold_percent": 20},
    "AllZero": {"collection_names": "weights,gradients"},
    "UnchangedTensor": {"collection_names": "weights"},
    "TensorVariance": {"collection_names": "weights,gradients"},
}


def train(run, out):
    done = subprocess.run([sys.executable, gpt_runs.__file__, run, str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{run}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpt")
    names = list(gpt_runs.RUNS)
    # Two runs at a time, one per core.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda r: train(r, root / r), names))
    return {r["run"]: dict(r, path=str(root / r["run"])) for r in results}


def firings(path, name, **kwargs):
    rule = getattr(rules, name)(create_trial(path), **kwargs)
    invoke_rule(rule, start_step=0, end_step=gpt_runs.STEPS)
    return [f["step"] for f in rule.firings]


@pytest.fixture(scope="module")
def fired(runs):
    return {(run, name): firings(r["path"], name, **ARGS.get(name, {}))
            for run, r in runs.items() for name in NEW_RULES}


def test_the_healthy_run_trains(runs):
    r = runs["healthy"]
    assert r["first_loss"] > 0.8 * r["log_vocab"], r["first_loss"]
    assert r["final_loss"] < 0.5 * r["first_loss"], (r["first_loss"], r["final_loss"])


@pytest.mark.parametrize("run", sorted(RULE_OF_RUN))
def test_each_new_rule_fires_on_its_run_at_the_first_bad_step(runs, fired, run):
    steps = fired[(run, RULE_OF_RUN[run])]
    bad = runs[run]["bad"]
    assert steps, f"{RULE_OF_RUN[run]} did not fire on {run}"
    assert bad <= steps[0] <= bad + WITHIN, (run, bad, steps[:10])


def test_new_rules_fire_on_no_other_run(fired):
    elsewhere = {(run, name): steps[:5] for (run, name), steps in fired.items()
                 if steps and RULE_OF_RUN.get(run) != name}
    assert set(elsewhere) == ALSO, elsewhere


def test_the_injected_failures_leave_the_runs_before_them_alone(runs, fired):
    for run, bad in ((r, runs[r]["bad"]) for r in RULE_OF_RUN):
        for name in NEW_RULES:
            early = [s for s in fired[(run, name)] if s < bad]
            assert not early, (run, name, early)


def test_no_rule_old_or_new_fires_on_the_healthy_run(runs):
    path = runs["healthy"]["path"]
    loud = {}
    for name in rules.BUILTIN_RULES:
        kwargs = dict(ARGS.get(name, {}), **OLD_RULE_ARGS.get(name, {}))
        if name == "SimilarAcrossRuns":
            kwargs["other_trials"] = create_trial(path)
        steps = firings(path, name, **kwargs)
        if steps:
            loud[name] = steps[:5]
    assert not loud, loud


def test_the_report_marks_each_firing_with_its_criterion_in_words(runs, tmp_path):
    page = tmp_path / "report.html"
    done = subprocess.run([smdebug_bin(), "report", runs["loss_spike"]["path"], "-o", str(page),
                           "--rules", "LossSpike", "GradientNormSpike"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    html = page.read_text()
    for words in ("loss ", " + 6σ (σ = ", "over the last 128 saved steps: a spike starts at step 330",
                  "global gradient norm (over 32 tensors) "):
        assert words in html, words
