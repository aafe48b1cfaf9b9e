"""Runs smdebug's own `invoke_rule` with a small rule over a trial and prints what happened
as JSON, for tests/conformance/rules.rs.

Usage: rules_invoke.py TRIAL START END|none RAISE(0|1) REGEX

The rule fires at a step when a tensor matching REGEX has a NaN value there (tensors
without a value at the step are skipped), like smdebug-rs's ExplodingTensor with
only_nan=True.
"""
import json
import sys

import numpy as np
from peer_common import import_smdebug

import_smdebug()
from smdebug.exceptions import NoMoreData, RuleEvaluationConditionMet, TensorUnavailableForStep
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial  # noqa: E402


class AnyNaN(Rule):
    def __init__(self, base_trial, regex):
        super().__init__(base_trial, action_str="")
        self.regex = regex
        self.evaluated = []
        self.fired = []

    def invoke_at_step(self, step):
        self.evaluated.append(step)
        for name in self.base_trial.tensor_names(regex=[self.regex]):
            try:
                v = self.base_trial.tensor(name).value(step)
            except TensorUnavailableForStep:
                continue
            if np.issubdtype(np.asarray(v).dtype, np.floating) and np.isnan(v).any():
                self.fired.append(step)
                return True
        return False


def main():
    path, start, end, raise_cond, regex = sys.argv[1:6]
    end = None if end == "none" else int(end)
    rule = AnyNaN(create_trial(path), regex)
    out = {"end": "end_step", "raised_step": None}
    try:
        invoke_rule(rule, start_step=int(start), end_step=end, raise_eval_cond=raise_cond == "1")
    except NoMoreData:
        out["end"] = "no_more_data"
    except RuleEvaluationConditionMet as e:
        out["end"] = "raised"
        out["raised_step"] = e.step
    out["evaluated"] = rule.evaluated
    out["fired"] = rule.fired
    print(json.dumps(out))


if __name__ == "__main__":
    main()
