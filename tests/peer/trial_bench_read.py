#!/usr/bin/env python3
"""Time the REAL smdebug 1.0.34 reading a trial, phase for phase like the Rust bench
(crates/trial/benches/trial.rs, IDs trial/open, trial/list, trial/every_value,
trial/one_reduction_per_value, trial/raw_read_baseline).

  trial_bench_read.py PATH [--repeat 3] [--reduction mean] [--every-worker] [--json OUT]

PATH is a local directory or an s3://bucket/prefix URL; for S3, smdebug's boto3 takes the
endpoint and credentials from the AWS_* environment variables (AWS_ENDPOINT_URL[_S3] for
the moto test server, as the conformance tests set them).

Phases, each from a fresh create_trial() per repetition:
  open                     create_trial(PATH) (collections + every index file)
  list                     tensor_names() and, per tensor, steps()
  every_value              tensor.value(step) for every tensor x complete step (with
                           --every-worker: tensor.value(step, worker=w) for every worker w
                           of tensor.workers(step), the many-small-tensors bench,
                           crates/trial/benches/small.rs)
  one_reduction_per_value  tensor.reduction_value(step, R) for the same set
  raw_read_baseline        reading every events/ file whole (plain Python I/O; local only)
Reports the median and the fastest (best-of-N) wall seconds per phase; `cargo xtask bench`
compares the fastest with the fastest criterion sample. SMDEBUG_TRAINING_END_DELAY_REFRESH is set to 0
so that the 1 s sleep smdebug takes after seeing training_job_end.ts is not measured.

Make the trial with the Rust bench (SMDEBUG_TRIAL_BENCH_DIR=PATH cargo bench -p
smdebug-trial) or `fixture.py PATH --preset large`.
Exit status: 0 ok, 2 usage, 3 smdebug cannot be imported.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

PHASES = ("open", "list", "every_value", "one_reduction_per_value", "raw_read_baseline")


def one_run(path, reduction, every_worker=False):
    from smdebug.trials import create_trial

    out = {}
    t0 = time.perf_counter()
    trial = create_trial(path)
    out["open"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    work = []
    for n in trial.tensor_names():
        T = trial.tensor(n)
        work.extend((T, s) for s in T.steps())
    out["list"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if every_worker:
        n = 0
        for T, s in work:
            for w in T.workers(s):
                T.value(s, worker=w)
                n += 1
        out["every_value"] = time.perf_counter() - t0
        # The reduction phase is not part of this bench.
        return out, n, None
    for T, s in work:
        T.value(s)
    out["every_value"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    for T, s in work:
        T.reduction_value(s, reduction)
    out["one_reduction_per_value"] = time.perf_counter() - t0

    if path.startswith("s3://"):
        return out, len(work), None
    t0 = time.perf_counter()
    total = 0
    events = os.path.join(path, "events")
    for d in sorted(os.listdir(events)):
        for f in sorted(os.listdir(os.path.join(events, d))):
            with open(os.path.join(events, d, f), "rb") as fh:
                total += len(fh.read())
    out["raw_read_baseline"] = time.perf_counter() - t0
    return out, len(work), total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reduction", default="mean")
    ap.add_argument("--every-worker", action="store_true")
    ap.add_argument("--json")
    opts = ap.parse_args(argv)
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    pc.import_smdebug()
    runs = []
    for _ in range(max(1, opts.repeat)):
        res, nvalues, nbytes = one_run(opts.path, opts.reduction, opts.every_worker)
        runs.append(res)
    phases = [p for p in PHASES if p in runs[0]]
    median = {p: statistics.median(r[p] for r in runs) for p in phases}
    best = {p: min(r[p] for r in runs) for p in phases}
    doc = {"implementation": "smdebug-python", "path": opts.path, "values": nvalues,
           "event_bytes": nbytes, "repeat": len(runs),
           "median_seconds": {f"trial/{p}": round(v, 6) for p, v in median.items()},
           "best_seconds": {f"trial/{p}": round(v, 6) for p, v in best.items()}}
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(doc, f, indent=1)
    print(f"{'phase':<32} {'median':>10}   {'best':>10}")
    for p in phases:
        print(f"trial/{p:<26} {median[p]:10.4f} s {best[p]:10.4f} s")
    size = f", {nbytes / 1e6:.1f} MB of event files" if nbytes is not None else ""
    print(f"{nvalues} values{size}, {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
