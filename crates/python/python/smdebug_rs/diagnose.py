"""Trial diagnosis: what ``smdebug doctor``, ``smdebug seal`` and ``smdebug health`` print,
as Python dicts (``Trial.health()`` is on the trial).

``doctor(path)`` returns the document ``smdebug doctor --json`` prints — ``trial``,
``findings`` (each with ``kind``, ``what``, ``why``, ``next``) and ``payloads_verifiable``
— with each finding's ``evidence`` besides: the files, the records (events file, offset,
step, worker, tensor), the lagging workers or the missing steps behind its ``what``.
"""

import os
from typing import Any, Dict, Union

from smdebug_rs import _native

_Path = Union[str, "os.PathLike[str]"]

__all__ = ["doctor", "verify", "seal"]


def doctor(path: _Path) -> Dict[str, Any]:
    """Diagnoses the trial at ``path`` (a local folder or ``s3://bucket/prefix``): missing
    collections files, lagging workers, no end marker, corrupt index files and records,
    CRC mismatches, orphan events files, skipped steps, gradient accumulation. Returns a
    dict; an empty ``findings`` list means nothing was found."""
    return _native.doctor(str(path))


def verify(path: _Path) -> Dict[str, Any]:
    """Checks every record the trial's index files list against its events file. Returns a
    dict: ``entries``, ``with_crc``, ``corrupt_index``, ``bad_records`` (each with
    ``events_file``, ``offset``, ``step``, ``worker``, ``tensor`` and ``problem``) and
    ``orphan_events``."""
    return _native.verify(str(path))


def seal(path: _Path, dry_run: bool = False) -> Dict[str, Any]:
    """Adds the payload CRC to every index entry of the trial at ``path``, so copies of it
    can be verified (smdebug ignores the key). Returns a dict: ``files`` rewritten,
    ``entries`` given a CRC, ``already`` sealed files. Raises ``SMDebugRuntimeError``
    naming each bad record, and writes nothing, when a record does not parse."""
    return _native.seal(str(path), dry_run)
