"""Times smdebug_rs.spark.rule_verdicts over a fleet of N small trials on a local Spark.

    python crates/python/bench/spark_fleet.py --trials 64 [--steps 12] [--master local[2]]
        [--repeat 3] [--dir DIR] [--fleet FLEET --rule RULE ...]

Prints one JSON object: `session_start_s` (SparkSession start: JVM and context, reported
apart because a cluster pays it once per application, not per fleet), `write_s` (writing
the fleet with smdebug_rs.Hook, not part of the verdicts), `verdicts_s` (best of `--repeat`
runs of rule_verdicts + collect over the whole fleet), `per_trial_ms`, `rows`, and the
rules that fired (per rule, the number of trials). The trials are those of the tests
(crates/python/tests/spark_helpers.py: healthy, vanishing, exploding and rising runs in
turn), or with `--fleet` the trials already below FLEET (`--trials` is then how many there
must be, and `--rule`, repeatable, replaces the default rules): `cargo xtask bench --fleet`
so times Spark over the fleet it times `smdebug rules` over.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

RULES = [
    "VanishingGradient",
    "ExplodingTensor:collection_names=gradients,weights,only_nan=True",
    "LossNotDecreasing:num_steps=3",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where the fleet is written (default: a temporary folder)")
    ap.add_argument("--fleet", help="judge the trials below FLEET instead of writing a fleet")
    ap.add_argument("--rule", action="append", help="a rule, as `smdebug rules --rule` takes it")
    args = ap.parse_args()
    rules = args.rule or RULES

    from spark_helpers import local_spark, write_fleet

    from smdebug_rs.spark import rule_verdicts

    base = args.dir or (None if args.fleet else tempfile.mkdtemp(prefix="smdebug-rs-spark-fleet-"))
    try:
        write_s = 0.0
        fleet = args.fleet
        if not fleet:
            fleet = os.path.join(base, "fleet")
            started = time.perf_counter()
            write_fleet(fleet, args.trials, steps=args.steps)
            write_s = time.perf_counter() - started
        spark, session_start_s = local_spark("smdebug_rs spark_fleet benchmark", args.master)
        best = None
        rows = []
        for _ in range(max(1, args.repeat)):
            started = time.perf_counter()
            rows = rule_verdicts(spark, fleet, rules).collect()
            took = time.perf_counter() - started
            best = took if best is None else min(best, took)
        spark.stop()
        errors = [r["error"] for r in rows if r["error"]]
        if errors or len(rows) != args.trials * len(rules):
            raise SystemExit(f"{len(rows)} rows, errors: {errors[:3]}")
        fired = {}
        for r in rows:
            if r["fired"]:
                fired[r["rule"]] = fired.get(r["rule"], 0) + 1
        print(json.dumps({
            "trials": args.trials, "steps": None if args.fleet else args.steps,
            "rules": len(rules),
            "master": args.master, "session_start_s": session_start_s, "write_s": write_s,
            "verdicts_s": best, "per_trial_ms": best / args.trials * 1e3, "rows": len(rows),
            "fired": fired,
        }))
    finally:
        if base and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
