#!/usr/bin/env python3
"""Read event files with the REAL smdebug 1.0.34 reader and print what it saw as JSON.

  read_events.py FILE... [--max-inline 64]

Uses smdebug.core.tfevent.event_file_reader.EventFileReader with its default checks
(check="minimal": the length CRC must match and the footer must be smdebug's magic
constant). Prints a JSON list with one object per file, in argument order:

  {"file": PATH, "records": [RECORD...]}
  {"file": PATH, "records": [RECORD...], "error": {"type", "message"}}   # smdebug raised

RECORD = {"tag", "step", "mode", "mode_step", "dtype", "shape", "sha256", "data"?}
(dtype: numpy name of the array smdebug returned, "str" for strings; sha256 and data as in
the dump schema: data only when size <= --max-inline). When smdebug raises, "records" holds
what it read before the error.
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ inside the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def read_file(path, max_inline):
    import numpy as np
    from smdebug.core.tfevent.event_file_reader import EventFileReader

    records = []
    try:
        for tag, step, data, mode, mode_step in EventFileReader(path).read_tensors():
            if data is None:
                records.append({"tag": tag, "step": step, "mode": mode.name,
                                "mode_step": mode_step, "none": True})
                continue
            arr = np.asarray(data)
            rec = {
                "tag": tag,
                "step": int(step),
                "mode": mode.name,
                "mode_step": int(mode_step),
                "dtype": pc.dtype_name(arr),
                "shape": [int(d) for d in arr.shape],
                "sha256": pc.array_sha256(arr),
            }
            if arr.size <= max_inline:
                rec["data"] = pc.inline_data(arr)
            records.append(rec)
    except Exception as e:  # smdebug's failure is the observation
        return {"file": path, "records": records, **pc.error_obj(e)}
    return {"file": path, "records": records}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--max-inline", type=int, default=64)
    args = ap.parse_args(argv)
    pc.import_smdebug()
    out = [read_file(f, args.max_inline) for f in args.files]
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
