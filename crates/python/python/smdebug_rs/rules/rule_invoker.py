"""``smdebug.rules.rule_invoker``: ``invoke_rule``, which evaluates a rule step by step."""

from typing import Optional

from smdebug_rs.core.logger import get_logger
from smdebug_rs.exceptions import (
    NoMoreProfilerData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug_rs.rules.builtin_rules import _BuiltinRule
from smdebug_rs.rules.rule import Rule

__all__ = ["invoke_rule"]

_logger = get_logger()


def invoke_rule(rule_obj: Rule, start_step: Optional[int] = 0, end_step: Optional[int] = None,
                raise_eval_cond: bool = False) -> None:
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
