"""Live views of the list-, set- and dict-valued attributes of the config objects.

The config objects are the native ones (``smdebug_rs._native``): their attributes read a
copy of the native value and assign a whole new one. These views make
``collection.include_regex.append(r)``, ``collection.tensor_names.add(n)`` or
``save_config.mode_save_configs[mode] = m`` change the native object, as they change the
original's plain Python object: each operation reads the native value, changes the copy and
assigns it back (the native setter checks it).
"""

from collections.abc import MutableMapping, MutableSequence, MutableSet
from typing import Any, Iterator

__all__ = ["ListView", "SetView", "ModeMapView", "live"]


class ListView(MutableSequence[Any]):
    """A list attribute of a native object, changed in place."""

    __slots__ = ("_owner", "_attr")

    def __init__(self, owner: Any, attr: Any) -> None:
        self._owner = owner
        self._attr = attr

    def _get(self) -> Any:
        return self._attr.__get__(self._owner)

    def _set(self, value: Any) -> None:
        self._attr.__set__(self._owner, value)

    def __getitem__(self, i: Any) -> Any:
        return self._get()[i]

    def __setitem__(self, i: Any, value: Any) -> None:
        items = self._get()
        items[i] = value
        self._set(items)

    def __delitem__(self, i: Any) -> None:
        items = self._get()
        del items[i]
        self._set(items)

    def __len__(self) -> int:
        return len(self._get())

    def insert(self, i: Any, value: Any) -> Any:
        items = self._get()
        items.insert(i, value)
        self._set(items)

    def extend(self, values: Any) -> Any:
        self._set(self._get() + list(values))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._get())

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ListView):
            other = other._get()
        return bool(self._get() == other)

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> Any:
        return self._get()

    def __repr__(self) -> str:
        return repr(self._get())


class SetView(MutableSet[Any]):
    """A set attribute of a native object, changed in place."""

    __slots__ = ("_owner", "_attr")

    def __init__(self, owner: Any, attr: Any) -> None:
        self._owner = owner
        self._attr = attr

    def _get(self) -> Any:
        return self._attr.__get__(self._owner)

    def __contains__(self, x: Any) -> bool:
        return x in self._get()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def add(self, x: Any) -> Any:
        self._attr.__set__(self._owner, self._get() | {x})

    def discard(self, x: Any) -> Any:
        self._attr.__set__(self._owner, self._get() - {x})

    def update(self, *others: Any) -> Any:
        self._attr.__set__(self._owner, self._get().union(*others))

    def copy(self) -> Any:
        return self._get()

    def __repr__(self) -> str:
        return repr(self._get())


class ModeMapView(MutableMapping[Any, Any]):
    """``SaveConfig.mode_save_configs``: ``{ModeKeys: SaveConfigMode or None}``, changed in
    place. Its values are views of the save config's own (see ``smdebug_rs._native``)."""

    __slots__ = ("_owner", "_attr")

    def __init__(self, owner: Any, attr: Any) -> None:
        self._owner = owner
        self._attr = attr

    def _get(self) -> Any:
        return self._attr.__get__(self._owner)

    def __getitem__(self, mode: Any) -> Any:
        return self._get()[_mode_key(mode)]

    def __setitem__(self, mode: Any, value: Any) -> None:
        items = self._get()
        items[_mode_key(mode)] = value
        self._attr.__set__(self._owner, items)

    def __delitem__(self, mode: Any) -> None:
        # A mode always has an entry: removing it leaves it without a config.
        self[mode] = None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def copy(self) -> Any:
        return self._get()

    def __repr__(self) -> str:
        return repr(self._get())


def _mode_key(m: Any) -> Any:
    from smdebug_rs.modes import ModeKeys

    if isinstance(m, ModeKeys):
        return m
    if isinstance(m, str):
        return ModeKeys[m]
    name = getattr(m, "name", None)  # the original's ModeKeys
    if name is not None:
        return ModeKeys[name]
    return ModeKeys(m)


def live(native_attr: Any, view: Any) -> Any:
    """A property that reads ``native_attr`` as a ``view`` and assigns through it."""

    def get(self: Any) -> Any:
        return view(self, native_attr)

    def set(self: Any, value: Any) -> None:
        if isinstance(value, (ListView, SetView, ModeMapView)):
            value = value.copy()
        native_attr.__set__(self, value)

    return property(get, set, doc=native_attr.__doc__)
