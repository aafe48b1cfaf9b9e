"""Type stubs of smdebug_rs.trials."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from smdebug_rs import _native
from smdebug_rs.modes import ModeKeys

class Trial(_native.Trial):
    @property
    def logger(self) -> Any: ...
    def tensors(self, *args: Any, **kwargs: Any) -> List[str]: ...
    def inputs(self, step: int, mode: ModeKeys = ModeKeys.GLOBAL) -> List[np.ndarray]: ...
    def labels(self, step: int, mode: ModeKeys = ModeKeys.GLOBAL) -> List[np.ndarray]: ...
    def predictions(self, step: int, mode: ModeKeys = ModeKeys.GLOBAL) -> List[np.ndarray]: ...
    def to_arrow(
        self,
        table: str = "tensors",
        *,
        tensors: Optional[str] = None,
        collection: Optional[str] = None,
        mode: Optional[ModeKeys] = None,
        steps: Optional[Tuple[Optional[int], Optional[int]]] = None,
        workers: Optional[Sequence[str]] = None,
        values: str = "none",
    ) -> Any: ...
    def health(self, context: int = 5, growth: float = 10.0) -> Dict[str, Any]: ...
    def to_pandas(
        self, table: str = "tensors", *, types_mapper: Any = ..., **selection: Any
    ) -> Any: ...

LocalTrial = Trial
S3Trial = Trial

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
