"""The built-in rules (``VanishingGradient``, ``ExplodingTensor``, ``LossNotDecreasing``, …):
one :class:`~smdebug_rs.rules.rule.Rule` subclass per rule of the native rule table, taking
the original's parameter names and evaluated entirely in Rust with the GIL released.
``BUILTIN_RULES`` lists their names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, cast

from smdebug_rs import _native
from smdebug_rs.rules.rule import Rule

if TYPE_CHECKING:
    from smdebug_rs.trials.trial import Trial

__all__ = ["BUILTIN_RULES"]

# A parameter of the native rule table: name, kind, default, required, doc.
_Param = Tuple[str, str, Optional[str], bool, str]


def _param_text(value: object, trials: List[_native.Trial]) -> str:
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
    _params: Tuple[_Param, ...] = ()
    _aliases: Dict[str, str] = {}

    def __init__(self, base_trial: Trial, *args: Any, action_str: str = "",
                 **kwargs: Any) -> None:
        names = [p[0] for p in self._params]
        if len(args) > len(names):
            raise TypeError(f"{self._spec_name} takes at most {len(names)} parameters")
        given: Dict[str, Any] = dict(zip(names, args))
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
        trials: List[_native.Trial] = []
        params = {k: _param_text(v, trials) for k, v in given.items() if v is not None}
        if action_str:
            params["action_json"] = action_str
        # The trials given are the users' `Trial` objects (or native ones).
        others = cast("List[Trial]", trials) or None
        super().__init__(base_trial, action_str, other_trials=others)
        self.rule_name = self._spec_name
        self.firings: List[Dict[str, Any]] = []
        self.last_evaluation: Dict[str, Any] = {}
        self._native = _native.BuiltinRule(self._spec_name, base_trial, params, trials)

    def invoke_at_step(self, step: int) -> bool:
        raise NotImplementedError("built-in rules are evaluated by invoke()")

    def invoke(self, step: int) -> None:
        self._native.invoke(step)

    def _invoke_rule(self, start_step: int, end_step: Optional[int],
                     raise_eval_cond: bool) -> None:
        result = self._native.invoke_rule(start_step, end_step, raise_eval_cond)
        self.firings.extend(result["firings"])
        self.last_evaluation = result
        if result["end"] == "end_of_training":
            raise result["no_more_data"]


def _builtin_class(name: str, doc: str, params: Sequence[_Param]) -> type:
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


BUILTIN_RULES: List[str] = []
for _name, _doc, _params in _native.builtin_rule_specs():
    globals()[_name] = _builtin_class(_name, _doc, _params)
    BUILTIN_RULES.append(_name)
    __all__.append(_name)
del _name, _doc, _params

if TYPE_CHECKING:
    # The classes made above from the native rule table, as type checkers see them, with
    # their parameters (test_rules.py checks that the two agree).
    __all__ += [
        "VanishingGradient",
        "ExplodingTensor",
        "SimilarAcrossRuns",
        "WeightUpdateRatio",
        "AllZero",
        "UnchangedTensor",
        "LossNotDecreasing",
        "Confusion",
        "ClassImbalance",
        "Overfit",
        "Overtraining",
        "StalledTrainingRule",
        "TensorVariance",
        "DeadRelu",
        "SaturatedActivation",
        "PoorWeightInitialization",
        "CheckInputImages",
        "NLPSequenceRatio",
        "FeatureImportanceOverweight",
        "TreeDepth",
        "LossSpike",
        "GradientNormSpike",
        "AttentionLogitGrowth",
        "OutputLogitDivergence",
        "UpdateRatio",
        "AdamEpsilon",
        "ActivationOutlier",
    ]

    class VanishingGradient(_BuiltinRule):
        """gradients whose mean absolute value is tiny."""

        def __init__(
            self,
            base_trial: Trial,
            threshold: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class ExplodingTensor(_BuiltinRule):
        """tensors with NaN or infinite values."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            only_nan: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class SimilarAcrossRuns(_BuiltinRule):
        """tensors that differ from another run at the same step."""

        def __init__(
            self,
            base_trial: Trial,
            other_trials: Any = ...,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class WeightUpdateRatio(_BuiltinRule):
        """weight updates too large or too small relative to the weights."""

        def __init__(
            self,
            base_trial: Trial,
            num_steps: Any = ...,
            large_threshold: Any = ...,
            small_threshold: Any = ...,
            epsilon: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class AllZero(_BuiltinRule):
        """tensors whose values are (almost) all zero."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            threshold: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class UnchangedTensor(_BuiltinRule):
        """tensors that stop changing across steps."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            num_steps: Any = ...,
            rtol: Any = ...,
            atol: Any = ...,
            equal_nan: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class LossNotDecreasing(_BuiltinRule):
        """a loss that does not decrease at the expected rate."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            use_losses_collection: Any = ...,
            num_steps: Any = ...,
            diff_percent: Any = ...,
            increase_threshold_percent: Any = ...,
            mode: Any = ...,
            legacy_diff_semantics: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class Confusion(_BuiltinRule):
        """a confusion matrix far from diagonal."""

        def __init__(
            self,
            base_trial: Trial,
            category_no: Any = ...,
            labels: Any = ...,
            predictions: Any = ...,
            labels_collection: Any = ...,
            predictions_collection: Any = ...,
            min_diag: Any = ...,
            max_off_diag: Any = ...,
            threshold_probability: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class ClassImbalance(_BuiltinRule):
        """imbalanced classes or badly predicted classes."""

        def __init__(
            self,
            base_trial: Trial,
            threshold_imbalance: Any = ...,
            threshold_misprediction: Any = ...,
            samples: Any = ...,
            argmax: Any = ...,
            labels_regex: Any = ...,
            predictions_regex: Any = ...,
            threshold_probability: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class Overfit(_BuiltinRule):
        """validation loss pulling away from training loss."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            start_step: Any = ...,
            patience: Any = ...,
            ratio_threshold: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class Overtraining(_BuiltinRule):
        """training or validation loss no longer improving."""

        def __init__(
            self,
            base_trial: Trial,
            patience_train: Any = ...,
            patience_validation: Any = ...,
            delta: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class StalledTrainingRule(_BuiltinRule):
        """no new step saved for too long (wall clock)."""

        def __init__(
            self,
            base_trial: Trial,
            threshold: Any = ...,
            stop_training_on_fire: Any = ...,
            training_job_name_prefix: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class TensorVariance(_BuiltinRule):
        """tensor variance above or below a bound."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            max_threshold: Any = ...,
            min_threshold: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class DeadRelu(_BuiltinRule):
        """layers whose ReLU units are mostly inactive."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            threshold_inactivity: Any = ...,
            threshold_layer: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class SaturatedActivation(_BuiltinRule):
        """tanh/sigmoid layers mostly saturated."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            threshold_tanh_min: Any = ...,
            threshold_tanh_max: Any = ...,
            threshold_sigmoid_min: Any = ...,
            threshold_sigmoid_max: Any = ...,
            threshold_inactivity: Any = ...,
            threshold_layer: Any = ...,
            threshold_tanh: Any = ...,
            threshold_sigmoid: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class PoorWeightInitialization(_BuiltinRule):
        """signs of poor initialisation in the first steps."""

        def __init__(
            self,
            base_trial: Trial,
            activation_inputs_regex: Any = ...,
            threshold: Any = ...,
            distribution_range: Any = ...,
            patience: Any = ...,
            steps: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class CheckInputImages(_BuiltinRule):
        """input images that are not normalised."""

        def __init__(
            self,
            base_trial: Trial,
            threshold_mean: Any = ...,
            threshold_samples: Any = ...,
            regex: Any = ...,
            channel: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class NLPSequenceRatio(_BuiltinRule):
        """too many padding/unknown tokens in input sequences."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            token_values: Any = ...,
            token_thresholds_percent: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class FeatureImportanceOverweight(_BuiltinRule):
        """a few features carrying most of the importance (XGBoost)."""

        def __init__(
            self,
            base_trial: Trial,
            threshold: Any = ...,
            nfeatures: Any = ...,
            tensor_regex: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class TreeDepth(_BuiltinRule):
        """trees deeper than a bound (XGBoost)."""

        def __init__(
            self,
            base_trial: Trial,
            depth: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class LossSpike(_BuiltinRule):
        """a loss above its rolling mean + k·σ, or r × its rolling mean for too long."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            window_size: Any = ...,
            threshold_std: Any = ...,
            outlier_multiplier: Any = ...,
            outlier_window: Any = ...,
            patience: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class GradientNormSpike(_BuiltinRule):
        """a global gradient norm above its rolling mean + k·σ."""

        def __init__(
            self,
            base_trial: Trial,
            window_size: Any = ...,
            threshold_std: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class AttentionLogitGrowth(_BuiltinRule):
        """attention logits growing past a bound, or attention entropy collapsing."""

        def __init__(
            self,
            base_trial: Trial,
            logit_regex: Any = ...,
            max_logit: Any = ...,
            entropy_regex: Any = ...,
            entropy_collapse_ratio: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class OutputLogitDivergence(_BuiltinRule):
        """the output logits' log-partition drifting from 0."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            threshold: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class UpdateRatio(_BuiltinRule):
        """per-layer update ratios ‖ΔW‖/‖W‖ outside a band."""

        def __init__(
            self,
            base_trial: Trial,
            min_ratio: Any = ...,
            max_ratio: Any = ...,
            start_step: Any = ...,
            min_ndim: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class AdamEpsilon(_BuiltinRule):
        """layers whose Adam second moment is mostly below ε."""

        def __init__(
            self,
            base_trial: Trial,
            tensor_regex: Any = ...,
            eps: Any = ...,
            threshold_percent: Any = ...,
            action_str: str = ...,
        ) -> None: ...

    class ActivationOutlier(_BuiltinRule):
        """a layer's largest activation jumping over its own rolling baseline."""

        def __init__(
            self,
            base_trial: Trial,
            collection_names: Any = ...,
            tensor_regex: Any = ...,
            window_size: Any = ...,
            threshold_std: Any = ...,
            action_str: str = ...,
        ) -> None: ...
