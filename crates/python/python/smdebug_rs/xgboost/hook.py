"""``smdebug.xgboost.hook``: smdebug's XGBoost hook as an ``xgboost.train`` callback,
writing through the Rust hook.

It saves what ``smdebug.xgboost.Hook`` 1.0.34 saves, under the same names and collections:
``metrics`` (``<eval>-<metric>``), ``losses``, ``hyperparameters/<name>``, ``predictions``
and ``labels`` of ``validation_data``, ``feature_importance/<type>/<feature>``,
``average_shap/<feature>`` and ``full_shap/<feature>`` of ``train_data``, and the tree
table of each round as ``trees/<column>``. Saved every 10 rounds unless ``save_config``
says otherwise; only ``metrics`` unless ``include_collections`` names more.

    from smdebug_rs.xgboost import Hook
    hook = Hook(out_dir="/tmp/run", include_collections=["metrics", "feature_importance"],
                train_data=dtrain, validation_data=dval)
    xgboost.train(params, dtrain, evals=[(dtrain, "train"), (dval, "validation")],
                  callbacks=[hook])

The step is the boosting round (the count of ``after_iteration`` calls, which equals the
round when training starts from scratch). When the stop signal appears in the trial, the
callback ends training (``after_iteration`` returns True). ``after_training`` closes the
hook.
"""

import os

import numpy as np
import xgboost as xgb
from xgboost import DMatrix

from smdebug_rs.core.hook import Hook as _BaseHook
from smdebug_rs.core.hook import worker_from_env
from smdebug_rs.core.save_config import SaveConfig
from smdebug_rs.modes import ModeKeys
from smdebug_rs.xgboost.utils import parse_tree_model

__all__ = ["Hook"]

DEFAULT_SAVE_CONFIG_INTERVAL = 10
_IMPORTANCE_TYPES = ["weight", "gain", "cover", "total_gain", "total_cover"]


def _xgb_worker():
    try:
        n = xgb.collective.get_world_size()
        if n > 1:
            return f"worker_{xgb.collective.get_rank()}", n
    except Exception:  # noqa: BLE001 - no collective communicator: not distributed
        pass
    return worker_from_env()


def _load_data(data):
    """``train_data``/``validation_data``: a DMatrix, or ``(path, "csv"|"libsvm")``."""
    if data is None or isinstance(data, DMatrix):
        return data
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str)):
        raise ValueError("'data' must be a tuple of strings representing (file path, content "
                         "type) or an xgboost.DMatrix instance.")
    path = os.path.expanduser(data[0])
    if not os.path.isfile(path):
        raise ValueError("Only local files are currently supported for SHAP.")
    kind = data[1].lower()
    if kind not in ("csv", "libsvm"):
        raise ValueError(f"content type {data[1]!r}: expected csv or libsvm")
    if kind == "csv":
        return DMatrix(f"{path}?format=csv&label_column=0")
    return DMatrix(f"{path}?format=libsvm")


def _feature_names(model):
    if model.feature_names is None:
        return [f"f{i}" for i in range(model.num_features())]
    return list(model.feature_names)


