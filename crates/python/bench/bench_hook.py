#!/usr/bin/env python3
"""Times the writer hook from Python: smdebug_rs.Hook against the original's hook
(its CallbackHook as a numpy hook, crates/python/tests/same_calls.py), from this Python.

  bench_hook.py --package smdebug|smdebug_rs [--steps 100] [--tensors 100] [--big-steps 64]

Prints one JSON object:
  small_save_us   training-thread time per save of a small tensor (10 float32), every
                  tensor saved at every step: the save calls and step boundaries of
                  STEPS x TENSORS saves, divided by the number of saves (close not included)
  small_total_s   the same run with close (everything written)
  big_mb_per_s    1 MiB float32 tensors, one per step, BIG_STEPS steps: bytes of tensor
                  data per second from the first step to the end of close (10^6 bytes)
  big_save_us     training-thread time per 1 MiB save (close not included)
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def make_hook(package, out):
    if package == "smdebug_rs":
        import smdebug_rs as smd

        return smd.Hook(out, save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights"], worker="worker_0", num_workers=1)
    import smdebug as smd
    from same_calls import original_hook_class

    return original_hook_class()(out, save_config=smd.SaveConfig(save_interval=1),
                                 include_collections=["weights"])


def run(package, steps, values, names):
    """(training-thread seconds, total seconds) of `steps` steps saving `values`."""
    parent = tempfile.mkdtemp()
    try:
        hook = make_hook(package, os.path.join(parent, "t"))
        next_step = getattr(hook, "next_step", None) or hook.step
        save = hook.save
        t0 = time.perf_counter()
        for _ in range(steps):
            next_step()
            for n, v in zip(names, values):
                save(n, v)
        t1 = time.perf_counter()
        hook.close()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def main():
    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("--package", choices=["smdebug", "smdebug_rs"], required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--tensors", type=int, default=100)
    ap.add_argument("--big-steps", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    names = [f"layer_{i:03d}.weight" for i in range(a.tensors)]
    small = [np.arange(10, dtype=np.float32) + i for i in range(a.tensors)]
    big = [np.ones(1 << 18, dtype=np.float32)]  # 1 MiB
    runs = [run(a.package, a.steps, small, names) for _ in range(a.repeat)]
    thread, total = min(r[0] for r in runs), min(r[1] for r in runs)
    n = a.steps * a.tensors
    bigs = [run(a.package, a.big_steps, big, ["big.weight"]) for _ in range(a.repeat)]
    bthread, btotal = min(r[0] for r in bigs), min(r[1] for r in bigs)
    print(json.dumps({
        "package": a.package,
        "small_save_us": thread / n * 1e6,
        "small_total_s": total,
        "big_mb_per_s": a.big_steps * big[0].nbytes / btotal / 1e6,
        "big_save_us": bthread / a.big_steps * 1e6,
    }))


if __name__ == "__main__":
    main()
