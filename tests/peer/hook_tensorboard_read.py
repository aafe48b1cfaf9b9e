#!/usr/bin/env python3
"""Load the TensorBoard folder an smdebug-rs hook wrote with the REAL `tensorboard`
package's EventAccumulator, one accumulator per mode folder (TRAIN, EVAL, ...), and print
what it saw as JSON:

  {MODE: {"scalars": {tag: [{"step", "value", "wall_time"}]},
          "histograms": {tag: [{"step", "min", "max", "num", "sum", "sum_squares",
                                "buckets", "bucket_counts_total"}]}}}

  hook_tensorboard_read.py TB_DIR

Runs under the tools venv (SMDEBUG_TOOLS_PYTHON). The event files' payload CRCs are
checked by tensorboard's own record reader; a bad CRC makes it stop reading (and then the
counts the test expects are missing).
"""

import json
import os
import sys


def main():
    tb_dir = sys.argv[1]
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator,
        HISTOGRAMS,
        SCALARS,
    )

    out = {}
    for mode in sorted(os.listdir(tb_dir)):
        path = os.path.join(tb_dir, mode)
        if not os.path.isdir(path):
            continue
        scalars, histograms = {}, {}
        # One file per saved step: EventAccumulator reads every file of the folder in
        # name order (the step is zero-padded in the name).
        acc = EventAccumulator(path, size_guidance={SCALARS: 0, HISTOGRAMS: 0})
        acc.Reload()
        tags = acc.Tags()
        for tag in tags.get("scalars", []):
            scalars[tag] = [
                {"step": e.step, "value": e.value, "wall_time": e.wall_time}
                for e in acc.Scalars(tag)
            ]
        for tag in tags.get("histograms", []):
            histograms[tag] = [
                {
                    "step": e.step,
                    "min": e.histogram_value.min,
                    "max": e.histogram_value.max,
                    "num": e.histogram_value.num,
                    "sum": e.histogram_value.sum,
                    "sum_squares": e.histogram_value.sum_squares,
                    "buckets": len(e.histogram_value.bucket),
                    "bucket_counts_total": sum(e.histogram_value.bucket),
                }
                for e in acc.Histograms(tag)
            ]
        out[mode] = {"scalars": scalars, "histograms": histograms}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
