"""What the real smdebug 1.0.34 understands of a trial's file names and index files.

Usage: index_read.py TRIAL_DIR

Prints one JSON document on stdout:

{"files": {REL_PATH: {...}}, "index": {REL_PATH: {TENSOR: ENTRY}}}

* "files": for every file under TRIAL_DIR (relative path, "/"-separated):
  - "worker": smdebug's parse_worker_name_from_file(<absolute path>) for index/event-like
    names (under index/ or events/), or {"error": TYPE} if it raises;
  - "step": IndexFileLocationUtils.parse_step_from_index_file_name(<absolute path>), or
    {"error": TYPE};
  - "collections_worker": get_worker_name_from_collection_file(<absolute path>) for files
    under collections/, or {"error": TYPE}.
* "index": for every file the local IndexReader lists (LocalIndexReader.list_index_files),
  the dictionary smdebug's own IndexReader._update_tensors_from_json builds from it, flattened
  to {tensor name: entry} (one step and worker per file; the LAST entry of a name wins, and a
  shape entry replaces a location, as in smdebug). A location entry is
  {"kind": "location", "mode", "mode_step", "event_file_name" (relative to TRIAL_DIR),
  "start_idx", "length", "worker"}; a shape entry is {"kind": "shape", "mode", "mode_step",
  "original_name", "shape"}. A file the reader rejects gives {"error": TYPE, "message": ...}.
"""

import json
import os
import sys


def quiet_import():
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    import smdebug  # noqa: F401
    from smdebug.core.logger import get_logger

    logger = get_logger()
    for h in logger.handlers:
        if getattr(h, "stream", None) is sys.stdout:
            h.setStream(sys.stderr)


def error_of(e):
    return {"error": type(e).__name__, "message": str(e)}


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    trial = os.path.abspath(sys.argv[1])
    quiet_import()
    from smdebug.core.index_reader import LocalIndexReader
    from smdebug.core.locations import IndexFileLocationUtils, TensorLocation
    from smdebug.core.utils import (
        get_worker_name_from_collection_file,
        parse_worker_name_from_file,
    )

    files = {}
    for root, _dirs, names in os.walk(trial):
        for name in names:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, trial).replace(os.sep, "/")
            info = {}
            top = rel.split("/", 1)[0]
            if top in ("index", "events"):
                try:
                    info["worker"] = parse_worker_name_from_file(full)
                except Exception as e:  # noqa: BLE001  (the type is the result)
                    info["worker"] = error_of(e)
                try:
                    info["step"] = IndexFileLocationUtils.parse_step_from_index_file_name(full)
                except Exception as e:  # noqa: BLE001
                    info["step"] = error_of(e)
            if top == "collections":
                try:
                    info["collections_worker"] = get_worker_name_from_collection_file(full)
                except Exception as e:  # noqa: BLE001
                    info["collections_worker"] = error_of(e)
            files[rel] = info

    reader = LocalIndexReader(trial)
    index = {}
    for full in reader.list_index_files():
        rel = os.path.relpath(full, trial).replace(os.sep, "/")
        try:
            step = IndexFileLocationUtils.parse_step_from_index_file_name(full)
            worker = parse_worker_name_from_file(full)
            with open(full, "rb") as f:
                data = f.read()
            tensors = reader._update_tensors_from_json({}, step, data, trial, worker)
        except Exception as e:  # noqa: BLE001
            index[rel] = error_of(e)
            continue
        flat = {}
        for tname, by_step in tensors.items():
            (by_worker,) = by_step.values()
            (obj,) = by_worker.values()
            if "tensor_location" in obj:
                loc = obj["tensor_location"]
                assert isinstance(loc, TensorLocation)
                flat[tname] = {
                    "kind": "location",
                    "mode": loc.mode.name,
                    "mode_step": loc.mode_step,
                    "event_file_name": os.path.relpath(loc.event_file_name, trial).replace(
                        os.sep, "/"
                    ),
                    "start_idx": loc.start_idx,
                    "length": loc.length,
                    "worker": loc.worker,
                }
            else:
                shape = obj["tensor_shape"]
                flat[tname] = {
                    "kind": "shape",
                    "mode": shape.mode.name,
                    "mode_step": shape.mode_step,
                    "original_name": shape.original_name,
                    "shape": list(shape.shape),
                }
        index[rel] = flat

    json.dump({"files": files, "index": index}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
