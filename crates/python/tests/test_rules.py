"""Rules from Python: the custom rule of the original's documentation (seed 002/003,
"Writing a rule") and a multi-trial rule (other_trials, req_tensors on two trials) give the
same verdicts under smdebug and smdebug_rs; built-in rules run from Python."""

import os
import textwrap

import pytest

from conftest import write_recipe

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")

import smdebug_rs  # noqa: E402

# The documentation's example, verbatim but for the import line.
SEED_RULE = textwrap.dedent('''
    from {pkg}.rules import Rule

    class VanishingGradientRule(Rule):
        def __init__(self, base_trial, threshold=0.0000001):
            super().__init__(base_trial, other_trials=None)
            self.threshold = float(threshold)

        def invoke_at_step(self, step):
            for tensorname in self.base_trial.tensors(collection='gradients'):
                tensor = self.base_trial.tensor(tensorname)
                abs_mean = tensor.reduction_value(step, 'mean', abs=True)
                if abs_mean < self.threshold:
                    return True
                else:
                    return False
''')

# The two changes smdebug 1.0.34 needs to run it [PY-BUG in the original's docs]: its
# Rule.__init__ requires `action_str`, and its Trial has no `tensors()` method.
SEED_RULE_FOR_SMDEBUG = SEED_RULE.replace(
    "super().__init__(base_trial, other_trials=None)",
    "super().__init__(base_trial, action_str='', other_trials=None)",
).replace("self.base_trial.tensors(", "self.base_trial.tensor_names(")

MULTI_TRIAL_RULE = textwrap.dedent('''
    from {pkg}.rules import Rule

    class DriftRule(Rule):
        """Fires when gradient/a of the base trial and of the other trial differ by more
        than tol at a step."""

        def __init__(self, base_trial, other_trial, tol="1.0"):
            super().__init__(base_trial, action_str="", other_trials=[other_trial])
            self.other = other_trial
            self.tol = float(tol)

        def set_required_tensors(self, step):
            self.req_tensors.add("gradient/a", steps=[step])
            self.req_tensors.add("gradient/.*", steps=[step], trial=self.other,
                                 should_match_regex=True)

        def invoke_at_step(self, step):
            names = sorted(self.req_tensors.get_names(trial=self.other))
            assert names == ["gradient/a", "gradient/b"], names
            a = self.base_trial.tensor("gradient/a").value(step)
            b = self.other.tensor("gradient/a").value(step)
            return float(abs(a - b).max()) > self.tol
''')


def grad_recipe(seed, pattern, steps=8, rng=None):
    t = {"name": "gradient/a", "shape": [3], "dtype": "float32", "pattern": pattern}
    if rng:
        t["range"] = rng
    return {
        "seed": seed,
        "workers": 1,
        "schedule": [{"mode": "TRAIN", "steps": steps}],
        "default_save_config": {"save_interval": 1},
        "collections": [{"name": "gradients", "include_regex": ["^gradient/"]}],
        # gradient/b stays far from vanishing, so only gradient/a decides VanishingGradient.
        "tensors": [t, {"name": "gradient/b", "shape": [2], "dtype": "float32",
                        "range": [10.0, 20.0]}],
        "training_ended": True,
    }


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    base = tmp_path_factory.mktemp("rules")
    return {
        "steps": write_recipe(grad_recipe(1, "step"), base / "steps"),
        "noise": write_recipe(grad_recipe(2, "random", rng=[0.0, 9.0]), base / "noise"),
    }


def load(source, pkg):
    ns = {}
    exec(compile(source.format(pkg=pkg), f"<{pkg} rule>", "exec"), ns)
    return ns


def verdicts(pkg, make_rule, last):
    """Per step: 'fired', 'ok' or the exception class, with `pkg`'s own invoke_rule."""
    mod = __import__(f"{pkg}.rules", fromlist=["invoke_rule"])
    exc = __import__(f"{pkg}.exceptions", fromlist=["RuleEvaluationConditionMet"])
    rule = make_rule()
    out = []
    for s in range(last + 2):
        try:
            mod.invoke_rule(rule, start_step=s, end_step=s + 1, raise_eval_cond=True)
            out.append("ok")
        except exc.RuleEvaluationConditionMet as e:
            assert e.step == s
            out.append("fired")
        except Exception as e:
            out.append(type(e).__name__)
    return out


def open_trial(pkg, path):
    return __import__(f"{pkg}.trials", fromlist=["create_trial"]).create_trial(path)


