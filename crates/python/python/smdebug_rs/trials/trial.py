"""``smdebug.trials.trial``: the ``Trial`` class.

A :class:`Trial` (made by ``smdebug_rs.trials.create_trial``) has smdebug's methods,
keywords and defaults; reads run in Rust with the GIL released. Beyond the original:
``to_arrow()`` / ``to_pandas()`` and ``health()``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, Iterable, List, Literal, Optional, Sequence, Set, Tuple, Union

import numpy as np

from smdebug_rs import _native
from smdebug_rs.core.collection import Collection, CollectionKeys
from smdebug_rs.core.logger import get_logger
from smdebug_rs.modes import ModeKeys

__all__ = ["Trial"]

_TABLES = ("tensors", "reductions", "scalars", "steps")


def _name_sort_key(name: str) -> Tuple[int, str]:
    # The original orders inputs/labels/predictions by the trailing number of the name.
    digits = ""
    for ch in reversed(name):
        if not ch.isdigit():
            break
        digits = ch + digits
    return (int(digits) if digits else -1, name)


_ARROW_BACKED = object()  # to_pandas's default types_mapper (see there)


def _arrow_backed_types() -> Optional[Callable[[Any], Any]]:
    """The ``types_mapper`` of :meth:`Trial.to_pandas`'s default, or None where pandas is
    too old for Arrow-backed columns (< 1.5)."""
    import pandas as pd
    import pyarrow as pa

    if not hasattr(pd, "ArrowDtype"):
        return None
    text = pd.StringDtype("pyarrow")

    def mapper(t: Any) -> Any:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return text
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pd.ArrowDtype(t)
        return None

    return mapper


class _CollectionManager:
    """``trial.collection_manager``: the trial's collections as the original's
    ``CollectionManager`` offers them (``collections``, ``get``)."""

    def __init__(self, trial: Trial) -> None:
        self._trial = trial

    @property
    def collections(self) -> Dict[str, _native.Collection]:
        """``{name: Collection}``: the trial's own objects."""
        return self._trial.collections()

    def get(self, name: str, create: bool = True) -> _native.Collection:
        """Collection ``name``; created on the trial when missing if ``create``, else
        ``SMDebugError``."""
        if not create and name not in self.collections:
            from smdebug_rs.exceptions import SMDebugError

            raise SMDebugError(f"Collection {name} has not been created")
        return self._trial.collection(name)


