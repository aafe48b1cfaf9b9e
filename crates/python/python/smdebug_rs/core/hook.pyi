"""Type stubs of smdebug_rs.core.hook."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from smdebug_rs._native import FrameworkName
from smdebug_rs._native import Hook as _NativeHook
from smdebug_rs.core.collection import Collection
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig, SaveConfigMode

def worker_from_env(environ: Optional[Mapping[str, str]] = None) -> Tuple[str, int]: ...

class _Step:
    def __enter__(self) -> "_Step": ...
    def __exit__(self, *exc: Any) -> bool: ...

class Hook(_NativeHook):
    def __new__(
        cls,
        out_dir: Optional[str] = None,
        export_tensorboard: bool = False,
        tensorboard_dir: Optional[str] = None,
        dry_run: bool = False,
        reduction_config: Optional[ReductionConfig] = None,
        save_config: Union[SaveConfig, SaveConfigMode, Dict[Any, Any], None] = None,
        include_regex: Union[str, List[str], None] = None,
        include_collections: Optional[List[str]] = None,
        save_all: bool = False,
        include_workers: str = "one",
        *,
        framework: FrameworkName = "numpy",
        worker: Optional[str] = None,
        num_workers: Optional[int] = None,
        collections: Optional[Sequence[Collection]] = None,
        wall_time_base: Optional[float] = None,
        stop_check_interval: Optional[float] = None,
    ) -> "Hook": ...
    @classmethod
    def create_from_json_file(
        cls,
        json_file_path: Optional[str] = None,
        *,
        framework: FrameworkName = "numpy",
        worker: Optional[str] = None,
        num_workers: Optional[int] = None,
    ) -> "Hook": ...
    def get_collection(self, name: str, create: bool = True) -> Collection: ...
    def get_collections(self) -> Dict[str, Collection]: ...
    def add_collection(self, collection: Collection) -> None: ...
    def include_collection(self, name: str) -> None: ...
    def step(self) -> _Step: ...
    def __enter__(self) -> "Hook": ...
    def __exit__(self, *exc: Any) -> bool: ...

def get_hook() -> Optional[Hook]: ...
def get_collection(name: str) -> Collection: ...
