"""Type stubs of smdebug_rs.trials.utils."""

from typing import Optional, Tuple

from smdebug_rs.trials.trial import Trial

def create_trial(
    path: str,
    name: Optional[str] = None,
    profiler: bool = False,
    output_dir: str = "/opt/ml/processing/outputs/",
    *,
    range_steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
    collections_timeout: Optional[float] = None,
    cache_bytes: Optional[int] = None,
    skip_corrupt_index_files: bool = False,
    parallel: bool = True,
    check: bool = False,
    index_mode: bool = True,
    cache: bool = False,
) -> Trial: ...
