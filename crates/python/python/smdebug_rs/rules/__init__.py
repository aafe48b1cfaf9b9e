"""``smdebug.rules``: the ``Rule`` base class, ``invoke_rule`` and the built-in rules.

A rule written for smdebug runs unchanged once its imports point at ``smdebug_rs``::

    from smdebug_rs.rules import Rule, invoke_rule

    class VanishingGradientRule(Rule):
        def __init__(self, base_trial, threshold=0.0000001):
            super().__init__(base_trial, other_trials=None)
            self.threshold = float(threshold)

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(collection="gradients"):
                if self.base_trial.tensor(name).reduction_value(step, "mean", abs=True) < self.threshold:
                    return True
            return False

    invoke_rule(VanishingGradientRule(trial), raise_eval_cond=True)

The built-in rules (``VanishingGradient``, ``ExplodingTensor``, ``LossNotDecreasing``, … —
``BUILTIN_RULES`` lists them) take the original's parameter names; they run entirely in
Rust with the GIL released.
"""

from smdebug_rs.rules import builtin_rules as _builtin_rules
from smdebug_rs.rules.builtin_rules import *  # noqa: F401,F403 - the built-in rule classes
from smdebug_rs.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial
from smdebug_rs.rules.rule import Rule
from smdebug_rs.rules.rule_invoker import invoke_rule

__all__ = [
    "Rule",
    "RequiredTensors",
    "RequiredTensorsForTrial",
    "invoke_rule",
    *_builtin_rules.__all__,
]
