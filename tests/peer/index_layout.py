"""Trial file names as the real smdebug 1.0.34 builds them, for comparison with smdebug-index.

Usage: index_layout.py REQUEST.json

REQUEST.json: {"names": [[step, worker], ...], "locations": [str, ...], "devices": [str, ...],
               "reductions": [[tensor, op, abs], ...], "reduction_records": [str, ...]}

Prints one JSON document:
{"names": [{"index", "events", "tensorboard_train", "collections"}, ...],   # relative keys
 "locations": [{"is_s3": [is_s3, bucket, prefix],                        # core.utils.is_s3
                "key": str,   # s3 only: the key TSAccessS3 writes for the trial file KEY_OF
                "path": str,  # local only: os.path.expanduser, as the hook and LocalTrial do
                "stripped": str}, ...],                                   # create_trial's strip
 "devices": [serialize_tf_device(d), ...],
 "reduction_names": [get_reduction_tensor_name(tensor, op, abs), ...],
 "reversed": [[tensor, op, abs] or null (IndexError), ...],  # reverse_reduction_tensor_name
 "python_whitespace": [code point, ...],                     # every c with chr(c).strip() == ""
 "constants": {"end_of_job", "claim", "stop_signal_env", "default_tensorboard_dir"}}
"""

import json
import os
import sys
from unittest import mock

# A trial file whose object key the S3 writer computes for each s3:// location.
KEY_OF = "index/000000000/000000000000_worker_0.json"


def s3_writer_key(trial_dir):
    """The key smdebug's S3 writer uses for KEY_OF under trial_dir: FileWriter joins the trial
    dir and the file with os.path.join, is_s3 splits off the bucket, and TSAccessS3's
    constructor normalises the key. boto3 is stubbed so the constructor contacts nothing."""
    from smdebug.core.access_layer import s3 as s3_access
    from smdebug.core.utils import is_s3

    _, bucket, key = is_s3(os.path.join(trial_dir, KEY_OF))
    with mock.patch.object(s3_access, "boto3"):
        return s3_access.TSAccessS3(bucket, key).key_name


def location(loc):
    from smdebug.core.utils import is_s3

    s3, bucket, prefix = is_s3(loc)
    out = {"is_s3": [s3, bucket, prefix], "stripped": loc.strip()}
    if s3:
        out["key"] = s3_writer_key(loc)
    else:
        out["path"] = os.path.expanduser(loc)
    return out


def reversed_name(name):
    from smdebug.core.reductions import reverse_reduction_tensor_name

    try:
        return list(reverse_reduction_tensor_name(name))
    except IndexError:
        return None


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
    from smdebug.core.reductions import get_reduction_tensor_name
    from smdebug.core.utils import get_path_to_collections, serialize_tf_device

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
        "locations": [location(loc) for loc in request["locations"]],
        "devices": [serialize_tf_device(d) for d in request["devices"]],
        "reduction_names": [
            get_reduction_tensor_name(t, op, abs) for t, op, abs in request["reductions"]
        ],
        "reversed": [reversed_name(n) for n in request["reduction_records"]],
        "python_whitespace": [c for c in range(0x110000) if chr(c).strip() == ""],
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
