#!/usr/bin/env python3
"""What the real smdebug 1.0.34 trial says a trial's collections hold, with the collections
files listed in a chosen order.

Usage: trial_collections.py TRIAL_DIR ORDER        (ORDER: "ascending" or "descending")

smdebug's LocalTrial takes the collections of the first file that
``list_collection_files_in_directory`` returns, that is the first that ``os.walk`` yields:
an order the file system decides. This script makes ``os.walk`` yield file names sorted in
ORDER, so that a test can show that the original's answer depends on it when workers'
collections files differ.

Prints one JSON document:
{"order": ORDER, "files": [file names in the order read], "num_workers": N,
 "collections": {NAME: {"tensor_names": sorted names in the collection object,
                        "by_filter": trial.tensor_names(collection=NAME)}}}
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def main(argv):
    if len(argv) != 2 or argv[1] not in ("ascending", "descending"):
        sys.stderr.write(__doc__)
        return 2
    path, order = argv
    pc.import_smdebug()
    real_walk = os.walk

    def walk(top, *args, **kwargs):
        for root, dirs, files in real_walk(top, *args, **kwargs):
            yield root, dirs, sorted(files, reverse=(order == "descending"))

    os.walk = walk
    from smdebug.core.utils import get_path_to_collections, list_collection_files_in_directory
    from smdebug.trials import create_trial

    files = list_collection_files_in_directory(get_path_to_collections(path))
    trial = create_trial(path)
    collections = {}
    for name, c in sorted(trial.collections().items()):
        collections[name] = {
            "tensor_names": sorted(c.tensor_names),
            "by_filter": sorted(trial.tensor_names(collection=name)),
        }
    json.dump(
        {
            "order": order,
            "files": [os.path.basename(f) for f in files],
            "num_workers": trial.num_workers,
            "collections": collections,
        },
        sys.stdout,
        sort_keys=True,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
