"""``smdebug_rs.tensorflow``: a drop-in for ``smdebug.tensorflow``'s ``KerasHook`` on
TensorFlow 2 with Keras 3, writing through the Rust hook. See
:mod:`smdebug_rs.tensorflow.keras` and docs/src/python.md ("TensorFlow / Keras").

    import smdebug_rs.tensorflow as smd
    hook = smd.KerasHook(out_dir="/tmp/run")
    model.fit(x_train, y_train, epochs=2, callbacks=[hook])
    model.evaluate(x_test, y_test, callbacks=[hook])
    trial = smd.create_trial(out_dir="/tmp/run")

``SessionHook`` and ``EstimatorHook`` (TF1 sessions and estimators) are not provided.
"""

from smdebug_rs.core import framework_api as _api
from smdebug_rs.core.framework_api import *  # noqa: F401,F403 (the common names, _api.__all__)
from smdebug_rs.tensorflow.collection import Collection, CollectionKeys
from smdebug_rs.tensorflow.keras import KerasHook
from smdebug_rs.tensorflow.singleton_utils import del_hook, get_collection, get_hook, set_hook
from smdebug_rs.trials import create_trial as _create_trial

__all__ = ["KerasHook"] + _api.__all__ + _api.FRAMEWORK_API


# Replaces the star-imported create_trial with one that also takes out_dir=.
def create_trial(path=None, name=None, *, out_dir=None, **kwargs):  # type: ignore[no-redef]
    """``smdebug_rs.trials.create_trial``; also takes the trial's location as ``out_dir=``
    (the keyword the original's README example passes)."""
    if path is None:
        path = out_dir
    elif out_dir is not None:
        raise TypeError("create_trial() got both path and out_dir")
    if path is None:
        raise TypeError("create_trial() needs path (or out_dir)")
    return _create_trial(path, name=name, **kwargs)
