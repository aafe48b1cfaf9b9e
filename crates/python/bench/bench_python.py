#!/usr/bin/env python3
"""Times one package — the real smdebug or smdebug_rs — on one trial, from this Python.

  bench_python.py TRIAL --package smdebug|smdebug_rs [--repeat N] [--skip-pandas]

Prints one JSON object: {"package", "trial", "open", "every_value", "to_pandas", "values",
"rows"}: the best of N runs, in seconds, each run in a fresh trial object:
  open         create_trial(path) then tensor_names() (smdebug's first refresh)
  every_value  value(step, worker=w) of every tensor, step and worker
  to_pandas    the `tensors` table as a DataFrame: smdebug_rs's trial.to_pandas(); for smdebug
               the equivalent built by hand (smdebug + numpy + pandas): one row per tensor,
               step and worker with dtype, size and min, max, mean, std, l1, l2 of the value
"""

import argparse
import gc
import json
import os
import sys
import time

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        # The previous run's result (a trial, a DataFrame) is freed before the clock starts,
        # not by the assignment below inside the timed span: no figure includes tearing down
        # the run before it (the Rust benchmarks drop outside their timings too).
        out = None
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trial")
    ap.add_argument("--package", choices=["smdebug", "smdebug_rs"], required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--skip-pandas", action="store_true")
    a = ap.parse_args()
    # Imported before any timing, so no figure includes an import.
    import numpy as np

    if not a.skip_pandas:
        import pandas as pd
        import pyarrow  # noqa: F401 (to_pandas goes through it)
    if a.package == "smdebug":
        from smdebug.trials import create_trial
    else:
        from smdebug_rs.trials import create_trial

    def open_trial():
        tr = create_trial(a.trial)
        tr.tensor_names()
        return tr

    def every_value():
        tr = open_trial()
        n = 0
        for name in tr.tensor_names():
            t = tr.tensor(name)
            for s in t.steps():
                for w in t.workers(s):
                    t.value(s, worker=w)
                    n += 1
        return n

    def to_pandas():
        tr = open_trial()
        if a.package == "smdebug_rs":
            return len(tr.to_pandas())
        rows = []
        for name in tr.tensor_names():
            t = tr.tensor(name)
            for s in t.steps():
                for w in t.workers(s):
                    v = np.asarray(t.value(s, worker=w))
                    f = v.astype(np.float64).ravel()
                    rows.append({
                        "tensor": name, "step": s, "worker": w, "dtype": str(v.dtype),
                        "size": v.size, "min": f.min(), "max": f.max(), "mean": f.mean(),
                        "std": f.std(), "l1": np.abs(f).sum(), "l2": np.sqrt((f * f).sum()),
                    })
        return len(pd.DataFrame(rows))

    out = {"package": a.package, "trial": a.trial}
    out["open"], _ = best(open_trial, a.repeat)
    out["every_value"], out["values"] = best(every_value, a.repeat)
    if not a.skip_pandas:
        out["to_pandas"], out["rows"] = best(to_pandas, a.repeat)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
