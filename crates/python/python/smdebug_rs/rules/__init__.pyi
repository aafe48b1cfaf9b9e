"""Type stubs of smdebug_rs.rules: the re-exports of its modules."""

from smdebug_rs.rules.builtin_rules import BUILTIN_RULES as BUILTIN_RULES
from smdebug_rs.rules.builtin_rules import VanishingGradient as VanishingGradient
from smdebug_rs.rules.builtin_rules import ExplodingTensor as ExplodingTensor
from smdebug_rs.rules.builtin_rules import SimilarAcrossRuns as SimilarAcrossRuns
from smdebug_rs.rules.builtin_rules import WeightUpdateRatio as WeightUpdateRatio
from smdebug_rs.rules.builtin_rules import AllZero as AllZero
from smdebug_rs.rules.builtin_rules import UnchangedTensor as UnchangedTensor
from smdebug_rs.rules.builtin_rules import LossNotDecreasing as LossNotDecreasing
from smdebug_rs.rules.builtin_rules import Confusion as Confusion
from smdebug_rs.rules.builtin_rules import ClassImbalance as ClassImbalance
from smdebug_rs.rules.builtin_rules import Overfit as Overfit
from smdebug_rs.rules.builtin_rules import Overtraining as Overtraining
from smdebug_rs.rules.builtin_rules import StalledTrainingRule as StalledTrainingRule
from smdebug_rs.rules.builtin_rules import TensorVariance as TensorVariance
from smdebug_rs.rules.builtin_rules import DeadRelu as DeadRelu
from smdebug_rs.rules.builtin_rules import SaturatedActivation as SaturatedActivation
from smdebug_rs.rules.builtin_rules import PoorWeightInitialization as PoorWeightInitialization
from smdebug_rs.rules.builtin_rules import CheckInputImages as CheckInputImages
from smdebug_rs.rules.builtin_rules import NLPSequenceRatio as NLPSequenceRatio
from smdebug_rs.rules.builtin_rules import FeatureImportanceOverweight as FeatureImportanceOverweight
from smdebug_rs.rules.builtin_rules import TreeDepth as TreeDepth
from smdebug_rs.rules.req_tensors import RequiredTensors as RequiredTensors
from smdebug_rs.rules.req_tensors import RequiredTensorsForTrial as RequiredTensorsForTrial
from smdebug_rs.rules.rule import Rule as Rule
from smdebug_rs.rules.rule_invoker import invoke_rule as invoke_rule
