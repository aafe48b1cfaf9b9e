"""The exceptions of smdebug (``smdebug.exceptions``): the same classes, names, hierarchy,
constructor arguments and attributes, raised where the original raises them.

Errors coming from the native reader arrive through :func:`_from_native`, which picks the
class by name and gives it the attributes the original sets (``step``, ``mode``, ``tname``…).
"""

import json
import re

from smdebug_rs.modes import ModeKeys as modes

__all__ = [
    "SMDebugError",
    "SMDebugCustomerError",
    "SMDebugTypeError",
    "SMDebugRuntimeError",
    "SMDebugNotImplementedError",
    "SMDebugValueError",
    "InvalidCollectionConfiguration",
    "StepNotYetAvailable",
    "MissingCollectionFiles",
    "IndexReaderException",
    "StepUnavailable",
    "TensorUnavailableForStep",
    "ShapeUnavailableForStep",
    "TensorUnavailable",
    "InvalidWorker",
    "NoMoreProfilerData",
    "NoMoreData",
    "RuleEvaluationConditionMet",
    "InsufficientInformationForRuleInvocation",
]


class SMDebugError(Exception):
    """Base class of every smdebug exception."""


class SMDebugCustomerError(SMDebugError):
    """An error in how smdebug was used."""


class SMDebugTypeError(SMDebugError, TypeError):
    """A wrong type."""


class SMDebugRuntimeError(SMDebugError, RuntimeError):
    """A failure at run time (also: a damaged record, an internal error of smdebug_rs)."""


class SMDebugNotImplementedError(SMDebugError, NotImplementedError):
    """A feature smdebug_rs does not offer."""


class SMDebugValueError(SMDebugError, ValueError):
    """A wrong value (an unknown reduction name, a bad rule parameter…)."""


class InvalidCollectionConfiguration(SMDebugError):
    """A collection with neither tensor names nor regexes."""

    def __init__(self, c_name):
        self.c_name = c_name

    def __str__(self):
        return (
            f"Collection {self.c_name} has not been configured. "
            "Please fill in tensor_name or include_regex"
        )


class StepNotYetAvailable(SMDebugError):
    """The step has not been written yet, but may still be."""

    def __init__(self, step, mode):
        self.step = step
        self.mode = mode

    def __str__(self):
        return f"Step {self.step} of mode {self.mode.name} not yet available"


class MissingCollectionFiles(SMDebugError):
    """The job ended before every worker's collections file appeared."""

    def __init__(self):
        pass

    def __str__(self):
        return "Training job has ended. All the collection files could not be loaded"


class IndexReaderException(SMDebugError):
    """An index file that cannot be used."""

    def __init__(self, message):
        self.message = message

    def __str__(self):
        return self.message


class StepUnavailable(SMDebugError):
    """The step will never be available: skipped, or past the end of a finished job."""

    def __init__(self, step, mode):
        self.step = step
        self.mode = mode

    def __str__(self):
        return f"Step {self.step} of mode {self.mode.name} is not available as it was not saved"


class TensorUnavailableForStep(SMDebugError):
    """The step is known but the tensor has no value (or reduction) there."""

    def __init__(self, tname, step, mode=modes.GLOBAL, has_reductions=False):
        self.step = step
        self.mode = mode
        self.tname = tname
        self.has_reductions = has_reductions

    def __str__(self):
        msg = (
            f"Value for tensor {self.tname} is not available for step {self.step} "
            f"with mode {self.mode.name} as it was not saved."
        )
        if self.has_reductions:
            msg += (
                "This tensor has reductions saved for this step. "
                "You might want to query for the reductions."
            )
        return msg


class ShapeUnavailableForStep(SMDebugError):
    """Neither a shape nor a value was saved for the tensor at the step."""

    def __init__(self, tname, step, mode=modes.GLOBAL):
        self.step = step
        self.mode = mode
        self.tname = tname

    def __str__(self):
        return (
            f"Shape for tensor {self.tname} is not available for step {self.step} "
            f"with mode {self.mode.name} as it was not saved."
        )


class TensorUnavailable(SMDebugError):
    """No tensor of this name was saved."""

    def __init__(self, tname):
        self.tname = tname

    def __str__(self):
        return f"Tensor {self.tname} was not saved."