class Trial(_native.Trial):
    """A trial being read (``smdebug.trials.trial.Trial``); see ``create_trial``."""

    # The original's constructor flags. Reads here are always parallel and indexed, and
    # the value cache is bounded (``cache_bytes``): the flags are kept, not acted on.
    range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None
    parallel = True
    check = False
    index_mode = True
    cache = False

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    @property
    def collection_manager(self) -> _CollectionManager:
        """The trial's collections, as the original's ``CollectionManager``."""
        return _CollectionManager(self)

    @property
    def worker_set(self) -> Set[str]:
        """The workers that wrote steps, as a set."""
        return set(self.workers())

    @property
    def workers_for_global_step(self) -> Dict[int, Set[str]]:
        """``{global step: set of the workers that wrote it}``."""
        out: Dict[int, Set[str]] = {}
        for name in super().tensor_names():
            t = self.tensor(name)
            for step in t.steps(show_incomplete_steps=True):
                out.setdefault(step, set()).update(t.workers(step))
        return out

    @property
    def global_step_to_tensors_map(self) -> Dict[int, Set[str]]:
        """``{global step: set of the tensor names saved at it}``."""
        out: Dict[int, Set[str]] = {}
        for step in self.steps(show_incomplete_steps=True):
            out[step] = set(super().tensor_names(step=step))
        return out

    @property
    def mode_to_tensors_map(self) -> Dict[ModeKeys, Set[str]]:
        """``{mode: set of the tensor names saved in it}``."""
        return {m: set(super().tensor_names(mode=m)) for m in self.modes()}

    def refresh_tensor(self, tname: str, steps: Optional[Sequence[int]] = None) -> None:
        """Reads what was written since the last refresh (the original reads every
        tensor's index at once too: ``tname`` and ``steps`` do not narrow it)."""
        del tname, steps
        self.refresh_data()

    @property
    def logger(self) -> logging.Logger:
        """The package's logger."""
        return get_logger()

    def collections(self) -> Dict[str, _native.Collection]:
        """The collections, by name: the same objects on every call, so that what is changed
        through one (``include``, ``add_tensor_name``) is what ``tensor_names(collection=...)``
        sees, as in the original."""
        colls: Optional[Dict[str, _native.Collection]] = self.__dict__.get("_collections")
        if colls is None:
            colls = self._collections = super().collections()
        return colls

    def collection(self, coll_name: str) -> _native.Collection:
        """The collection ``coll_name``, created on the trial (empty) if it has none of that
        name; later calls give the same object."""
        colls = self.collections()
        c = colls.get(coll_name)
        if c is None:
            c = colls[coll_name] = Collection(coll_name)
        return c

    def tensor_names(self, show_prefixed_tensors: bool = False, *, step: Optional[int] = None,
                     mode: _native._Mode = ModeKeys.GLOBAL,
                     regex: Union[str, Sequence[str], None] = None,
                     collection: Union[str, _native.Collection, None] = None) -> List[str]:
        """Sorted names of the saved tensors, optionally only those saved at ``step`` (of
        ``mode``), matching ``regex`` (a pattern or a list: ``re.search``) or in
        ``collection`` (a name or a Collection: the trial's collection of that name, with
        what was added to it since). ``regex`` and ``collection`` together raise
        ``ValueError``."""
        if collection is None:
            return super().tensor_names(show_prefixed_tensors, step=step, mode=mode,
                                        regex=regex)
        if regex is not None:
            raise ValueError("Only one of `regex` or `collection` can be passed to this method")
        if isinstance(collection, str):
            name = collection
        elif isinstance(collection, _native.Collection):
            name = collection.name
        else:
            raise TypeError(f"Invalid argument type for collection {collection.__class__}")
        coll = self.collection(name)
        saved = set(super().tensor_names(step=step, mode=mode))
        found = saved.intersection(coll.tensor_names)
        patterns = list(coll.include_regex)
        if patterns:
            found.update(super().tensor_names(step=step, mode=mode, regex=patterns))
        if not found:
            get_logger().warning(f"No tensors from the collection {name} were saved")
        return sorted(found)

    @property
    def last_index_token(self) -> Optional[str]:
        """The last index file read, as the original names it: its path (the trial's path
        joined with the file's place in the trial) for a local trial, its key in the bucket
        for an object store."""
        token = super().last_index_token
        if token is None:
            return None
        path = self.path
        if "://" in path:
            # The key: what follows the bucket (s3://bucket/prefix -> prefix/...).
            rest = path.split("://", 1)[1]
            prefix = rest.split("/", 1)[1] if "/" in rest else ""
            return os.path.join(prefix, token) if prefix else token
        return os.path.join(path, token)

    def tensors(self, *args: Any, **kwargs: Any) -> List[str]:
        """Alias of :meth:`tensor_names` (used by older examples)."""
        return self.tensor_names(*args, **kwargs)

    def inputs(self, step: int, mode: _native._Mode = ModeKeys.GLOBAL) -> List[np.ndarray]:
        """Values at ``step`` of the tensors of the ``inputs`` collection."""
        names = sorted(
            self.tensor_names(step=step, mode=mode, collection=CollectionKeys.INPUTS),
            key=_name_sort_key,
        )
        return [self.tensor(n).value(step) for n in names]

    def _outputs(self, step: int, mode: _native._Mode, regex: str) -> List[np.ndarray]:
        names = sorted(self.tensor_names(step=step, mode=mode, regex=regex), key=_name_sort_key)
        return [self.tensor(n).value(step) for n in names]

    def labels(self, step: int, mode: _native._Mode = ModeKeys.GLOBAL) -> List[np.ndarray]:
        """Values at ``step`` of the tensors matching ``labels*``."""
        return self._outputs(step, mode, "labels*")

    def predictions(self, step: int, mode: _native._Mode = ModeKeys.GLOBAL
                    ) -> List[np.ndarray]:
        """Values at ``step`` of the tensors matching ``predictions*``."""
        return self._outputs(step, mode, "predictions*")

    def health(self, context: int = 5, growth: float = 10.0) -> Dict[str, Any]:
        """The first step, mode, worker and tensor holding a NaN or infinity, as the dict
        ``smdebug health --json`` prints: ``first_non_finite`` (None when every value is
        finite), a ``timeline`` of ``context`` saved steps on each side and the tensors
        whose magnitude first grew by ``growth`` times (``first_grew``). Reads every
        record of the trial once."""
        return _native.trial_health(self, context, growth)

    def _arrow_tables(self, tables: Iterable[str], **selection: Any
                      ) -> Dict[str, _native.ArrowTable]:
        return _native.export_tables(self, list(tables), **selection)

    def to_arrow(self, table: str = "tensors", *, tensors: Optional[str] = None,
                 collection: Optional[str] = None, mode: _native._Mode = None,
                 steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
                 workers: Optional[Sequence[str]] = None, values: str = "none") -> Any:
        """One table of the trial as a ``pyarrow.Table`` (schemas in the project's
        docs/src/export.md): ``"tensors"`` (one row per tensor, step and worker, with
        statistics; ``values="small"|"all"`` adds the values), ``"reductions"``,
        ``"scalars"`` or ``"steps"``. ``tensors`` (a regex), ``collection``, ``mode``,
        ``steps`` (``(begin, end)``) and ``workers`` select rows. The table crosses over
        through the Arrow C stream interface: no Python object per row.
        """
        import pyarrow as pa

        if table not in _TABLES:
            raise ValueError(f"unknown table {table!r}: expected one of {', '.join(_TABLES)}")
        got = self._arrow_tables([table], tensors=tensors, collection=collection, mode=mode,
                                 steps=steps, workers=workers, values=values)
        return pa.RecordBatchReader.from_stream(got[table]).read_all()

    def to_pandas(self, table: str = "tensors", *, types_mapper: Any = _ARROW_BACKED,
                  **selection: Any) -> Any:
        """:meth:`to_arrow` as a ``pandas.DataFrame``.

        Numeric columns become numpy columns; text columns (``tensor``, ``worker``,
        ``dtype``...) are ``string[pyarrow]`` and list columns (``shape``, ``collections``,
        ``values``) ``pandas.ArrowDtype`` lists, both views of the Arrow buffers: building a
        Python ``str`` and a numpy array per row and column took 30 times longer than the
        rest of the conversion. ``types_mapper`` is passed to ``pyarrow.Table.to_pandas``:
        ``types_mapper=None`` gives pyarrow's defaults (``object`` columns of ``str`` and
        numpy arrays).
        """
        tbl = self.to_arrow(table, **selection)
        if types_mapper is _ARROW_BACKED:
            types_mapper = _arrow_backed_types()
        # The table is ours alone: its buffers may be released column by column.
        return tbl.to_pandas(types_mapper=types_mapper, self_destruct=True)
