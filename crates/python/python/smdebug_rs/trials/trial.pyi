"""Type stubs of smdebug_rs.trials.trial."""

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
