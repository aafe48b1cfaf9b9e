"""Which collections a framework hook saves, as the original's hooks compute them
(``smdebug_rs.mxnet``, ``smdebug_rs.tensorflow``): the Python side needs the list to decide
what to attach (block hooks on children, layer wrappers, gradient slots) before the native
hook's first step."""

import json
from typing import Any, Iterable, List, Optional, Sequence, Union

from smdebug_rs.core.collection import CollectionKeys

__all__ = ["included_collections", "json_included_collections"]


def _parse_bool(v: object) -> bool:
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("true", "1", "yes", "y", "t")


def included_collections(
    include_collections: Union[str, Iterable[Union[str, Iterable[str]]], None] = None,
    include_regex: Union[str, Sequence[str], None] = None,
    save_all: bool = False,
    always: Sequence[str] = (CollectionKeys.LOSSES,),
) -> List[str]:
    """The collections a hook saves: those given (default ``always``) plus ``always`` (the
    framework's ``DEFAULT_INCLUDE_COLLECTIONS``), ``default`` with ``include_regex``,
    ``all`` with ``save_all``."""
    always = list(always)
    names: List[str]
    if include_collections is None:
        names = list(always)
    elif isinstance(include_collections, str):
        names = [include_collections]
    else:
        names = []
        for c in include_collections:
            names.extend([c] if isinstance(c, str) else list(c))
    out = list(dict.fromkeys(names + always))
    if include_regex and CollectionKeys.DEFAULT not in out:
        out.append(CollectionKeys.DEFAULT)
    if save_all and CollectionKeys.ALL not in out:
        out.append(CollectionKeys.ALL)
    return out


def json_included_collections(path: str,
                              always: Sequence[str] = (CollectionKeys.LOSSES,)) -> List[str]:
    """``included_collections`` of a SageMaker JSON configuration (its
    ``CollectionConfigurations`` names, ``HookParameters.include_regex`` / ``save_all``)."""
    with open(path) as f:
        d = json.load(f)
    params = d.get("HookParameters") or {}
    configs = d.get("CollectionConfigurations")
    names: Optional[List[Any]] = None
    if configs is not None:
        names = [c["CollectionName"] for c in configs if "CollectionName" in c]
    return included_collections(names, params.get("include_regex"),
                                _parse_bool(params.get("save_all", False)), always)
