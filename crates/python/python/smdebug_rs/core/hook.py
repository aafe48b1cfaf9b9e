"""``smdebug_rs.Hook`` (``smdebug.core.hook``): smdebug's writer hook for any Python training loop.

The constructor takes the original hooks' arguments; saving costs the training thread the
save decision and one copy of the array, or none for large contiguous arrays (reductions,
encoding and I/O run on the hook's own threads, in Rust; see ``Hook``). See
docs/src/python.md.

    import smdebug_rs as smd

    hook = smd.Hook("/tmp/run", save_config=smd.SaveConfig(save_interval=10),
                    include_collections=["weights", "losses"])
    hook.set_mode(smd.modes.TRAIN)
    for step in range(100):
        hook.step()
        hook.save("fc1.weight", w)          # saved when a collection of it is due
        hook.save_tensor("loss", loss, "losses")
        hook.save_scalar("lr", 0.01)
        if hook.should_stop():
            break
    hook.close()
"""

from __future__ import annotations

import atexit
import json
import os
import weakref
from typing import (
    TYPE_CHECKING, Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union,
)

from smdebug_rs import _native
from smdebug_rs.core.reduction_config import ReductionConfig
from smdebug_rs.core.save_config import SaveConfig

if TYPE_CHECKING:
    # A name of the stub only: the framework names the native module accepts.
    from smdebug_rs._native import FrameworkName

__all__ = ["Hook", "get_hook", "get_collection", "worker_from_env"]

_CURRENT: Optional[Hook] = None


def worker_from_env(environ: Optional[Mapping[str, str]] = None) -> Tuple[str, int]:
    """``(worker name, number of workers)`` of this process, from the launcher's environment:
    ``RANK``/``WORLD_SIZE`` (torchrun, torch.distributed's env://), else
    ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` (mpirun, Horovod, SageMaker's MPI
    jobs), else ``SM_CURRENT_HOST``'s position in ``SM_HOSTS`` (SageMaker multi-host jobs,
    as XGBoost's rabit ranks them), else ``("worker_0", 1)``. The name is
    ``worker_<rank>``, as the original's hooks name workers."""
    env = os.environ if environ is None else environ
    for rank_key, size_key in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK",
                                                       "OMPI_COMM_WORLD_SIZE")):
        if env.get(rank_key) not in (None, ""):
            rank = int(env[rank_key])
            size = int(env.get(size_key) or rank + 1)
            return f"worker_{rank}", size
    hosts_json, host = env.get("SM_HOSTS"), env.get("SM_CURRENT_HOST")
    if hosts_json and host:
        hosts: List[str] = sorted(json.loads(hosts_json))
        if host in hosts and len(hosts) > 1:
            return f"worker_{hosts.index(host)}", len(hosts)
    return "worker_0", 1


def _save_config(obj: Union[_native.SaveConfig, _native.SaveConfigMode, Dict[Any, Any], None]
                 ) -> Optional[_native.SaveConfig]:
    # The original's SaveConfig.parse: a SaveConfigMode or a dict of mode configs also do.
    return None if obj is None else SaveConfig.parse(obj)


def _reduction_config(obj: Union[_native.ReductionConfig, Dict[str, Any], None]
                      ) -> Optional[_native.ReductionConfig]:
    if obj is None or isinstance(obj, ReductionConfig):
        return obj
    if isinstance(obj, dict):
        return ReductionConfig.from_dict(obj)
    raise TypeError(f"expected a ReductionConfig, got {type(obj).__name__}")


