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

from smdebug_rs import _native
from smdebug_rs.analysis.utils import no_refresh
from smdebug_rs.core.logger import get_logger
from smdebug_rs.exceptions import (
    NoMoreProfilerData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)

__all__ = [
    "Rule",
    "RequiredTensors",
    "RequiredTensorsForTrial",
    "invoke_rule",
    "BUILTIN_RULES",
]


class RequiredTensorsForTrial:
    """The tensors (and their steps) a rule needs from one trial at the current step."""

    def __init__(self, trial):
        self.trial = trial
        self._tensor_steps = {}
        self._tensors = {}

    def _add_steps_for_tensor(self, name, steps):
        self._tensor_steps.setdefault(name, []).extend(steps)
        if name not in self._tensors:
            self._tensors[name] = self.trial.tensor(name)

    def add(self, name, steps, should_match_regex=False):
        """Requires ``name`` (every name the regex matches with ``should_match_regex``)."""
        if should_match_regex:
            for n in self.trial.tensor_names(regex=[name]):
                self._add_steps_for_tensor(n, steps)
        else:
            if not self.trial.has_tensor(name):
                raise TensorUnavailable(name)
            self._add_steps_for_tensor(name, steps)

    def get_tensor_steps(self, name):
        """The steps required of ``name``."""
        return self._tensor_steps[name]

    def get_names(self):
        """The required names."""
        return self._tensor_steps.keys()

    def get(self):
        """The required tensors."""
        return self._tensors.values()

    def clear(self):
        """Forgets every requirement."""
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self):
        """Waits for the required steps, then reads every required value."""
        steps = sorted({s for ss in self._tensor_steps.values() for s in ss})
        self.trial.wait_for_steps(steps)
        for name, ss in self._tensor_steps.items():
            t = self._tensors[name]
            for s in ss:
                t.value(s)


class RequiredTensors:
    """``self.req_tensors`` of a rule: required tensors per trial (base trial by default)."""

    def __init__(self, base_trial, other_trials):
        self.base_trial = base_trial
        self._per_trial = {base_trial: RequiredTensorsForTrial(base_trial)}
        for t in other_trials or []:
            self._per_trial[t] = RequiredTensorsForTrial(t)

    def _of(self, trial):
        return self._per_trial[self.base_trial if trial is None else trial]

    def add(self, name, steps, trial=None, should_match_regex=False):
        """Requires ``name`` at ``steps`` from ``trial`` (default: the base trial)."""
        self._of(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name, trial=None):
        """The steps required of ``name``."""
        return self._of(trial).get_tensor_steps(name)

    def get_names(self, trial=None):
        """The required names."""
        return self._of(trial).get_names()

    def get(self, trial=None):
        """The required tensors."""
        return self._of(trial).get()

    def clear(self):
        """Forgets every requirement."""
        for r in self._per_trial.values():
            r.clear()

    def fetch(self):
        """Waits for and reads every required value."""
        for r in self._per_trial.values():
            r.fetch()


class Rule:
    """Base class of rules: subclass it and implement ``invoke_at_step(step)`` (return True
    when the condition is met); optionally ``set_required_tensors(step)`` with
    ``self.req_tensors.add(...)``.

    ``action_str`` may be left out (the original requires it positionally).
    """

    def __init__(self, base_trial, action_str="", other_trials=None):
        self.base_trial = base_trial
        self.other_trials = other_trials
        self.trials = [base_trial] + list(other_trials or [])
        self.req_tensors = RequiredTensors(base_trial, other_trials)
        self.logger = get_logger()
        self.rule_name = self.__class__.__name__
        self.action_str = action_str
        self.report = {
            "RuleTriggered": 0,
            "Violations": 0,
            "Details": {},
            "Datapoints": 0,
            "RuleParameters": "",
        }

    def set_required_tensors(self, step):
        """Declares the tensors needed at ``step`` (default: none)."""

    def invoke_at_step(self, step):
        """Evaluates the condition at global step ``step``; True means it is met."""
        raise NotImplementedError(f"{self.rule_name} does not implement invoke_at_step")

    def invoke(self, step):
        """Waits for ``step``, evaluates the rule with refreshing off; raises
        ``RuleEvaluationConditionMet`` when it fires."""
        self.logger.debug(f"Invoking rule {self.rule_name} for step {step}")
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            self.req_tensors.clear()
            self.set_required_tensors(step)
            self.req_tensors.fetch()
            val = self.invoke_at_step(step)
        if val:
            raise RuleEvaluationConditionMet(self.rule_name, step)


