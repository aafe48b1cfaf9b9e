#!/usr/bin/env python3
"""Time the REAL smdebug 1.0.34 judging a fleet of trials: for every trial below FLEET,
create_trial and smdebug's own invoke_rule with two rules, one after the other (the loop a
user of the original writes; it has no fleet runner).

  fleet_rules_bench.py FLEET [--repeat 2]

The trials are the folders below FLEET holding an `index/` folder, in name order. The rules
mirror the built-in rules `cargo xtask bench` gives `smdebug rules` over the same fleet
(xtask/src/bench/fleet.rs):
  ExplodingTensor:tensor_regex=^gradient/,only_nan=True  a tensor matching ^gradient/ holds NaN
  VanishingGradient  (threshold 1e-7)                   a gradient's mean |value| is below it
Each rule is invoked over the whole trial (raise_eval_cond off, to the end of training), so
every step is evaluated, as `smdebug rules` does.

Prints one JSON object: `seconds` (the fastest of --repeat passes over the whole fleet,
import of smdebug excluded), `trials`, and per rule the number of trials where it fired.
SMDEBUG_TRAINING_END_DELAY_REFRESH is set to 0 so that the 1 s sleep smdebug takes after
seeing training_job_end.ts is not measured. Exit status: 0 ok, 3 smdebug cannot be imported.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

VANISHING_THRESHOLD = 1e-7


def trials_below(fleet):
    found = []
    for root, dirs, _files in os.walk(fleet):
        if "index" in dirs:
            found.append(root)
            dirs[:] = []  # a trial inside a trial belongs to the outer one
        dirs.sort()
    return sorted(found)


def make_rules():
    import numpy as np
    from smdebug.exceptions import TensorUnavailableForStep
    from smdebug.rules.rule import Rule

    class NaNGradient(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")
            self.fired = 0

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(regex=["^gradient/"]):
                try:
                    v = self.base_trial.tensor(name).value(step)
                except TensorUnavailableForStep:
                    continue
                v = np.asarray(v)
                if np.issubdtype(v.dtype, np.floating) and np.isnan(v).any():
                    self.fired += 1
                    return True
            return False

    class Vanishing(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")
            self.fired = 0

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(collection="gradients"):
                try:
                    v = self.base_trial.tensor(name).value(step)
                except TensorUnavailableForStep:
                    continue
                v = np.asarray(v, dtype=np.float64)
                if v.size and np.abs(v).mean() < VANISHING_THRESHOLD:
                    self.fired += 1
                    return True
            return False

    return {"ExplodingTensor": NaNGradient, "VanishingGradient": Vanishing}


def one_pass(trials, rules):
    from smdebug.exceptions import NoMoreData
    from smdebug.rules.rule_invoker import invoke_rule
    from smdebug.trials import create_trial

    fired = {name: 0 for name in rules}
    for path in trials:
        trial = create_trial(path)
        for name, cls in rules.items():
            rule = cls(trial)
            try:
                invoke_rule(rule, start_step=0, end_step=None, raise_eval_cond=False)
            except NoMoreData:
                pass
            if rule.fired:
                fired[name] += 1
    return fired


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fleet")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    pc.import_smdebug()
    rules = make_rules()
    trials = trials_below(args.fleet)
    if not trials:
        raise SystemExit(f"error: no trial below {args.fleet}")
    best, fired = None, None
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        fired = one_pass(trials, rules)
        took = time.perf_counter() - started
        best = took if best is None else min(best, took)
    print(json.dumps({"seconds": best, "trials": len(trials), "fired": fired}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
