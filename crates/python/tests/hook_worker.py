"""One worker of test_hook.py's multi-process test: writes STEPS steps into OUT with the
rank and world size from RANK/WORLD_SIZE (read by smdebug_rs.Hook itself)."""

import os
import sys
import time

import numpy as np

import smdebug_rs as smd

out, steps = sys.argv[1], int(sys.argv[2])
hook = smd.Hook(out, save_config=smd.SaveConfig(save_interval=1), include_workers="all",
                include_collections=["weights", "losses"])
rank = int(hook.worker.split("_")[1])
hook.set_mode(smd.modes.TRAIN)
for s in range(steps):
    hook.step()
    hook.save("fc.weight", np.full((3, 4), rank * 1000 + s, dtype=np.float32))
    hook.save_tensor("loss", np.float64(rank + s / 10), "losses")
# Every worker has started before any closes: the first close ends the trial, and a hook
# refuses to start in a finished trial.
ready = os.path.join(os.path.dirname(out), f"ready_{rank}")
open(ready, "w").close()
deadline = time.time() + 60
while not all(os.path.exists(os.path.join(os.path.dirname(out), f"ready_{r}"))
              for r in range(4)):
    assert time.time() < deadline, "the other workers did not start"
    time.sleep(0.01)
hook.close()
