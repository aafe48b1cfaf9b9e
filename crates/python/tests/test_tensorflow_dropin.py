"""The Keras hook's public API against the original's. The original's Keras hook does not
import with the TensorFlow these tests run (it needs TensorFlow ≤ 2.12, Keras 2): it is read
from its source in the peer venv (api_walk.source_differences)."""

import os
import subprocess

from conftest import import_tensorflow

import_tensorflow("the Keras hook API walk")

from api_walk import HOOK_MACHINERY, source_differences  # noqa: E402

# The original's TensorFlow machinery: graph-mode (TF1) state, its distribution-strategy
# and device bookkeeping, the profiler (timeline, framework metrics: not part of
# smdebug_rs), and the calls its own optimizer and tape wrappers make into it.
KERAS_MACHINERY = {
    "callable_cache", "device_map", "distribution_strategy", "graph",
    "has_logged_unsupported_tensors_in_non_eager_execution", "has_registered_model",
    "is_hook_closed", "optimizer", "prepared_gradient_tape_collections",
    "prepared_tf2_collections", "saved_layers", "step_incremented_in_on_train_begin",
    "tensor_refs_to_save_this_step", "tf_config_json", "writer_map", "warm_up_completed",
    "is_dataloader_profiling", "is_detailed_profiling",
    "is_profiler_enabled_for_native_training", "profiler", "profiling_end",
    "profiling_end_batch", "profiling_start_batch", "start", "tf_profiler",
    "tf_profiler_start_time_in_micros", "save_smdebug_logs", "save_tape_logs",
    "set_gradients", "set_optimizer_variables",
    # Keras calls these positionally; ours keep Keras's parameter name (epoch), the
    # original's says batch.
    "on_epoch_begin", "on_epoch_end",
}


def original_sources():
    peer = os.environ.get("SMDEBUG_PEER_PYTHON")
    assert peer, "SMDEBUG_PEER_PYTHON (the peer venv's python, set by cargo xtask) is unset"
    root = subprocess.run(
        [peer, "-c", "import importlib.util as u; "
         "print(u.find_spec('smdebug').submodule_search_locations[0])"],
        capture_output=True, text=True, check=True).stdout.strip()
    return [os.path.join(root, p) for p in
            ("tensorflow/keras.py", "tensorflow/base_hook.py", "core/hook.py")]


def test_the_keras_hooks_api_is_the_originals(tmp_path):
    import smdebug_rs.tensorflow as ours

    hook = ours.KerasHook(out_dir=str(tmp_path / "t"))
    try:
        found = source_differences(original_sources(), "KerasHook", ours.KerasHook, hook,
                                   HOOK_MACHINERY | KERAS_MACHINERY)
    finally:
        hook.close()
    assert not found, "\n".join(found)


def test_add_to_collection_names_a_variable_as_the_hook_does(tmp_path):
    import keras

    import smdebug_rs.tensorflow as ours

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")])
    hook = ours.KerasHook(out_dir=str(tmp_path / "t"))
    hook.register_model(model)
    hook.add_to_collection("mine", model.layers[0].kernel)
    hook.add_to_collection("mine", ["extra"])
    assert sorted(hook.get_collection("mine").tensor_names) == ["dense/kernel:0", "extra"]
    hook.close()
