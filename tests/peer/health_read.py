#!/usr/bin/env python3
"""Read a trial's health-summary tensors with the REAL smdebug 1.0.34 and check them against
numpy's counts over the raw tensors of the same step (docs/src/format.md, "Health summaries").

  health_read.py TRIAL

Prints one JSON object: {"checked": N, "health_tensors": [names], "mismatches": [...]}.
Every raw tensor that has a `smdebug/health/counts/<name>` record at a step is checked:
counts == [size, isnan.sum, isposinf.sum, isneginf.sum, (x == 0).sum]; range ==
[min, max, max |x|] of the finite elements (NaN when none); the histogram (when present)
== counts of floor(log2 |x|) + 64 clamped to 0..127 over the finite non-zero elements.

Exit status: 0 read (mismatches are data), 3 smdebug cannot be imported.
"""

import json
import os
import sys
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PREFIX = "smdebug/health/"


def expected(x, np):
    x = np.asarray(x)
    if x.dtype == np.bool_:
        xf = x.astype(np.float64)
    else:
        xf = x.astype(np.float64) if x.dtype.kind in "iu" else x
    counts = [
        int(x.size),
        int(np.isnan(xf).sum()) if xf.dtype.kind == "f" else 0,
        int(np.isposinf(xf).sum()) if xf.dtype.kind == "f" else 0,
        int(np.isneginf(xf).sum()) if xf.dtype.kind == "f" else 0,
        int((x == 0).sum()),
    ]
    fin = xf[np.isfinite(xf)].astype(np.float64) if xf.dtype.kind == "f" else xf.astype(np.float64).ravel()
    if fin.size:
        rng = [float(fin.min()), float(fin.max()), float(np.abs(fin).max())]
    else:
        rng = [float("nan")] * 3
    nz = np.abs(fin[fin != 0])
    _, e = np.frexp(nz)
    buckets = np.clip(e.astype(np.int64) - 1 + 64, 0, 127)
    hist = np.bincount(buckets, minlength=128).tolist()
    return counts, rng, hist


def same_floats(a, b):
    return all((x == y) or (x != x and y != y) for x, y in zip(a, b)) and len(a) == len(b)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    pc.import_smdebug()
    import numpy as np
    from smdebug.trials import create_trial

    warnings.simplefilter("ignore")
    trial = create_trial(sys.argv[1])
    names = trial.tensor_names()
    health = sorted(n for n in names if n.startswith(PREFIX))
    mismatches = []
    checked = 0
    for name in names:
        if name.startswith("smdebug/"):
            continue
        counts_name = PREFIX + "counts/" + name
        if counts_name not in names:
            continue
        for step in trial.tensor(counts_name).steps():
            raw = trial.tensor(name).value(step)
            counts = trial.tensor(counts_name).value(step).tolist()
            rng = trial.tensor(PREFIX + "range/" + name).value(step).tolist()
            want_counts, want_rng, want_hist = expected(raw, np)
            problems = []
            if counts != want_counts:
                problems.append({"counts": counts, "numpy": want_counts})
            if not same_floats(rng, want_rng):
                problems.append({"range": [repr(v) for v in rng], "numpy": [repr(v) for v in want_rng]})
            hist_name = PREFIX + "histogram/" + name
            if hist_name in names:
                hist = trial.tensor(hist_name).value(step).tolist()
                if hist != want_hist:
                    problems.append({"histogram": hist, "numpy": want_hist})
            if problems:
                mismatches.append({"tensor": name, "step": int(step), "problems": problems})
            checked += 1
    print(json.dumps({"checked": checked, "health_tensors": health, "mismatches": mismatches}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
