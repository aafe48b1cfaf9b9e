"""What the framework hooks share (``smdebug_rs.pytorch.Hook``, ``smdebug_rs.mxnet.Hook``,
``smdebug_rs.tensorflow.KerasHook``): the native hook behind them, the SageMaker JSON
configuration, the state properties, collections, the calls a training script makes, the
original's way of naming a module's tensors (``<name>_output_<n>``), the once-per-step due
check, and closing.

Steps: a module hook starts each step with :meth:`FrameworkHook._start_step`, which asks the
native hook once whether anything can be saved in it (``anything_due()``: fixed until the
next step, ``set_mode`` included). The callbacks that save a step's tensors (a module's
inputs and outputs, a parameter's gradient) are on the framework's modules only while a
step has something due: a framework hook gives :meth:`FrameworkHook._add_tensor_hooks` a
function that registers them, run when a step with something due starts after one without,
and their registrations come off when a step without follows. Only the callback that
starts steps stays registered: on a step where nothing is due the framework calls nothing
else of the hook (a module with forward hooks takes the framework's slower call path and
each gradient callback enters Python from the backward pass, which together cost more
than the rest of the hook), no tensor is touched, no name is built, no parameter is walked.
Callbacks attached while a step is due run after the ones the script registered before
that step. A hook can instead keep them on from their first attach until it closes
(:meth:`FrameworkHook._keep_tensor_hooks`), each callback then checking ``_due`` itself:
the PyTorch hook does so for a compiled model, whose registrations must not change between
steps (:mod:`smdebug_rs.pytorch.compiled`).

A framework's hook subclasses :class:`FrameworkHook` and supplies what differs: its own
state (set before the native hook is built), the native framework name, its worker
(``(name, count)``), its tensor type and conversion, its collection class, its singleton,
how its registrations come off, and its callbacks on the framework's modules
(``smdebug_rs.tensorflow.KerasHook`` too, beside ``keras.callbacks.Callback``).

Every public method is ``@guarded``: a failure is logged once and switches the hook off
(:mod:`smdebug_rs.core.faults`); the training goes on.
"""

from typing import Any, Dict, List, Optional, Tuple, Union

from smdebug_rs.core.faults import fail, guarded
from smdebug_rs.core.singleton import json_config_path
from smdebug_rs.core.hook import Hook as _NativeHook

__all__ = ["FrameworkHook"]


