#!/usr/bin/env python3
"""Peak resident memory of reading every value of a trial: the smdebug-rs reader (the
`smdebug dump` release binary) against the REAL smdebug 1.0.34.

  trial_peak_memory.py PATH --smdebug BIN [--json OUT]

Each reader runs as its own child process and its peak RSS is taken from os.wait4() of
that child, so neither figure includes the other (RUSAGE_CHILDREN would be the maximum
over all children waited for so far) nor this script's own interpreter.

* ours:   BIN dump PATH --no-computed-reductions --no-global-lookup --max-inline 0
          --compact > /dev/null — every value of every tensor, step and worker is read
          and hashed (sha256) into a JSON document; the document itself is small. It
          runs with the reader's default TrialOptions, including its value cache
          (cache_bytes, 256 MiB), which the Python smdebug has no counterpart of.
* python: this script with --python-read-all PATH: create_trial(PATH) and
          tensor.value(step) for every tensor x step, as trial_bench_read.py's every_value.

Prints JSON: {"path", "ours_max_rss_bytes", "python_max_rss_bytes",
"python_over_ours" (how many times more memory Python smdebug needs; higher is better for
us), "ours_seconds", "python_seconds"}.
Exit status: 0 ok, 1 a reader failed, 3 smdebug cannot be imported.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def python_read_all(path):
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    pc.import_smdebug()
    from smdebug.trials import create_trial

    trial = create_trial(path)
    n = 0
    for name in trial.tensor_names():
        t = trial.tensor(name)
        for s in t.steps():
            t.value(s)
            n += 1
    print(n)
    return 0


def measure(cmd):
    """Runs cmd to completion; returns (peak RSS bytes, wall seconds)."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    # Popen.wait() would not know the child was reaped; tell it.
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(f"error: {cmd} exited with {proc.returncode}\n")
        sys.exit(1)
    # ru_maxrss is in KiB on Linux.
    return usage.ru_maxrss * 1024, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--smdebug", help="the smdebug-rs CLI binary (release build)")
    ap.add_argument("--json")
    ap.add_argument("--python-read-all", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.python_read_all:
        return python_read_all(args.path)
    if not args.smdebug:
        ap.error("--smdebug is required")

    ours, ours_s = measure([args.smdebug, "dump", args.path, "--no-computed-reductions",
                            "--no-global-lookup", "--max-inline", "0", "--compact"])
    python, python_s = measure([sys.executable, os.path.abspath(__file__),
                                "--python-read-all", args.path])
    doc = {"path": args.path, "ours_max_rss_bytes": ours, "python_max_rss_bytes": python,
           "python_over_ours": python / ours, "ours_seconds": ours_s,
           "python_seconds": python_s}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
