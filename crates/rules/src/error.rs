//! The crate's error type.

use crate::firing::Firing;
use smdebug_exceptions::AnalysisError;
use smdebug_trial::TrialError;

/// Everything building, invoking or acting on a rule can fail with.
///
/// The analysis conditions of smdebug (`StepUnavailable`, `TensorUnavailableForStep`,
/// `NoMoreData`, …) are [`RuleError::Analysis`] whether they came straight from a rule or
/// through the trial reader, so [`RuleError::analysis`] is the one place the invoker looks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// An smdebug analysis condition.
    #[error(transparent)]
    Analysis(AnalysisError),
    /// The rule's condition was met (`RuleEvaluationConditionMet`); `firing` says where and
    /// why. Returned by [`crate::invoke`] and, with `raise_eval_cond`, by
    /// [`crate::invoke_rule`].
    #[error("{condition}")]
    ConditionMet {
        /// Always [`AnalysisError::RuleEvaluationConditionMet`].
        condition: AnalysisError,
        /// The details of the firing.
        firing: Box<Firing>,
    },
    /// Reading the trial failed for a reason other than an analysis condition.
    #[error(transparent)]
    Trial(TrialError),
    /// No built-in rule has this name.
    #[error("unknown rule {name:?} (known rules: {known})")]
    UnknownRule {
        /// The name asked for.
        name: String,
        /// The known rule names, comma-separated.
        known: String,
    },
    /// A parameter the rule does not take.
    #[error("rule {rule}: unknown parameter {parameter:?} (parameters: {known})")]
    UnknownParameter {
        /// The rule.
        rule: String,
        /// The parameter given.
        parameter: String,
        /// The rule's parameters, comma-separated.
        known: String,
    },
    /// A parameter value that does not parse.
    #[error("rule {rule}: parameter {parameter} = {value:?} is not {expected}")]
    InvalidValue {
        /// The rule.
        rule: String,
        /// The parameter.
        parameter: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A required parameter was not given.
    #[error("rule {rule}: parameter {parameter} is required")]
    MissingParameter {
        /// The rule.
        rule: String,
        /// The parameter.
        parameter: String,
    },
    /// A configuration that is well-formed parameter by parameter but not as a whole
    /// (for example neither `collection_names` nor `tensor_regex` where one is required).
    #[error("rule {rule}: {message}")]
    InvalidConfiguration {
        /// The rule.
        rule: String,
        /// What is wrong.
        message: String,
    },
    /// A rule that compares classes (ClassImbalance, Confusion) met a labels or predictions
    /// tensor whose values cannot be classes: regression outputs, raw margins, NaN. The rule
    /// says so instead of judging numbers that mean something else.
    #[error("rule {rule} at step {step}: tensor {tensor} cannot be read as classes: {reason}")]
    NotClasses {
        /// The rule.
        rule: String,
        /// The global step.
        step: i64,
        /// The tensor.
        tensor: String,
        /// Which values, and what classes would have to look like.
        reason: String,
    },
    /// A rule given as `Name[:key=value,…]` that does not have that form.
    #[error("rule {argument:?}: {message}")]
    InvalidRuleArgument {
        /// The argument as given.
        argument: String,
        /// What is wrong.
        message: String,
    },
    /// A SageMaker rule configuration document that cannot be used.
    #[error("rule configuration: {message}")]
    InvalidRuleConfiguration {
        /// What is wrong.
        message: String,
    },
    /// An action failed when the rule fired.
    #[error("action {action} of rule {rule}: {message}")]
    Action {
        /// The rule.
        rule: String,
        /// The action's name.
        action: String,
        /// What failed.
        message: String,
    },
}

/// The crate's result type.
pub type Result<T, E = RuleError> = std::result::Result<T, E>;

impl From<TrialError> for RuleError {
    fn from(e: TrialError) -> Self {
        match e {
            TrialError::Analysis(a) => RuleError::Analysis(a),
            other => RuleError::Trial(other),
        }
    }
}

impl From<AnalysisError> for RuleError {
    fn from(e: AnalysisError) -> Self {
        RuleError::Analysis(e)
    }
}

impl RuleError {
    /// The analysis condition, if this is one (including `RuleEvaluationConditionMet`).
    pub fn analysis(&self) -> Option<&AnalysisError> {
        match self {
            RuleError::Analysis(a) => Some(a),
            RuleError::ConditionMet { condition, .. } => Some(condition),
            _ => None,
        }
    }

    /// The firing, for [`RuleError::ConditionMet`].
    pub fn firing(&self) -> Option<&Firing> {
        match self {
            RuleError::ConditionMet { firing, .. } => Some(firing),
            _ => None,
        }
    }

    /// Whether this is `TensorUnavailableForStep` (a tensor without a usable value at the
    /// step), which rules treat as "skip this tensor".
    pub(crate) fn is_tensor_unavailable_for_step(&self) -> bool {
        matches!(
            self.analysis(),
            Some(AnalysisError::TensorUnavailableForStep { .. })
        )
    }

    /// Whether the tensor has no value at the step or the step itself is not there: what
    /// the value helpers turn into `None`.
    pub(crate) fn is_absent_at_step(&self) -> bool {
        self.is_tensor_unavailable_for_step()
            || matches!(self.analysis(), Some(AnalysisError::StepUnavailable { .. }))
    }
}