class FrameworkHook:
    """The common part of a framework hook: ``Hook(out_dir=None, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one")``,
    the original's arguments and defaults (only ``losses`` saved, every 500 steps, unless
    told otherwise). Subclasses set the class attributes and implement the
    ``_framework_*`` methods below."""

    #: The native framework name (``smdebug_rs.Hook(framework=...)``).
    FRAMEWORK: Any = None
    #: The logger label of this hook's messages.
    _LOG_NAME = "smdebug_rs"
    #: The framework's ``Collection`` class (``Collection._adopt`` wraps a native one).
    _COLLECTION: Any = None
    #: The mode of the next steps (each subclass sets it in its constructor).
    mode: Any

    def __init__(
        self,
        out_dir: Optional[str] = None,
        export_tensorboard: bool = False,
        tensorboard_dir: Optional[str] = None,
        dry_run: bool = False,
        reduction_config: Any = None,
        save_config: Any = None,
        include_regex: Union[str, List[str], None] = None,
        include_collections: Optional[List[str]] = None,
        save_all: bool = False,
        include_workers: str = "one",
        *,
        _json_file: Optional[Tuple[Optional[str]]] = None,
    ) -> None:
        self._fault: Any = None
        self._saving: Optional[str] = None
        # The native hook: None once the fault policy switched the hook off.
        self._native: Any = None
        self._closed = False
        self._started = False
        self._written: Dict[Any, Any] = {}
        self._due = False        # anything_due() of the step in progress
        self._handles: List[Any] = []       # registrations kept while the hook is on
        self._tensor_hooks: List[Any] = []  # functions attaching the callbacks that save tensors
        self._attached: List[Any] = []      # what takes those callbacks off, while a step is due
        self._kept = False       # callbacks kept on until close (_keep_tensor_hooks)
        self._include_workers = str(include_workers).lower()  # the JSON config may change it
        # The settings as given (the original keeps them as attributes); None where a
        # SageMaker configuration file made the hook.
        self.save_config = save_config
        self.reduction_config = reduction_config
        self.include_regex = include_regex
        # Keras and MXNet replace it with the list they resolve (defaults, save_all).
        self.include_collections = include_collections
        self.save_all = save_all
        self.save_all_workers = self._include_workers == "all"
        self.init_step = -1
        self._framework_init(include_collections, include_regex, save_all)
        self.out_dir: Optional[str] = None if out_dir is None else str(out_dir)
        self.worker = "worker_0"
        self.tensorboard_dir: Optional[str] = None
        self._build(out_dir, export_tensorboard, tensorboard_dir, dry_run, reduction_config,
                    save_config, include_regex, include_collections, save_all,
                    include_workers, _json_file)
        self._framework_singleton().set_hook(self)
        self._framework_built()

    # -- what a framework supplies -------------------------------------------------------

    def _framework_init(self, include_collections: Any, include_regex: Any, save_all: Any) -> Any:
        """Sets the framework hook's own state, before the native hook is built (which may
        call the other ``_framework_*`` methods); the constructor's collection arguments
        are given for a hook that derives its own list from them (nothing by default)."""

    def _framework_built(self) -> Any:
        """Runs once the native hook is built and the singleton set (nothing by default)."""

    @staticmethod
    def _framework_worker() -> Any:
        """``(worker name, number of workers)`` of this process."""
        raise NotImplementedError

    @staticmethod
    def _framework_singleton() -> Any:
        """The framework's ``singleton_utils`` module (``set_hook``)."""
        raise NotImplementedError

    @staticmethod
    def _framework_is_tensor(value: Any) -> Any:
        """Whether ``value`` is one of the framework's tensors."""
        raise NotImplementedError

    @staticmethod
    def _framework_to_numpy(value: Any) -> Any:
        """The numpy value of a framework tensor (copied off its device)."""
        raise NotImplementedError

    def _framework_detach(self) -> Any:
        """Takes the hook's registrations (module hooks, wrappers) off the framework."""
        raise NotImplementedError

    def _framework_json_config(self, path: Any) -> Any:
        """Reads what the framework's hook takes from the JSON configuration at ``path``
        besides what the native hook reads (nothing by default)."""

    def _framework_end_step(self) -> Any:
        """Finishes the open step before a change of mode or the end (nothing by default)."""

    # -- construction --------------------------------------------------------------------

    @guarded()
    def _build(self, out_dir: Optional[str], export_tensorboard: bool,
               tensorboard_dir: Optional[str], dry_run: bool, reduction_config: Any,
               save_config: Any, include_regex: Union[str, List[str], None],
               include_collections: Optional[List[str]], save_all: bool, include_workers: str,
               json_file: Optional[Tuple[Optional[str]]]) -> None:
        worker, num_workers = self._framework_worker()
        if json_file is not None:
            self._framework_json_config(json_file[0])
            native = _NativeHook.create_from_json_file(
                json_file[0], framework=self.FRAMEWORK, worker=worker,
                num_workers=num_workers)
        else:
            native = _NativeHook(
                out_dir, export_tensorboard=export_tensorboard,
                tensorboard_dir=tensorboard_dir, dry_run=dry_run,
                reduction_config=reduction_config, save_config=save_config,
                include_regex=include_regex, include_collections=include_collections,
                save_all=save_all, include_workers=include_workers, framework=self.FRAMEWORK,
                worker=worker, num_workers=num_workers)
        self._native = native
        self.out_dir = native.out_dir
        self.worker = native.worker
        self.tensorboard_dir = native.tensorboard_dir

    @classmethod
    def create_from_json_file(cls, json_file_path: Any = None) -> Any:
        """The hook of a SageMaker job, from ``json_file_path``, else
        ``$SMDEBUG_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/debughookconfig.json``.
        ``FileNotFoundError`` if there is no such file (``get_hook`` relies on it); any other
        problem with it is a fault (logged once, the hook off)."""
        path = json_config_path(json_file_path)
        if path is None:
            raise FileNotFoundError(
                f"no hook configuration: {json_file_path or 'SMDEBUG_CONFIG_FILE_PATH'} "
                "names no file and /opt/ml/input/config/debughookconfig.json is absent")
        return cls(_json_file=(path,))

    # -- state ---------------------------------------------------------------------------

    @property
    def enabled(self) -> Any:
        """False once closed or switched off by a fault."""
        return self._native is not None and not self._closed

    @property
    def fault(self) -> Any:
        """The first failure (``.where``, ``.error``) that switched the hook off, or None."""
        return self._fault

    @property
    def step(self) -> Any:
        """The global step (-1 before the first step)."""
        native = self._native
        if native is None or native.closed:
            return -1
        return native.step_num

    @property
    def dry_run(self) -> Any:
        """Whether the hook only logs what it would write."""
        return self._native is not None and self._native.dry_run

    # -- collections ---------------------------------------------------------------------

    def get_collection(self, name: Any, create: Any = True) -> Any:
        """Collection ``name`` (created if missing), of the framework's ``Collection``
        class. Change it before the first step. With the hook off, a detached collection."""
        if self._native is not None:
            try:
                return self._COLLECTION._adopt(self._native.get_collection(name))
            except Exception as e:  # noqa: BLE001 - the fault policy
                fail(self, "get_collection", e)
        return self._COLLECTION(name)

    def get_collections(self) -> Any:
        """``{name: Collection}`` of the collections touched through this hook."""
        if self._native is None:
            return {}
        return {k: self._COLLECTION._adopt(c) for k, c in self._native._collections.items()}

    @guarded()
    def add_collection(self, collection: Any) -> Any:
        """Adds (or replaces) a collection object (before the first step)."""
        self._native.add_collection(self._COLLECTION._adopt(collection))

    # -- steps ---------------------------------------------------------------------------

    def _start_step(self) -> Any:
        """Starts the next native step (the previous one's files are published) and returns
        whether anything can be saved in it, kept in ``self._due`` until the next step."""
        native = self._native
        native.step()
        self._written.clear()
        self._set_due(native.anything_due())
        return self._due

    def _set_due(self, due: Any) -> Any:
        # The tensor callbacks follow `_due`: attached when it turns true, off whenever it
        # is false (also what an attach that failed half-way left); kept ones stay.
        if self._kept:
            self._due = due
            return
        if due and not self._due:
            for attach in self._tensor_hooks:
                self._attached.extend(attach())
        elif not due and self._attached:
            removers, self._attached = self._attached, []
            for remove in removers:
                remove()
        self._due = due

    def _add_tensor_hooks(self, attach: Any) -> Any:
        """Keeps ``attach``: a function that registers callbacks saving a module's tensors
        and returns, for each registration, the function that takes it off. It runs at
        once if the step in progress has something due (a module registered during a
        step), else when the next such step starts."""
        self._tensor_hooks.append(attach)
        if self._due or self._kept:
            self._attached.extend(attach())

    def _keep_tensor_hooks(self) -> Any:
        """From now until close the tensor callbacks stay on (attached now if they are
        not), whether or not a step has something due."""
        if self._kept:
            return
        if not self._due:
            for attach in self._tensor_hooks:
                self._attached.extend(attach())
        self._kept = True

    # -- saving a module's tensors -------------------------------------------------------

    def _offer(self, name: Any, tensor: Any) -> Any:
        # The conversion (and any device → host copy) happens only when the name is due.
        native = self._native
        if native.should_save_tensor(name):
            self._saving = name  # named in the log if converting or saving fails
            native.save(name, self._framework_to_numpy(tensor))
            self._saving = None

    def _write_all(self, name: Any, suffix: Any, value: Any) -> Any:
        key = name + suffix
        self._written[key] = self._write(key, value, self._written.get(key, 0))

    def _write(self, prefix: Any, value: Any, idx: Any) -> Any:
        # The original's CallbackHook._write: tensors take the next index; tuples and lists
        # are walked in order; anything else is passed over.
        if self._framework_is_tensor(value):
            self._offer(prefix + str(idx), value)
            return idx + 1
        if isinstance(value, (tuple, list)):
            for v in value:
                idx = self._write(prefix, v, idx)
        return idx

    # -- calls from the training script --------------------------------------------------

    @guarded()
    def save_scalar(self, name: str, value: Any, sm_metric: bool = False,
                    timestamp: Optional[float] = None) -> None:
        """``scalar/<name>``: a number or a one-element tensor (its dtype and shape kept)."""
        if self._closed:
            return
        if self._framework_is_tensor(value):
            value = self._framework_to_numpy(value)
        self._native.save_scalar(name, value, sm_metric, timestamp)

    @guarded()
    def set_mode(self, mode: Any) -> Any:
        """``smd.modes.TRAIN`` / ``EVAL`` / ``PREDICT`` / ``GLOBAL`` for the next steps."""
        if self._closed:
            return
        if mode != self.mode and self._started:
            self._framework_end_step()
        self._native.set_mode(mode)
        self.mode = mode

    @guarded(default=False)
    def should_stop(self) -> Any:
        """True once a rule (or a person) put the stop signal into the trial."""
        return not self._closed and self._native.should_stop()

    @guarded()
    def flush(self) -> Any:
        """Waits until everything given so far is written."""
        if not self._closed:
            self._native.flush()

    @guarded()
    def close(self) -> Any:
        """Ends the trial (the open step finished and published, collections file, end
        marker) and removes the hook's registrations. A second call does nothing."""
        if self._closed:
            return
        if self._started:
            self._framework_end_step()
        self._closed = True
        self._kept = False
        self._set_due(False)
        self._tensor_hooks.clear()
        self._framework_detach()
        self._native.close()

    def __repr__(self) -> str:
        state = "on" if self.enabled else ("off: " + repr(self._fault) if self._fault
                                           else "closed")
        return (f"<{self._LOG_NAME}.{type(self).__name__} out_dir={self.out_dir!r} "
                f"worker={self.worker} {state}>")
