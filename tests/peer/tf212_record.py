#!/usr/bin/env python3
"""Records what the original smdebug 1.0.34 KerasHook writes on TensorFlow 2.12.1 / Keras 2
(the last TensorFlow it runs on) for keras_side_by_side.py's runs, as
recordings/keras_tf212.json, which crates/python/tests/test_tensorflow_vs_original.py
compares with what smdebug_rs.tensorflow writes on TensorFlow 2.21 / Keras 3.

Too heavy for every CI run (a second TensorFlow), so it is run by hand, once, in a venv
of tf212-requirements.txt:

  python3.11 -m venv ~/.cache/smdebug-rs/tf212-venv
  ~/.cache/smdebug-rs/tf212-venv/bin/pip install --no-deps -r tests/peer/tf212-requirements.txt
  ~/.cache/smdebug-rs/tf212-venv/bin/python tests/peer/tf212_record.py

The recording is deterministic (numpy data and initial weights, one thread, no
shuffling); run again, it gives the same file.
"""

import json
import os
import sys
import tempfile

sys.dont_write_bytecode = True
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import smdebug  # noqa: E402
import smdebug.tensorflow as smd  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

import keras_side_by_side as script  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "recordings",
                                                             "keras_tf212.json")
    doc = {"generator": {"tensorflow": tf.__version__, "keras": tf.keras.__version__,
                         "smdebug": smdebug.__version__},
           "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        for run in script.RUNS:
            trial = os.path.join(d, run)
            script.train(smd, trial, run)
            doc["runs"][run] = script.record(create_trial, trial)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
