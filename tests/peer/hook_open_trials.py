#!/usr/bin/env python3
"""Open trials with the REAL smdebug 1.0.34 and check every step it shows against a
reference trial of the same recipe (used by the hook's crash-consistency test: the trials
are what a writer left behind when it was killed).

  hook_open_trials.py REFERENCE TRIAL [TRIAL ...]

For each TRIAL: `create_trial` must succeed; every step `trial.steps()` lists (complete
steps only, as the reader defines them) must hold exactly the tensors the reference holds
at that step, and every raw value and saved reduction must equal the reference's (sha256
of dtype, shape and bytes). Prints one JSON object {TRIAL: {"steps": n, "values": m}} and
exits 0; on the first mismatch prints it to stderr and exits 1.
"""

import hashlib
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def digest(arr):
    import numpy as np

    a = np.asarray(arr)
    h = hashlib.sha256()
    h.update(str(a.dtype).encode())
    h.update(str(a.shape).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def contents(trial, steps):
    """{step: {name: {"value": digest | None, "reductions": {(op, abs): digest}}}}"""
    out = {}
    for s in steps:
        at = {}
        for name in trial.tensor_names(step=s):
            t = trial.tensor(name)
            try:
                value = digest(t.value(s))
            except Exception as e:  # noqa: BLE001 - the exception type is the observation
                value = type(e).__name__
            reds = {f"{op}{'_abs' if a else ''}": digest(v)
                    for (op, a), v in sorted(t.reduction_values(s).items())}
            at[name] = {"value": value, "reductions": reds}
        out[s] = at
    return out


def main():
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    os.environ.setdefault("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "0")
    pc.import_smdebug()
    from smdebug.trials import create_trial

    ref_path, paths = sys.argv[1], sys.argv[2:]
    ref = create_trial(ref_path)
    ref_steps = ref.steps()
    reference = contents(ref, ref_steps)
    report = {}
    for p in paths:
        trial = create_trial(p)
        steps = trial.steps()
        missing = [s for s in steps if s not in reference]
        if missing:
            sys.stderr.write(f"{p}: steps {missing} are not in the reference\n")
            return 1
        seen = contents(trial, steps)
        for s in steps:
            if seen[s] != reference[s]:
                sys.stderr.write(
                    f"{p}: step {s} differs from the reference\n"
                    f"  seen:      {json.dumps(seen[s], sort_keys=True)}\n"
                    f"  reference: {json.dumps(reference[s], sort_keys=True)}\n"
                )
                return 1
        report[p] = {"steps": len(steps), "values": sum(len(v) for v in seen.values())}
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
