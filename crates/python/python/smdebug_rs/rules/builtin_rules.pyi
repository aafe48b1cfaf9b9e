"""Type stubs of smdebug_rs.rules.builtin_rules (the classes are made from the native
rule table; these stubs list them with their parameters)."""

from typing import Any, Dict, List

from smdebug_rs.rules.rule import Rule
from smdebug_rs.trials.trial import Trial

BUILTIN_RULES: List[str]

class _BuiltinRule(Rule):
    firings: List[Dict[str, Any]]
    last_evaluation: Dict[str, Any]

class VanishingGradient(_BuiltinRule):
    """gradients whose mean absolute value is tiny."""
    def __init__(self, base_trial: Trial, threshold: Any = ..., action_str: str = ...) -> None: ...

class ExplodingTensor(_BuiltinRule):
    """tensors with NaN or infinite values."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., only_nan: Any = ..., action_str: str = ...) -> None: ...

class SimilarAcrossRuns(_BuiltinRule):
    """tensors that differ from another run at the same step."""
    def __init__(self, base_trial: Trial, other_trials: Any = ..., collection_names: Any = ..., tensor_regex: Any = ..., action_str: str = ...) -> None: ...

class WeightUpdateRatio(_BuiltinRule):
    """weight updates too large or too small relative to the weights."""
    def __init__(self, base_trial: Trial, num_steps: Any = ..., large_threshold: Any = ..., small_threshold: Any = ..., epsilon: Any = ..., action_str: str = ...) -> None: ...

class AllZero(_BuiltinRule):
    """tensors whose values are (almost) all zero."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., threshold: Any = ..., action_str: str = ...) -> None: ...

class UnchangedTensor(_BuiltinRule):
    """tensors that stop changing across steps."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., num_steps: Any = ..., rtol: Any = ..., atol: Any = ..., equal_nan: Any = ..., action_str: str = ...) -> None: ...

class LossNotDecreasing(_BuiltinRule):
    """a loss that does not decrease at the expected rate."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., use_losses_collection: Any = ..., num_steps: Any = ..., diff_percent: Any = ..., increase_threshold_percent: Any = ..., mode: Any = ..., legacy_diff_semantics: Any = ..., action_str: str = ...) -> None: ...

class Confusion(_BuiltinRule):
    """a confusion matrix far from diagonal."""
    def __init__(self, base_trial: Trial, category_no: Any = ..., labels: Any = ..., predictions: Any = ..., labels_collection: Any = ..., predictions_collection: Any = ..., min_diag: Any = ..., max_off_diag: Any = ..., threshold_probability: Any = ..., action_str: str = ...) -> None: ...

class ClassImbalance(_BuiltinRule):
    """imbalanced classes or badly predicted classes."""
    def __init__(self, base_trial: Trial, threshold_imbalance: Any = ..., threshold_misprediction: Any = ..., samples: Any = ..., argmax: Any = ..., labels_regex: Any = ..., predictions_regex: Any = ..., threshold_probability: Any = ..., action_str: str = ...) -> None: ...

class Overfit(_BuiltinRule):
    """validation loss pulling away from training loss."""
    def __init__(self, base_trial: Trial, tensor_regex: Any = ..., start_step: Any = ..., patience: Any = ..., ratio_threshold: Any = ..., action_str: str = ...) -> None: ...

class Overtraining(_BuiltinRule):
    """training or validation loss no longer improving."""
    def __init__(self, base_trial: Trial, patience_train: Any = ..., patience_validation: Any = ..., delta: Any = ..., action_str: str = ...) -> None: ...

class StalledTrainingRule(_BuiltinRule):
    """no new step saved for too long (wall clock)."""
    def __init__(self, base_trial: Trial, threshold: Any = ..., stop_training_on_fire: Any = ..., training_job_name_prefix: Any = ..., action_str: str = ...) -> None: ...

class TensorVariance(_BuiltinRule):
    """tensor variance above or below a bound."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., max_threshold: Any = ..., min_threshold: Any = ..., action_str: str = ...) -> None: ...

class DeadRelu(_BuiltinRule):
    """layers whose ReLU units are mostly inactive."""
    def __init__(self, base_trial: Trial, tensor_regex: Any = ..., threshold_inactivity: Any = ..., threshold_layer: Any = ..., action_str: str = ...) -> None: ...

class SaturatedActivation(_BuiltinRule):
    """tanh/sigmoid layers mostly saturated."""
    def __init__(self, base_trial: Trial, collection_names: Any = ..., tensor_regex: Any = ..., threshold_tanh_min: Any = ..., threshold_tanh_max: Any = ..., threshold_sigmoid_min: Any = ..., threshold_sigmoid_max: Any = ..., threshold_inactivity: Any = ..., threshold_layer: Any = ..., threshold_tanh: Any = ..., threshold_sigmoid: Any = ..., action_str: str = ...) -> None: ...

class PoorWeightInitialization(_BuiltinRule):
    """signs of poor initialisation in the first steps."""
    def __init__(self, base_trial: Trial, activation_inputs_regex: Any = ..., threshold: Any = ..., distribution_range: Any = ..., patience: Any = ..., steps: Any = ..., action_str: str = ...) -> None: ...

class CheckInputImages(_BuiltinRule):
    """input images that are not normalised."""
    def __init__(self, base_trial: Trial, threshold_mean: Any = ..., threshold_samples: Any = ..., regex: Any = ..., channel: Any = ..., action_str: str = ...) -> None: ...

class NLPSequenceRatio(_BuiltinRule):
    """too many padding/unknown tokens in input sequences."""
    def __init__(self, base_trial: Trial, tensor_regex: Any = ..., token_values: Any = ..., token_thresholds_percent: Any = ..., action_str: str = ...) -> None: ...

class FeatureImportanceOverweight(_BuiltinRule):
    """a few features carrying most of the importance (XGBoost)."""
    def __init__(self, base_trial: Trial, threshold: Any = ..., nfeatures: Any = ..., tensor_regex: Any = ..., action_str: str = ...) -> None: ...

class TreeDepth(_BuiltinRule):
    """trees deeper than a bound (XGBoost)."""
    def __init__(self, base_trial: Trial, depth: Any = ..., action_str: str = ...) -> None: ...