class Hook(_native.Hook):
    """smdebug's hook, framework-agnostic: ``Hook(out_dir, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one")``.

    The default collections, reductions and save interval are those of ``framework``:
    ``"numpy"`` (default; the original's numpy path, with its MXNet hook's collections:
    weights ``^(?!gradient).*weight``, biases ``^(?!gradient).*bias``, gradients
    ``^gradient``, losses ``.*loss._(?!input).*output`` (always saved); reductions computed
    as numpy does, stored with shape ``[1]``; every 500 steps), ``"mxnet"`` (the same, but
    ``l1``/``l2`` of the flattened array, as ``mx.nd.norm`` computes them), ``"pytorch"``
    or ``"torch"`` (PyTorch's losses regex ``[Ll]oss_(?!input).*output``, 0-d reductions
    computed as torch does), ``"tensorflow"``, ``"tensorflow2"`` or ``"tf2"``,
    ``"xgboost"`` (any case; ``smdebug_rs._native.FRAMEWORKS`` lists them). The
    worker comes from the environment (:func:`worker_from_env`) unless ``worker`` and
    ``num_workers`` are given. ``wall_time_base`` makes event wall times ``base + step``
    (reproducible trials); ``stop_check_interval`` (seconds, default 1) is the least time
    between two looks for the stop signal.

    Copies: ``save(name, a)`` takes ``a`` without a copy when it is a C-contiguous, aligned
    numpy array of a numeric dtype (not bool or complex) in native byte order, of at least
    256 KiB, and only its raw value and shape are due: with the GIL released, the writer
    thread encodes the record straight from ``a``'s buffer and ``save`` returns once it
    has, so ``a`` may be changed right after. Everything else is copied once on the calling
    thread, which then returns while the writer works: non-contiguous, Fortran-ordered,
    byte-swapped or unaligned arrays, bool, complex and text values, arrays under 256 KiB
    (copying costs less than waiting for the writer), arrays with reductions, health
    summaries, TensorBoard summaries or a flight-recorder copy due (needed after the call
    returns), values converted from ``__array__``/DLPack objects that numpy cannot view, and
    every ``save_tensor`` and ``save_scalar`` value (written at the end of the step)."""

    def __new__(
        cls,
        out_dir: Union[str, "os.PathLike[str]", None] = None,
        export_tensorboard: bool = False,
        tensorboard_dir: Optional[str] = None,
        dry_run: bool = False,
        reduction_config: Union[_native.ReductionConfig, Dict[str, Any], None] = None,
        save_config: Union[_native.SaveConfig, _native.SaveConfigMode, Dict[Any, Any],
                           None] = None,
        include_regex: Union[str, List[str], None] = None,
        include_collections: Optional[List[str]] = None,
        save_all: bool = False,
        include_workers: str = "one",
        *,
        framework: FrameworkName = "numpy",
        worker: Optional[str] = None,
        num_workers: Optional[int] = None,
        collections: Optional[Sequence[_native.Collection]] = None,
        wall_time_base: Optional[float] = None,
        stop_check_interval: Optional[float] = None,
        _json_file: Optional[Tuple[Optional[str]]] = None,
        **kwargs: Any,
    ) -> Hook:
        if _json_file is not None:
            if worker is None:
                worker, num_workers = worker_from_env()
            elif num_workers is None:
                num_workers = 1
            self = super().__new__(cls, "", framework=framework, worker=worker,
                                   num_workers=num_workers, from_json_file=True,
                                   json_file_path=_json_file[0],
                                   stop_check_interval=stop_check_interval)
            return self._setup()
        if out_dir is None:
            raise ValueError("out_dir is required (smdebug_rs.Hook has no SageMaker default; "
                             "use Hook.create_from_json_file() in SageMaker jobs)")
        if worker is None:
            env_worker, env_n = worker_from_env()
            worker = env_worker
            num_workers = env_n if num_workers is None else num_workers
        if num_workers is None:
            num_workers = 1
        if isinstance(include_regex, str):
            include_regex = [include_regex]
        self = super().__new__(
            cls, os.path.expanduser(str(out_dir)), framework=framework,
            export_tensorboard=export_tensorboard, tensorboard_dir=tensorboard_dir,
            dry_run=dry_run, reduction_config=_reduction_config(reduction_config),
            save_config=_save_config(save_config), include_regex=include_regex,
            include_collections=include_collections, save_all=save_all,
            include_workers=include_workers, worker=worker, num_workers=num_workers,
            wall_time_base=wall_time_base, stop_check_interval=stop_check_interval)
        self._setup()
        for c in collections or []:
            self.add_collection(c)
        return self

    def _setup(self) -> Hook:
        self._collections: Dict[str, _native.Collection] = {}
        global _CURRENT
        _CURRENT = self
        # As the original registers _cleanup: a hook still open when Python exits is closed
        # (its last step published, the end marker written).
        atexit.register(_close_at_exit, weakref.ref(self))
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def create_from_json_file(cls, json_file_path: Optional[str] = None, *,
                              framework: FrameworkName = "numpy", worker: Optional[str] = None,
                              num_workers: Optional[int] = None) -> Hook:
        """The hook of a SageMaker job: from ``json_file_path``, else
        ``$SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``
        (``FileNotFoundError`` if there is none). The worker comes from the environment
        (:func:`worker_from_env`) unless ``worker`` (and ``num_workers``) are given."""
        return cls(framework=framework, worker=worker, num_workers=num_workers,
                   _json_file=(json_file_path,))

    # -- collections -------------------------------------------------------------------

    def get_collection(self, name: str, create: bool = True) -> _native.Collection:
        """The collection ``name`` (created if missing, or ``SMDebugError`` if not
        ``create``): a handle of the hook's own collection, the same object on every call.
        Change it before the first step: its regexes, tensor names and configs are taken
        then."""
        if not create and name not in self._collection_names():
            from smdebug_rs.exceptions import SMDebugError

            raise SMDebugError(f"Collection {name} has not been created")
        c = self._collections.get(name)
        if c is None:
            c = self._collections[name] = self._collection(name)
        return c

    def get_collections(self) -> Dict[str, _native.Collection]:
        """``{name: Collection}``: every collection of the hook, as handles."""
        return {name: self.get_collection(name) for name in self._collection_names()}

    def add_collection(self, collection: _native.Collection) -> None:
        """Gives ``collection`` to the hook, replacing its collection of that name (before
        the first step): the object becomes a handle of the hook's copy, so later changes
        through it reach the hook."""
        self._add_collection(collection)
        self._collections[collection.name] = collection

    def include_collection(self, name: str) -> None:
        """Saves collection ``name`` too (before the first step)."""
        self._include_collection(name)

    # -- steps -------------------------------------------------------------------------

    def step(self) -> None:
        """Starts the next step, ending the previous one (its ``save_tensor`` values and
        cached scalars are written, its files published). A call, not a context manager:
        a step lasts until the next ``step()`` or ``close()``."""
        self._step()

    def __enter__(self) -> Hook:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _close_at_exit(ref: "weakref.ReferenceType[Hook]") -> None:
    hook = ref()
    if hook is not None and not hook.closed:
        hook.close()


def get_hook() -> Optional[Hook]:
    """The hook created last in this process (``smdebug.get_hook``), or None."""
    return _CURRENT


def get_collection(name: str) -> _native.Collection:
    """``smdebug.get_collection``: collection ``name`` of the hook created last."""
    if _CURRENT is None:
        raise RuntimeError("no smdebug_rs.Hook has been created yet")
    return _CURRENT.get_collection(name)
