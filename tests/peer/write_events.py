#!/usr/bin/env python3
"""Write event files with the REAL smdebug 1.0.34 FileWriter from an exact description.

  write_events.py SPEC.json TRIAL_DIR

SPEC = {"files": [{"step": 3, "worker": "worker_0", "records": [RECORD...]}...]}
RECORD = {"tag", "dtype" (numpy name or "str"), "shape", "hex" (the C-order little-endian
          element bytes, for numeric dtypes) or "strings" (for "str"), "mode" (TRAIN, EVAL,
          PREDICT, GLOBAL), "mode_step", "wall_time" (non-zero: FileWriter replaces 0 by now)}

Each entry of "files" is one FileWriter(trial_dir, step=step, worker=worker), i.e. one
events/ file (plus its index file); its records are written in order with write_tensor.
Values travel as bytes so that nothing is lost to JSON number formatting.
Prints a JSON list: for each entry of "files", the event file path relative to TRIAL_DIR.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ inside the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def array_of(rec):
    import numpy as np

    if rec["dtype"] == "str":
        return np.array(rec["strings"], dtype=str).reshape(rec["shape"])
    data = bytes.fromhex(rec["hex"])
    return np.frombuffer(data, dtype=np.dtype(rec["dtype"]).newbyteorder("<")).reshape(
        rec["shape"]).copy()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    spec_path, trial_dir = argv
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    pc.import_smdebug()
    from smdebug.core.modes import ModeKeys
    from smdebug.core.writer import FileWriter

    written = []
    for entry in spec["files"]:
        with FileWriter(trial_dir=trial_dir, step=entry["step"], worker=entry["worker"]) as fw:
            for rec in entry["records"]:
                fw.write_tensor(tdata=array_of(rec), tname=rec["tag"], mode=ModeKeys[rec["mode"]],
                                mode_step=rec["mode_step"], timestamp=float(rec["wall_time"]))
            written.append(os.path.relpath(fw.event_file_path, trial_dir))
    json.dump(written, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
