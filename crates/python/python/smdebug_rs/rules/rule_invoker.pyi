"""Type stubs of smdebug_rs.rules.rule_invoker."""

from typing import Optional

from smdebug_rs.rules.rule import Rule

def invoke_rule(rule_obj: Rule, start_step: int = 0, end_step: Optional[int] = None, raise_eval_cond: bool = False) -> None: ...
