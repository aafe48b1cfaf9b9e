"""``smdebug.rules.rule``: the ``Rule`` base class of rules written in Python."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from smdebug_rs.analysis.utils import no_refresh
from smdebug_rs.core.logger import get_logger
from smdebug_rs.exceptions import RuleEvaluationConditionMet
from smdebug_rs.rules.req_tensors import RequiredTensors

if TYPE_CHECKING:
    from smdebug_rs.trials.trial import Trial

__all__ = ["Rule"]


class Rule:
    """Base class of rules: subclass it and implement ``invoke_at_step(step)`` (return True
    when the condition is met); optionally ``set_required_tensors(step)`` with
    ``self.req_tensors.add(...)``.

    ``action_str`` may be left out (the original requires it positionally).
    """

    def __init__(self, base_trial: Trial, action_str: str = "",
                 other_trials: Optional[Sequence[Trial]] = None) -> None:
        self.base_trial = base_trial
        self.other_trials: Optional[List[Trial]] = (
            None if other_trials is None else list(other_trials))
        self.trials: List[Trial] = [base_trial] + list(other_trials or [])
        self.req_tensors = RequiredTensors(base_trial, other_trials)
        self.logger: logging.Logger = get_logger()
        self.rule_name: str = self.__class__.__name__
        self.action_str = action_str
        self.report: Dict[str, Any] = {
            "RuleTriggered": 0,
            "Violations": 0,
            "Details": {},
            "Datapoints": 0,
            "RuleParameters": "",
        }

    def set_required_tensors(self, step: int) -> None:
        """Declares the tensors needed at ``step`` (default: none)."""

    def invoke_at_step(self, step: int) -> bool:
        """Evaluates the condition at global step ``step``; True means it is met."""
        raise NotImplementedError(f"{self.rule_name} does not implement invoke_at_step")

    def invoke(self, step: int) -> None:
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
