#!/usr/bin/env python3
"""A numpy training loop (linear regression by gradient descent) saved with smdebug_rs.Hook,
then read back with smdebug_rs.trials.

  python numpy_loop.py [OUT_DIR]
"""

import sys
import tempfile

import numpy as np

import smdebug_rs as smd
from smdebug_rs.trials import create_trial

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/run"
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 4)).astype(np.float32)
y = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1

w = np.zeros(4, np.float32)
b = np.zeros(1, np.float32)
hook = smd.Hook(
    out,
    save_config=smd.SaveConfig(save_interval=5),
    include_collections=["weights", "biases", "gradients", "losses"],
    reduction_config=smd.ReductionConfig(norms=["l2"], save_raw_tensor=True),
)
hook.set_mode(smd.modes.TRAIN)
for step in range(50):
    hook.step()
    err = x @ w + b - y
    loss = np.float32((err ** 2).mean())
    gw = 2 * x.T @ err / len(x)
    gb = np.array([2 * err.mean()], np.float32)
    # Named as the default collections' regexes expect (weights: "weight",
    # gradients: "^gradient", losses: ".*loss._(?!input).*output").
    hook.save("linear0_weight", w)
    hook.save("linear0_bias", b)
    hook.save("gradient/linear0_weight", gw)
    hook.save("mseloss0_output_0", loss)
    hook.save_scalar("learning_rate", 0.1)
    w -= 0.1 * gw
    b -= 0.1 * gb
    if hook.should_stop():  # a rule (or a person) asked to stop
        break
hook.close()

trial = create_trial(out)
print("steps:", trial.steps())
# (step 49 holds the scalars cached since step 45, written when the hook closed)
print("loss:", [float(v[0]) for v in trial.tensor("mseloss0_output_0").values().values()])
w_steps = trial.tensor("linear0_weight").steps()
print("weights at step", w_steps[-1], ":", trial.tensor("linear0_weight").value(w_steps[-1]))