class InvalidWorker(SMDebugError):
    """A worker that did not write the step."""

    def __init__(self, worker):
        self.worker = worker

    def __str__(self):
        return f"Invalid Worker: {self.worker}"


class NoMoreProfilerData(SMDebugError):
    """The profiler trial ended (kept for the hierarchy; smdebug_rs reads no profiler data)."""

    def __init__(self, timestamp):
        self.timestamp = timestamp
        self.msg = f"Looking for timestamp {timestamp} and reached end of training."

    def __str__(self):
        return self.msg


class NoMoreData(SMDebugError):
    """Waiting for a step past the last one of a job that has ended."""

    def __init__(self, step, mode, last_step):
        self.step = step
        self.mode = mode
        self.last_step = last_step
        self.msg = (
            f"Looking for step {step} of mode {mode.name} and reached "
            f"end of training. Max step available is {last_step}"
        )

    def __str__(self):
        return self.msg


class RuleEvaluationConditionMet(SMDebugError):
    """A rule's condition was met at a step."""

    def __init__(self, rule_name, step, end_of_rule=False):
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule

    def __str__(self):
        return (
            f"Evaluation of the rule {self.rule_name} at step {self.step} "
            "resulted in the condition being met"
        )


class InsufficientInformationForRuleInvocation(SMDebugError):
    """A rule cannot be evaluated with the data at hand."""

    def __init__(self, rule_name, message):
        self.rule_name = rule_name
        self.message = message

    def __str__(self):
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"


def _builtin_class(name):
    if name == "JSONDecodeError":
        return lambda message: json.JSONDecodeError(message, "", 0)
    if name == "error":
        return re.error
    if name == "LinAlgError":
        import numpy

        return numpy.linalg.LinAlgError
    if name == "UFuncTypeError":
        # numpy's TypeError for a ufunc without a loop for the dtype (strings).
        try:
            from numpy._core._exceptions import UFuncTypeError
        except ImportError:
            from numpy.core._exceptions import UFuncTypeError
        return lambda message: _ufunc_error(UFuncTypeError, message)
    cls = __builtins__.get(name) if isinstance(__builtins__, dict) else getattr(
        __builtins__, name, None
    )
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls
    return None


def _ufunc_error(cls, message):
    # UFuncTypeError's constructor wants the ufunc: a subclass of the same name carries our
    # message instead (``except TypeError`` and the class name still match).
    sub = type(cls.__name__, (cls,), {"__str__": lambda self: message,
                                       "__module__": cls.__module__})
    e = sub.__new__(sub)
    Exception.__init__(e, message)
    return e


def _from_native(name, message, fields):
    """The exception for a native error: class ``name``, our message, the class's attributes.

    Internal: called by the native module.
    """
    mode = modes[fields["mode"]] if "mode" in fields else None
    f = fields
    if name == "TensorUnavailableForStep":
        e = TensorUnavailableForStep(f["tname"], f["step"], mode, f["has_reductions"])
    elif name == "ShapeUnavailableForStep":
        e = ShapeUnavailableForStep(f["tname"], f["step"], mode)
    elif name in ("StepUnavailable", "StepNotYetAvailable"):
        e = globals()[name](f["step"], mode)
    elif name == "NoMoreData":
        e = NoMoreData(f["step"], mode, f["last_step"])
    elif name == "TensorUnavailable":
        e = TensorUnavailable(f["tname"])
    elif name == "InvalidWorker":
        e = InvalidWorker(f["worker"])
    elif name == "InvalidCollectionConfiguration":
        e = InvalidCollectionConfiguration(f["c_name"])
    elif name == "MissingCollectionFiles":
        e = MissingCollectionFiles()
    elif name == "IndexReaderException":
        e = IndexReaderException(f.get("message", message))
    elif name == "RuleEvaluationConditionMet":
        e = RuleEvaluationConditionMet(f["rule_name"], f["step"], f["end_of_rule"])
    elif name == "InsufficientInformationForRuleInvocation":
        e = InsufficientInformationForRuleInvocation(f["rule_name"], f["message"])
    elif name in __all__ and name.startswith("SMDebug"):
        e = globals()[name](message)
    else:
        cls = _builtin_class(name) or SMDebugRuntimeError
        e = cls(message)
    # Where and why a rule fired (smdebug_rs only): the tensor and the numbers that decided.
    for k in ("tensor", "detail"):
        if k in f:
            setattr(e, k, f[k])
    return e
