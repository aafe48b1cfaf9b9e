"""The built-in rules (``VanishingGradient``, ``ExplodingTensor``, ``LossNotDecreasing``, …):
one :class:`~smdebug_rs.rules.rule.Rule` subclass per rule of the native rule table, taking
the original's parameter names and evaluated entirely in Rust with the GIL released.
``BUILTIN_RULES`` lists their names."""

from smdebug_rs import _native
from smdebug_rs.rules.rule import Rule

__all__ = ["BUILTIN_RULES"]


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
            # Users reach them as smdebug_rs.rules.<Name>.
            "__module__": __package__,
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
