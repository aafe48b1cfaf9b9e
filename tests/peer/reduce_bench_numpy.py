"""Times numpy computing the reductions of `reduce/fused_f32_64Mi` on a float32 array.

Usage: reduce_bench_numpy.py [--elements N] [--repeat R]

Computes, as smdebug's numpy path would one reduction at a time: min, max, mean, std,
variance, sum, l1 and l2 of the flattened array (np.linalg.norm of a 1-d array), plus the
NaN and Inf counts (np.isnan(x).sum(), np.isinf(x).sum()) that the Rust fused pass also
returns. Prints JSON {"seconds": best wall time of one full set, "bytes": bytes of the
array, "elements": N, "repeat": R} so the caller can compare throughputs.
"""
import argparse
import json
import time

import numpy as np


def one_set(x):
    return (
        np.amin(x),
        np.amax(x),
        np.mean(x),
        np.std(x),
        np.var(x),
        np.sum(x),
        np.linalg.norm(x, 1),
        np.linalg.norm(x, 2),
        int(np.isnan(x).sum()),
        int(np.isinf(x).sum()),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=64 << 20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = ((rng.random(args.elements, dtype=np.float32) - 0.5) * 8.0).astype(np.float32)
    best = float("inf")
    with np.errstate(all="ignore"):
        one_set(x)  # warm-up: page in the array, load BLAS
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            one_set(x)
            best = min(best, time.perf_counter() - t0)
    print(
        json.dumps(
            {"seconds": best, "bytes": int(x.nbytes), "elements": args.elements, "repeat": args.repeat}
        )
    )


if __name__ == "__main__":
    main()
