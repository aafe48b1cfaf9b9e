"""Trial file names as the real smdebug 1.0.34 builds them, for comparison with smdebug-index.

Usage: index_layout.py REQUEST.json

REQUEST.json: {"names": [[step, worker], ...], "locations": [str, ...], "devices": [str, ...]}

Prints one JSON document:
{"names": [{"index", "events", "tensorboard_train", "collections"}, ...],   # relative keys
 "locations": [[is_s3, bucket, prefix], ...],                             # core.utils.is_s3
 "devices": [serialize_tf_device(d), ...],
 "constants": {"end_of_job", "claim", "stop_signal_env", "default_tensorboard_dir"}}
"""

import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    import smdebug  # noqa: F401
    from smdebug.core.logger import get_logger

    for h in get_logger().handlers:
        if getattr(h, "stream", None) is sys.stdout:
            h.setStream(sys.stderr)

    from smdebug.core.access_layer.utils import (
        END_OF_JOB_FILENAME,
        ENV_RULE_STOP_SIGNAL_FILENAME,
    )
    from smdebug.core.config_constants import CLAIM_FILENAME
    from smdebug.core.hook_utils import get_tensorboard_dir
    from smdebug.core.locations import (
        IndexFileLocationUtils,
        TensorboardFileLocation,
        TensorFileLocation,
    )
    from smdebug.core.modes import ModeKeys
    from smdebug.core.utils import get_path_to_collections, is_s3, serialize_tf_device

    names = []
    for step, worker in request["names"]:
        names.append(
            {
                "index": IndexFileLocationUtils.get_index_key_for_step("", step, worker),
                "events": TensorFileLocation(step, worker).get_file_location(),
                "tensorboard_train": TensorboardFileLocation(
                    step, worker, mode=ModeKeys.TRAIN
                ).get_file_location(),
                "collections": os.path.join(
                    get_path_to_collections(""), f"{worker}_collections.json"
                ),
            }
        )
    out = {
        "names": names,
        "locations": [list(is_s3(loc)) for loc in request["locations"]],
        "devices": [serialize_tf_device(d) for d in request["devices"]],
        "constants": {
            "end_of_job": END_OF_JOB_FILENAME,
            "claim": CLAIM_FILENAME,
            "stop_signal_env": ENV_RULE_STOP_SIGNAL_FILENAME,
            "default_tensorboard_dir": os.path.relpath(
                get_tensorboard_dir(export_tensorboard=True, tensorboard_dir=None, out_dir="out"),
                "out",
            ),
        },
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
