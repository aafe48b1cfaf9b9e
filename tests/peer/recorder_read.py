#!/usr/bin/env python3
"""Read a trial a flight recorder wrote into with the REAL smdebug 1.0.34.

  recorder_read.py TRIAL

Prints one JSON object: {"steps": trial.steps(), "tensors": {name: {"steps": [...],
"non_finite_steps": [...]}}}: every tensor's steps and the steps whose value holds a NaN
or an infinity (numpy over the values smdebug returns).

Exit status: 0 read, 3 smdebug cannot be imported.
"""

import json
import os
import sys
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    pc.import_smdebug()
    import numpy as np
    from smdebug.trials import create_trial

    warnings.simplefilter("ignore")
    trial = create_trial(sys.argv[1])
    out = {"steps": [int(s) for s in trial.steps()], "tensors": {}}
    for name in trial.tensor_names():
        t = trial.tensor(name)
        steps = [int(s) for s in t.steps()]
        bad = [s for s in steps if not np.isfinite(np.asarray(t.value(s), dtype=np.float64)).all()]
        out["tensors"][name] = {"steps": steps, "non_finite_steps": bad}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