def test_seed_rule_runs_unchanged_and_agrees(trials):
    rs = load(SEED_RULE, "smdebug_rs")["VanishingGradientRule"]
    py = load(SEED_RULE_FOR_SMDEBUG, "smdebug")["VanishingGradientRule"]
    got_rs = verdicts("smdebug_rs", lambda: rs(open_trial("smdebug_rs", trials["steps"]), "2.5"), 7)
    got_py = verdicts("smdebug", lambda: py(open_trial("smdebug", trials["steps"]), "2.5"), 7)
    assert got_rs == got_py
    # |gradient/a| has mean = step (pattern "step"): fires at 0, 1, 2; step 8 does not exist.
    assert got_rs[:8] == ["fired"] * 3 + ["ok"] * 5, got_rs
    assert got_rs[8:] == ["NoMoreData"], got_rs


def test_seed_rule_verbatim_fails_on_the_original(trials):
    """Why SEED_RULE_FOR_SMDEBUG exists: the documented example does not run on smdebug."""
    py = load(SEED_RULE, "smdebug")["VanishingGradientRule"]
    with pytest.raises(TypeError):
        py(open_trial("smdebug", trials["steps"]), "2.5")


def test_multi_trial_rule_agrees(trials):
    got = {}
    for pkg in ("smdebug", "smdebug_rs"):
        cls = load(MULTI_TRIAL_RULE, pkg)["DriftRule"]
        got[pkg] = verdicts(
            pkg,
            lambda: cls(open_trial(pkg, trials["steps"]), open_trial(pkg, trials["noise"]), "4.0"),
            7,
        )
    assert got["smdebug"] == got["smdebug_rs"]
    assert "fired" in got["smdebug_rs"] and "ok" in got["smdebug_rs"], got


def test_invoke_rule_to_the_end_raises_no_more_data(trials):
    """Without end_step both invokers run to the end of training and raise NoMoreData."""
    for pkg, source in (("smdebug", SEED_RULE_FOR_SMDEBUG), ("smdebug_rs", SEED_RULE)):
        cls = load(source, pkg)["VanishingGradientRule"]
        rules = __import__(f"{pkg}.rules", fromlist=["invoke_rule"])
        exc = __import__(f"{pkg}.exceptions", fromlist=["NoMoreData"])
        with pytest.raises(exc.NoMoreData):
            rules.invoke_rule(cls(open_trial(pkg, trials["steps"]), "2.5"))


def test_builtin_vanishing_gradient_agrees_with_the_seed_rule(trials):
    from smdebug_rs.rules import VanishingGradient

    tr = open_trial("smdebug_rs", trials["steps"])
    got = verdicts("smdebug_rs", lambda: VanishingGradient(tr, threshold=2.5), 7)
    assert got[:8] == ["fired"] * 3 + ["ok"] * 5, got
    rule = VanishingGradient(tr, threshold="2.5")
    with pytest.raises(smdebug_rs.exceptions.NoMoreData):
        smdebug_rs.rules.invoke_rule(rule)
    assert [f["step"] for f in rule.firings] == [0, 1, 2]
    assert all(f["tensor"] == "gradient/a" for f in rule.firings)


def test_builtin_rules_take_the_original_parameter_names(trials):
    from smdebug_rs import rules

    tr = open_trial("smdebug_rs", trials["steps"])
    assert len(rules.BUILTIN_RULES) == 27
    for name in rules.BUILTIN_RULES:
        assert issubclass(getattr(rules, name), rules.Rule)
    with pytest.raises(TypeError, match="thresold"):
        rules.VanishingGradient(tr, thresold=1)
    with pytest.raises(smdebug_rs.exceptions.SMDebugValueError):
        rules.VanishingGradient(tr, threshold="not a number")
    other = open_trial("smdebug_rs", trials["noise"])
    r = rules.SimilarAcrossRuns(tr, other_trials=[other], collection_names="gradients")
    with pytest.raises(smdebug_rs.exceptions.RuleEvaluationConditionMet) as e:
        rules.invoke_rule(r, raise_eval_cond=True)
    assert e.value.step == 0 and e.value.rule_name == "SimilarAcrossRuns"


def test_builtin_rules_declared_for_type_checkers_are_the_native_ones():
    """The built-in rule classes are made at import from the native rule table; the block
    of ``rules/builtin_rules.py`` that declares them for type checkers names the same
    classes with the same parameters, in the same order."""
    import ast
    import inspect

    from smdebug_rs import _native
    from smdebug_rs.rules import builtin_rules

    tree = ast.parse(inspect.getsource(builtin_rules))
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for cls in node.body:
                if isinstance(cls, ast.ClassDef):
                    init = next(f for f in cls.body if isinstance(f, ast.FunctionDef))
                    declared[cls.name] = [a.arg for a in init.args.args[2:]]
    native = {name: [p[0] for p in params] + ["action_str"]
              for name, _doc, params in _native.builtin_rule_specs()}
    assert declared == native
    assert sorted(declared) == sorted(builtin_rules.BUILTIN_RULES)
