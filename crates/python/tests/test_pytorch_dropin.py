"""The PyTorch hook against the original's, for what a script written for the original
calls besides training: ``save_tensor`` (outside the included collections, before the
first step) and ``tensorboard_dir``. Each script runs once per package, the trials read
with the ORIGINAL reader."""

import json
import os
import subprocess
import sys

import pytest

import smdebug_rs

# Every test here runs the original (numpy < 2): deselected where it cannot run.
pytestmark = pytest.mark.original

PYTHON_SRC = os.path.dirname(os.path.dirname(os.path.abspath(smdebug_rs.__file__)))

SCRIPT = r'''
import json, sys, torch
pkg, out = sys.argv[1], sys.argv[2]
if pkg == "smdebug":
    import smdebug.pytorch as smd
else:
    import smdebug_rs.pytorch as smd
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 2))
hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=2),
                include_collections=["weights"], export_tensorboard=True)
hook.register_module(model)
given = {"tensorboard_dir": hook.tensorboard_dir}
hook.save_tensor("early", torch.ones(2))
for step in range(4):
    model(torch.ones(1, 3)).sum().backward()
    hook.save_tensor("cust", torch.full((2,), float(step)))
hook.close()
print(json.dumps(given))
'''


def run(pkg, out):
    env = dict(os.environ, SMDEBUG_LOG_LEVEL="error",
               PYTHONPATH=PYTHON_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", SCRIPT, pkg, str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{pkg} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def read(path):
    from smdebug.trials import create_trial

    t = create_trial(str(path))
    return {n: t.tensor(n).steps() for n in t.tensor_names()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("pytorch_dropin")
    return {pkg: (base / pkg, run(pkg, base / pkg)) for pkg in ("smdebug", "smdebug_rs")}


def test_save_tensor_values_are_written_as_the_originals(runs):
    theirs, ours = read(runs["smdebug"][0]), read(runs["smdebug_rs"][0])
    assert set(ours) == set(theirs)
    # Given before the first step: written at step 0, as the original does.
    assert ours["early"] == theirs["early"] == [0]
    # The original writes a value given after a saving step's forward at the next saving
    # step's; ours at the step it was given in, when that step saves.
    assert ours["cust"] == [0, 2] and theirs["cust"]


def test_tensorboard_dir_is_the_originals(runs):
    for pkg, (path, given) in runs.items():
        assert given["tensorboard_dir"] == str(path / "tensorboard"), pkg


# The original's module callbacks (ours are registered by register_module under other
# names) and its profiler (timeline, framework metrics: not part of smdebug_rs).
PYTORCH_MACHINERY = {
    "forward_hook", "forward_pre_hook", "backward_hook", "fhook", "bhook",
    "autograd_profiler_enabled", "backward_modules_profile_stats",
    "forward_modules_profile_stats", "first_forward_submodule_name",
    "log_outstanding_backward_stats_and_reset", "log_outstanding_forward_stats_and_reset",
    "log_trace_event", "parent_backward_event", "parent_forward_event", "profiler",
    "reset_backward_module_profile_stats", "reset_forward_module_profile_stats",
    "should_save_dataloader_metrics", "step_event", "use_cuda",
}


def test_the_hooks_api_is_the_originals(tmp_path):
    """Every public method and attribute of the original's PyTorch Hook (api_walk.py)."""
    import smdebug.pytorch as theirs

    import smdebug_rs.pytorch as ours
    from api_walk import hook_differences

    found = hook_differences(theirs.Hook, ours.Hook, tmp_path, PYTORCH_MACHINERY)
    assert not found, "\n".join(found)
