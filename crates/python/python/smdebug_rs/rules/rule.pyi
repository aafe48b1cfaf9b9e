"""Type stubs of smdebug_rs.rules.rule."""

from typing import Any, Dict, List, Optional, Sequence

from smdebug_rs.rules.req_tensors import RequiredTensors
from smdebug_rs.trials.trial import Trial

class Rule:
    base_trial: Trial
    other_trials: Optional[List[Trial]]
    trials: List[Trial]
    req_tensors: RequiredTensors
    rule_name: str
    logger: Any
    report: Dict[str, Any]
    def __init__(self, base_trial: Trial, action_str: str = '', other_trials: Optional[Sequence[Trial]] = None) -> None: ...
    def set_required_tensors(self, step: int) -> None: ...
    def invoke_at_step(self, step: int) -> bool: ...
    def invoke(self, step: int) -> None: ...