def _param_text(value, trials):
    if isinstance(value, _native.Trial):
        trials.append(value)
        return value.path
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple, set)):
        return ",".join(_param_text(v, trials) for v in value)
    return str(value)


class _BuiltinRule(Rule):
    """A built-in rule: evaluated by the Rust rule engine."""

    _spec_name = ""
    _params = ()
    _aliases = {}

    def __init__(self, base_trial, *args, action_str="", **kwargs):
        names = [p[0] for p in self._params]
        if len(args) > len(names):
            raise TypeError(f"{self._spec_name} takes at most {len(names)} parameters")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            k = self._aliases.get(k, k)
            if k not in names:
                raise TypeError(
                    f"{self._spec_name}() got an unexpected keyword argument {k!r} "
                    f"(parameters: {', '.join(names)})"
                )
            if k in given:
                raise TypeError(f"{self._spec_name}() got multiple values for argument {k!r}")
            given[k] = v
        trials = []
        params = {k: _param_text(v, trials) for k, v in given.items() if v is not None}
        if action_str:
            params["action_json"] = action_str
        super().__init__(base_trial, action_str, other_trials=trials or None)
        self.rule_name = self._spec_name
        self.firings = []
        self._native = _native.BuiltinRule(self._spec_name, base_trial, params, trials)

    def invoke_at_step(self, step):
        raise NotImplementedError("built-in rules are evaluated by invoke()")

    def invoke(self, step):
        self._native.invoke(step)

    def _invoke_rule(self, start_step, end_step, raise_eval_cond):
        result = self._native.invoke_rule(start_step, end_step, raise_eval_cond)
        self.firings.extend(result["firings"])
        self.last_evaluation = result
        if result["end"] == "end_of_training":
            raise result["no_more_data"]


def _builtin_class(name, doc, params):
    lines = [f"{name}: {doc}.", "", "Parameters (strings as SageMaker passes them, or values):"]
    for p, kind, default, required, pdoc in params:
        d = "required" if required else f"default {default}" if default is not None else "unset"
        lines.append(f"    {p} ({kind}; {d}): {pdoc}")
    aliases = {"other_trial": "other_trials"} if any(p[0] == "other_trials" for p in params) else {}
    return type(
        name,
        (_BuiltinRule,),
        {
            "__doc__": "\n".join(lines),
            "__module__": __name__,
            "_spec_name": name,
            "_params": tuple(params),
            "_aliases": aliases,
        },
    )


BUILTIN_RULES = []
for _name, _doc, _params in _native.builtin_rule_specs():
    globals()[_name] = _builtin_class(_name, _doc, _params)
    BUILTIN_RULES.append(_name)
    __all__.append(_name)
del _name, _doc, _params

_logger = get_logger()


def invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False):
    """Evaluates ``rule_obj`` at every global step from ``start_step`` to ``end_step``
    (exclusive; to the end of training when None), as smdebug does: steps and tensors that
    are not available are skipped, a step not written yet is waited for, a firing is logged
    (raised with ``raise_eval_cond``), and the end of training raises ``NoMoreData``.

    Built-in rules record their firings in ``rule.firings``.
    """
    step = start_step if start_step is not None else 0
    if isinstance(rule_obj, _BuiltinRule):
        rule_obj._invoke_rule(step, end_step, raise_eval_cond)
        return
    _logger.info(f"Started execution of rule {type(rule_obj).__name__} at step {step}")
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as e:
            _logger.debug(str(e))
        except RuleEvaluationConditionMet as e:
            if raise_eval_cond:
                raise e
            _logger.debug(str(e))
            if e.end_of_rule:
                break
        except NoMoreProfilerData as e:
            _logger.info(f"No more profiler data for rule {type(rule_obj).__name__} at {e.timestamp}")
            break
        step += 1
    _logger.info(f"Ended execution of rule {type(rule_obj).__name__} at end_step {step - 1}")
