#!/usr/bin/env python3
"""Time the REAL smdebug 1.0.34 opening a trial, as `smdebug inspect` does first:
create_trial(PATH) (collections and every index file), then tensor_names() and steps().

  scale_open.py PATH

Prints one JSON object: {"seconds": wall seconds of the open and the two queries,
"tensors": N, "steps": N}. Peak memory and the time cap are the caller's
(`cargo xtask bench --scale` runs it under `timeout` and `/usr/bin/time`).
SMDEBUG_TRAINING_END_DELAY_REFRESH is set to 0 so that the 1 s sleep smdebug takes after
seeing training_job_end.ts is not measured.
Exit status: 0 ok, 2 usage, 3 smdebug cannot be imported.
"""

import json
import os
import sys
import time


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    try:
        from smdebug.trials import create_trial
    except ImportError as e:
        print(f"cannot import smdebug: {e}", file=sys.stderr)
        return 3
    start = time.perf_counter()
    trial = create_trial(sys.argv[1])
    names = trial.tensor_names()
    steps = trial.steps()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "tensors": len(names), "steps": len(steps)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