class Hook(xgb.callback.TrainingCallback):
    """smdebug's XGBoost hook: ``Hook(out_dir, export_tensorboard=False,
    tensorboard_dir=None, dry_run=False, reduction_config=None, save_config=None,
    include_regex=None, include_collections=None, save_all=False, include_workers="one",
    hyperparameters=None, train_data=None, validation_data=None)``; pass it in
    ``callbacks`` of ``xgboost.train``. ``reduction_config`` is ignored, as in the
    original (XGBoost tensors are saved raw)."""

    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None,
                 dry_run=False, reduction_config=None, save_config=None, include_regex=None,
                 include_collections=None, save_all=False, include_workers="one",
                 hyperparameters=None, train_data=None, validation_data=None, *,
                 _hook=None, **kwargs):
        super().__init__()
        if _hook is None:
            worker, n = _xgb_worker()
            if save_config is None:
                save_config = SaveConfig(save_interval=DEFAULT_SAVE_CONFIG_INTERVAL)
            _hook = _BaseHook(
                out_dir, export_tensorboard=export_tensorboard, tensorboard_dir=tensorboard_dir,
                dry_run=dry_run, save_config=save_config, include_regex=include_regex,
                include_collections=include_collections, save_all=save_all,
                include_workers=include_workers, framework="xgboost", worker=worker,
                num_workers=n, **kwargs)
        self.hook = _hook
        # The settings as given (the original keeps them as attributes); None where a
        # SageMaker configuration file made the hook.
        self.save_config = save_config
        self.reduction_config = reduction_config
        self.include_regex = include_regex
        self.include_collections = include_collections
        self.save_all = save_all
        self.save_all_workers = str(include_workers).lower() == "all"
        self.init_step = -1
        self.mode = ModeKeys.GLOBAL
        self.hyperparameters = hyperparameters
        self.train_data = _load_data(train_data)
        self.validation_data = _load_data(validation_data)

    @classmethod
    def create_from_json_file(cls, json_file_path=None, **kwargs):
        """The hook of a SageMaker job (see ``smdebug_rs.Hook.create_from_json_file``)."""
        return cls(_hook=_BaseHook.create_from_json_file(json_file_path, framework="xgboost"),
                   **kwargs)

    # The smdebug_rs.Hook calls, for code that saves more through the callback.
    @property
    def out_dir(self):
        """The trial's folder or prefix."""
        return self.hook.out_dir

    @property
    def worker(self):
        """This worker's name."""
        return self.hook.worker

    @property
    def dry_run(self):
        """Whether nothing is written."""
        return self.hook.dry_run

    @property
    def step(self):
        """The boosting round being saved (-1 before the first)."""
        return self.hook.step_num

    @property
    def tensorboard_dir(self):
        """Where TensorBoard files go (see ``smdebug_rs.Hook.tensorboard_dir``)."""
        return self.hook.tensorboard_dir

    def set_mode(self, mode):
        """Switches the mode from the next round on (``smdebug_rs.Hook.set_mode``): what
        ``save_scalar`` and the next rounds write is of that mode."""
        self.hook.set_mode(mode)
        self.mode = mode

    def get_collection(self, name, create=True):
        """Collection ``name`` (see ``smdebug_rs.Hook.get_collection``)."""
        return self.hook.get_collection(name, create)

    def get_collections(self):
        """``{name: Collection}`` of the hook (see ``smdebug_rs.Hook.get_collections``)."""
        return self.hook.get_collections()

    def add_collection(self, collection):
        """Gives ``collection`` to the hook (see ``smdebug_rs.Hook.add_collection``)."""
        self.hook.add_collection(collection)

    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        """``smdebug_rs.Hook.save_scalar``."""
        self.hook.save_scalar(name, value, sm_metric, timestamp)

    def save_tensor(self, tensor_name, tensor_value, collections_to_write="default"):
        """``smdebug_rs.Hook.save_tensor``."""
        self.hook.save_tensor(tensor_name, tensor_value, collections_to_write)

    def should_stop(self):
        """Whether the stop signal has appeared."""
        return self.hook.should_stop()

    def close(self):
        """Ends the trial (``after_training`` does it)."""
        return self.hook.close()

    # -- the callback ------------------------------------------------------------------

    def after_iteration(self, model, epoch, evals_log):
        h = self.hook
        h.step()
        save = h.save
        for name, value in (self.hyperparameters or {}).items():
            save(f"hyperparameters/{name}", value)
        # metrics and losses: the same tensors, each saved once for every due collection
        # that contains it (the original writes metrics, and losses when metrics are not due).
        for eval_name, results in evals_log.items():
            for key, data in results.items():
                save(f"{eval_name}-{key}", data[-1])
        if self.validation_data is not None:
            if h.should_save_tensor("predictions"):
                save("predictions", model.predict(self.validation_data))
            if h.should_save_tensor("labels"):
                save("labels", self.validation_data.get_label())
        booster = getattr(model, "booster", None)
        trees_ok = booster is None or booster in {"gbtree", "dart"}
        if trees_ok and h.anything_due():
            # Asked about a feature the model uses: asking about one it does not use yet
            # would put that name in the collections (the `all` one of save_all), as if saved.
            for kind in _IMPORTANCE_TYPES:
                scores = model.get_score(importance_type=kind)
                if not scores or not h.should_save_tensor(
                        f"feature_importance/{kind}/{next(iter(scores))}"):
                    break
                total = sum(scores.values())
                for feature, score in scores.items():
                    save(f"feature_importance/{kind}/{feature}", score / total)
        if trees_ok and h.should_save_tensor("trees/Tree"):
            for column, values in parse_tree_model(model, epoch).items():
                save(f"trees/{column}", np.array(values))
        if self.train_data is not None:
            names = _feature_names(model) + ["bias"]
            full = h.should_save_tensor(f"full_shap/{names[0]}")
            avg = h.should_save_tensor(f"average_shap/{names[0]}")
            if full or avg:
                shap = model.predict(self.train_data, pred_contribs=True)
                if full:
                    # As the original: every name holds the whole matrix.
                    for name in names:
                        save(f"full_shap/{name}", shap)
                if avg:
                    mean = np.mean(shap, axis=tuple(range(shap.ndim - 1)))
                    for i, name in enumerate(names):
                        save(f"average_shap/{name}", mean[i])
        return bool(h.should_stop())

    def after_training(self, model):
        self.hook.close()
        return model
