"""The exceptions of smdebug (``smdebug.exceptions``): the same classes, names, hierarchy,
constructor arguments and attributes, raised where the original raises them.

This module is where the classes are defined. ``smdebug_rs._bind`` hands the module to the
native module once, which finds here every class it raises (``ExceptionClass`` in
``crates/python/src/errors.rs``; a missing one fails the import) and, for the analysis
conditions, calls it with the constructor arguments
(``smdebug_exceptions::AnalysisError::python_args``). The exceptions of other modules that
the original lets through are here too, under private names: ``json.JSONDecodeError`` and
numpy's ``UFuncTypeError`` as functions making one from a message.
"""

from __future__ import annotations

import json
import re
from typing import List, cast

import numpy

from smdebug_rs.modes import ModeKeys as modes

try:
    from numpy._core._exceptions import UFuncTypeError as _UFuncTypeError
except ImportError:  # numpy < 2
    from numpy.core._exceptions import (  # type: ignore[no-redef, import-not-found, unused-ignore]
        UFuncTypeError as _UFuncTypeError,
    )


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

    def __init__(self, c_name: str) -> None:
        self.c_name = c_name

    def __str__(self) -> str:
        return (
            f"Collection {self.c_name} has not been configured. "
            "Please fill in tensor_name or include_regex"
        )


class StepNotYetAvailable(SMDebugError):
    """The step has not been written yet, but may still be."""

    def __init__(self, step: int, mode: modes) -> None:
        self.step = step
        self.mode = mode

    def __str__(self) -> str:
        return f"Step {self.step} of mode {self.mode.name} not yet available"


class MissingCollectionFiles(SMDebugError):
    """The job ended before every worker's collections file appeared."""

    def __init__(self) -> None:
        pass

    def __str__(self) -> str:
        return "Training job has ended. All the collection files could not be loaded"


class IndexReaderException(SMDebugError):
    """An index file that cannot be used."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


class StepUnavailable(SMDebugError):
    """The step will never be available: skipped, or past the end of a finished job."""

    def __init__(self, step: int, mode: modes) -> None:
        self.step = step
        self.mode = mode

    def __str__(self) -> str:
        return f"Step {self.step} of mode {self.mode.name} is not available as it was not saved"


class TensorUnavailableForStep(SMDebugError):
    """The step is known but the tensor has no value (or reduction) there."""

    def __init__(self, tname: str, step: int, mode: modes = modes.GLOBAL,
                 has_reductions: bool = False) -> None:
        self.step = step
        self.mode = mode
        self.tname = tname
        self.has_reductions = has_reductions

    def __str__(self) -> str:
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

    def __init__(self, tname: str, step: int, mode: modes = modes.GLOBAL) -> None:
        self.step = step
        self.mode = mode
        self.tname = tname

    def __str__(self) -> str:
        return (
            f"Shape for tensor {self.tname} is not available for step {self.step} "
            f"with mode {self.mode.name} as it was not saved."
        )


class TensorUnavailable(SMDebugError):
    """No tensor of this name was saved."""

    def __init__(self, tname: str) -> None:
        self.tname = tname

    def __str__(self) -> str:
        return f"Tensor {self.tname} was not saved."


class InvalidWorker(SMDebugError):
    """A worker that did not write the step."""

    def __init__(self, worker: str) -> None:
        self.worker = worker

    def __str__(self) -> str:
        return f"Invalid Worker: {self.worker}"


class NoMoreProfilerData(SMDebugError):
    """The profiler trial ended (kept for the hierarchy; smdebug_rs reads no profiler data)."""

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp
        self.msg = f"Looking for timestamp {timestamp} and reached end of training."

    def __str__(self) -> str:
        return self.msg


class NoMoreData(SMDebugError):
    """Waiting for a step past the last one of a job that has ended."""

    def __init__(self, step: int, mode: modes, last_step: int) -> None:
        self.step = step
        self.mode = mode
        self.last_step = last_step
        self.msg = (
            f"Looking for step {step} of mode {mode.name} and reached "
            f"end of training. Max step available is {last_step}"
        )

    def __str__(self) -> str:
        return self.msg


class RuleEvaluationConditionMet(SMDebugError):
    """A rule's condition was met at a step."""

    def __init__(self, rule_name: str, step: int, end_of_rule: bool = False) -> None:
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule

    def __str__(self) -> str:
        return (
            f"Evaluation of the rule {self.rule_name} at step {self.step} "
            "resulted in the condition being met"
        )


class InsufficientInformationForRuleInvocation(SMDebugError):
    """A rule cannot be evaluated with the data at hand."""

    def __init__(self, rule_name: str, message: str) -> None:
        self.rule_name = rule_name
        self.message = message

    def __str__(self) -> str:
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"


def _json_decode_error(message: str) -> json.JSONDecodeError:
    # JSONDecodeError's constructor wants the document and the position too.
    return json.JSONDecodeError(message, "", 0)


def _ufunc_error(message: str) -> TypeError:
    # numpy's TypeError for a ufunc without a loop for the dtype (strings). Its constructor
    # wants the ufunc: a subclass of the same name carries our message instead (``except
    # TypeError`` and the class name still match).
    cls = _UFuncTypeError
    sub = type(cls.__name__, (cls,), {"__str__": lambda self: message,
                                       "__module__": cls.__module__})
    e = cast(TypeError, Exception.__new__(sub))
    Exception.__init__(e, message)
    return e


_regex_error = re.error
_linalg_error = numpy.linalg.LinAlgError


def _is_exception_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, Exception)


# The classes defined above, in their order.
__all__: List[str] = [n for n, c in list(globals().items())
           if _is_exception_class(c) and issubclass(c, SMDebugError)]
