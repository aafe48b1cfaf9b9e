"""``smdebug.analysis.utils``: ``no_refresh`` and ``refresh`` context managers."""

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, List, Sequence, TypeVar, Union

if TYPE_CHECKING:
    from smdebug_rs.trials.trial import Trial

_Trials = TypeVar("_Trials", bound=Union["Trial", Sequence["Trial"]])

__all__ = ["no_refresh", "refresh"]


def _each(trials: Union["Trial", Sequence["Trial"]]) -> List["Trial"]:
    if isinstance(trials, (list, tuple)):
        return list(trials)
    return [trials]  # type: ignore[list-item]


@contextmanager
def no_refresh(trials: _Trials) -> Iterator[_Trials]:
    """Switches refreshing off on a trial (or list of trials) inside the block, on after."""
    for t in _each(trials):
        t.dynamic_refresh = False
    try:
        yield trials
    finally:
        for t in _each(trials):
            t.dynamic_refresh = True


@contextmanager
def refresh(trials: _Trials) -> Iterator[_Trials]:
    """Switches refreshing on inside the block, off after."""
    for t in _each(trials):
        t.dynamic_refresh = True
    try:
        yield trials
    finally:
        for t in _each(trials):
            t.dynamic_refresh = False
