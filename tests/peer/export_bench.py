#!/usr/bin/env python3
"""Timings of exporting a trial's `tensors` table with statistics: `smdebug export` (ours),
the same job done with the REAL smdebug 1.0.34 + numpy + pyarrow (the Python baseline), and
our every-value read of the same trial (`smdebug dump`, values hashed), for
`cargo xtask bench`.

  export_bench.py TRIAL --smdebug BIN --out DIR [--repeat N]

Each run of ours is its own child process; its peak RSS comes from os.wait4() of that
child. The Python baseline runs in this process: create_trial, then for every tensor, step
and worker the value, numpy statistics (min, max, mean, std, l1, l2 of the finite elements,
NaN/+Inf/-Inf/zero counts) and a row; rows go to a Parquet file (zstd) in batches of 8192.

Prints JSON: {"rows", "value_bytes", "ours_seconds", "ours_max_rss_bytes",
"python_seconds", "python_rows", "read_seconds"} (seconds: the fastest of --repeat runs;
the Python baseline runs once).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def ours(trial, bin_path, out_dir):
    shutil.rmtree(out_dir, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.Popen([bin_path, "export", trial, out_dir, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait4 before communicate would deadlock on a full pipe: the summary is one line.
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    if status != 0:
        sys.stderr.write(err.decode(errors="replace"))
        raise SystemExit(f"smdebug export failed ({status})")
    summary = json.loads(out)
    return summary, seconds, usage.ru_maxrss * 1024


def every_value_read(trial, bin_path):
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run([bin_path, "dump", trial, "--no-computed-reductions",
                        "--no-global-lookup", "--max-inline", "0", "--compact"],
                       stdout=null, check=True)
    return time.perf_counter() - t0


def python_export(trial, out_dir):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    pc.import_smdebug()
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    t0 = time.perf_counter()
    tr = create_trial(trial)
    cols = ["tensor", "step", "worker", "dtype", "min", "max", "mean", "std", "l1", "l2",
            "nan_count", "pos_inf_count", "neg_inf_count", "zero_count"]
    batch = {c: [] for c in cols}
    writer = None
    rows = 0

    def flush():
        nonlocal writer, batch
        table = pa.table(batch)
        if writer is None:
            writer = pq.ParquetWriter(os.path.join(out_dir, "tensors.parquet"), table.schema,
                                      compression="zstd")
        writer.write_table(table)
        batch = {c: [] for c in cols}

    for name in tr.tensor_names():
        t = tr.tensor(name)
        for g in t.steps(mode=ModeKeys.GLOBAL, show_incomplete_steps=True):
            mode, ms = tr.mode_modestep(g)
            for w in t.workers(ms, mode=mode):
                try:
                    v = t.value(ms, mode=mode, worker=w)
                except Exception:
                    continue
                a = np.asarray(v)
                if a.dtype.kind not in "biuf":
                    continue
                f = a.astype(np.float64).reshape(-1)
                fin = f[np.isfinite(f)]
                have = fin.size > 0
                batch["tensor"].append(name)
                batch["step"].append(int(g))
                batch["worker"].append(w)
                batch["dtype"].append(a.dtype.name)
                batch["min"].append(float(fin.min()) if have else None)
                batch["max"].append(float(fin.max()) if have else None)
                batch["mean"].append(float(fin.mean()) if have else None)
                batch["std"].append(float(fin.std()) if have else None)
                batch["l1"].append(float(np.abs(fin).sum()) if have else None)
                batch["l2"].append(float(np.sqrt((fin * fin).sum())) if have else None)
                batch["nan_count"].append(int(np.isnan(f).sum()))
                batch["pos_inf_count"].append(int(np.isposinf(f).sum()))
                batch["neg_inf_count"].append(int(np.isneginf(f).sum()))
                batch["zero_count"].append(int((f == 0).sum()))
                rows += 1
                if len(batch["tensor"]) >= 8192:
                    flush()
    if batch["tensor"] or writer is None:
        flush()
    writer.close()
    return rows, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trial")
    ap.add_argument("--smdebug", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    best, rss, summary = None, 0, None
    for _ in range(max(1, args.repeat)):
        summary, seconds, peak = ours(args.trial, args.smdebug, os.path.join(args.out, "ours"))
        best = seconds if best is None else min(best, seconds)
        rss = max(rss, peak)
    read = min(every_value_read(args.trial, args.smdebug) for _ in range(max(1, args.repeat)))
    py_rows, py_seconds = python_export(args.trial, os.path.join(args.out, "python"))
    json.dump({
        "rows": summary["tables"]["tensors"]["rows"],
        "value_bytes": summary["value_bytes"],
        "ours_seconds": best,
        "ours_max_rss_bytes": rss,
        "python_seconds": py_seconds,
        "python_rows": py_rows,
        "read_seconds": read,
    }, sys.stdout)
    sys.stdout.write("\n")
    shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
