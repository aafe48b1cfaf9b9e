"""One sequence of hook calls, made through smdebug_rs.Hook or through the original
smdebug 1.0.34 hook machinery (test_hook.py compares the two trials).

  same_calls.py {smdebug,smdebug_rs} OUT

The original has no framework-agnostic hook class: `OriginalHook` is its `CallbackHook`
with what its MXNet hook adds for numpy values (the MXNet default collections, numpy
reductions, `make_numpy_array`), driven as its PyTorch hook drives a step
(`forward_pre_hook`: close the previous step's writer, prepare the collections, increment
the step, open the writer, export the collections after the first saved step; custom
tensors are written at the end of a saved step). Event wall times are `BASE + step` on
both sides, so the event files can be compared byte for byte.
"""

import os
import sys

import numpy as np

BASE = 1_700_000_000.0
STEPS = [("TRAIN", 4), ("EVAL", 2), ("TRAIN", 3)]


def calls(h, smd, ModeKeys):
    """The sequence: `h` has set_mode, step (`next_step` in the original, whose `step` is the
    step number), save, save_tensor, save_scalar, close."""
    next_step = getattr(h, "next_step", None) or h.step
    rng = np.random.default_rng(7)
    for mode, n in STEPS:
        h.set_mode(getattr(ModeKeys, mode))
        for _ in range(n):
            next_step()
            h.save("dense0_weight", rng.standard_normal((5, 4)).astype(np.float32))
            h.save("dense0_bias", rng.standard_normal(4))
            h.save("gradient/dense0_weight", rng.standard_normal((5, 4)).astype(np.float32))
            h.save("act/relu_output", rng.integers(-3, 3, (2, 3)).astype(np.int32))
            h.save("softmaxcrossentropyloss0_output_0", np.float32(rng.random()))
            h.save("not_in_any_collection", np.ones(3))
            h.save_tensor("custom/lr", np.array([0.1], dtype=np.float64), "custom")
            h.save_scalar("accuracy", float(rng.random()))
    h.close()


def configs(smd):
    return dict(
        save_config=smd.SaveConfig(save_interval=2),
        reduction_config=smd.ReductionConfig(reductions=["min", "max", "mean"],
                                             abs_reductions=["max"], norms=["l1", "l2"],
                                             save_raw_tensor=True, save_shape=True),
        include_collections=["weights", "biases", "gradients", "custom", "losses"],
    )


def configure_custom(c, smd):
    c.include("^act/")
    c.save_config = smd.SaveConfig(save_interval=1)
    c.reduction_config = smd.ReductionConfig(reductions=["sum"], save_raw_tensor=True)


def run_ours(out):
    import smdebug_rs as smd

    h = smd.Hook(out, worker="worker_0", num_workers=1, wall_time_base=BASE, **configs(smd))
    configure_custom(h.get_collection("custom"), smd)
    calls(h, smd, smd.modes)


def original_hook_class():
    """The original's CallbackHook made a numpy hook (see the module docstring)."""
    from smdebug.core.collection import CollectionKeys
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.hook import CallbackHook
    from smdebug.core.reductions import get_numpy_reduction
    from smdebug.core.utils import make_numpy_array
    from smdebug.profiler.profiler_config_parser import get_profiler_config_parser

    class OriginalHook(CallbackHook):
        def __init__(self, out_dir, **kw):
            cm = CollectionManager()
            for c in (CollectionKeys.ALL, CollectionKeys.DEFAULT, CollectionKeys.WEIGHTS,
                      CollectionKeys.BIASES, CollectionKeys.GRADIENTS, CollectionKeys.LOSSES):
                cm.create_collection(c)
            cm.get(CollectionKeys.WEIGHTS).include("^(?!gradient).*weight")
            cm.get(CollectionKeys.BIASES).include("^(?!gradient).*bias")
            cm.get(CollectionKeys.GRADIENTS).include("^gradient")
            cm.get(CollectionKeys.LOSSES).include(".*loss._(?!input).*output")
            super().__init__(collection_manager=cm,
                             default_include_collections=[CollectionKeys.LOSSES],
                             profiler_config_parser=get_profiler_config_parser("MXNET"),
                             out_dir=out_dir, **kw)
            self.worker = self._get_worker_name()

        def _get_worker_name(self):
            return "worker_0"

        def _get_num_workers(self):
            return 1

        def _is_not_supported(self):
            return False

        def _get_default_collections(self):
            return {"all", "default", "weights", "biases", "gradients", "losses"}

        @staticmethod
        def _get_reduction_of_data(reduction_name, tensor_value, tensor_name, abs):
            return get_numpy_reduction(reduction_name, tensor_value, abs)

        @staticmethod
        def _make_numpy_array(tensor_value):
            return make_numpy_array(tensor_value)

        def _export_model(self):
            pass

        # forward_pre_hook's step boundary
        def next_step(self):
            if self.writer is not None:
                self._save_custom_tensors_post_step()
                self._close_writers()
            if not self.prepared_collections:
                self._prepare_collections()
                self.prepared_collections = True
            self._increment_step()
            if self._get_collections_to_save_for_step():
                self._initialize_writers()
            if self.last_saved_step is not None and not self.exported_collections:
                self.export_collections()
                self.exported_collections = True

        def save(self, name, value):
            if self._get_collections_to_save_for_step():
                self._save_for_tensor(name, value)
                self.last_saved_step = self.step

        def close(self):
            if self.writer is not None:
                self._save_custom_tensors_post_step()
            super().close()

    return OriginalHook


def run_original(out):
    import smdebug as smd
    from smdebug.core.modes import ModeKeys
    from smdebug.core.tfevent import event_file_writer

    OriginalHook = original_hook_class()
    hook = None

    class Clock:
        """`time` for the event writer: wall time BASE + the hook's step."""

        def __getattr__(self, name):
            import time
            return getattr(time, name)

        @staticmethod
        def time():
            return BASE + (hook.step if hook is not None else 0)

    import smdebug.core.hook as core_hook

    event_file_writer.time = Clock()
    core_hook.time = Clock()  # save_scalar stamps its value with time.time()
    hook = OriginalHook(out, **configs(smd))
    configure_custom(hook.get_collection("custom"), smd)
    calls(hook, smd, ModeKeys)


if __name__ == "__main__":
    which, out = sys.argv[1], sys.argv[2]
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    (run_original if which == "smdebug" else run_ours)(out)
