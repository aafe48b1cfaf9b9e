"""``smdebug.analysis.utils``: ``no_refresh`` and ``refresh`` context managers."""

from contextlib import contextmanager

__all__ = ["no_refresh", "refresh"]


def _each(trials):
    return trials if isinstance(trials, (list, tuple)) else [trials]


@contextmanager
def no_refresh(trials):
    """Switches refreshing off on a trial (or list of trials) inside the block, on after."""
    for t in _each(trials):
        t.dynamic_refresh = False
    try:
        yield trials
    finally:
        for t in _each(trials):
            t.dynamic_refresh = True


@contextmanager
def refresh(trials):
    """Switches refreshing on inside the block, off after."""
    for t in _each(trials):
        t.dynamic_refresh = True
    try:
        yield trials
    finally:
        for t in _each(trials):
            t.dynamic_refresh = False
