#!/usr/bin/env python3
"""The rows `smdebug export` should write for a trial, built with the REAL smdebug 1.0.34
reader (`create_trial`) and numpy statistics; printed as JSON.

  export_reference.py TRIAL [--values none|small|all]

Prints {"tensors": [ROW...], "reductions": [...], "scalars": [...], "steps": [...]} with
the columns of docs/src/export.md (the trial name left out). Each value smdebug returns is
reduced here with numpy: min, max, mean, std (population), l1 = sum|x|, l2 = sqrt(sum x^2)
over the finite elements in float64, and the NaN/+Inf/-Inf/zero counts. Where smdebug
cannot read a raw value the row holds {"python_error": TYPE} instead of the value columns
(the Rust side reads more than the original; see the trial crate's README). Wall times come
from the event files read with smdebug's EventFileReader. Non-finite floats are the strings
"NaN", "Infinity", "-Infinity".
"""

import argparse
import json
import os
import re
import sys
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

STAT_NAMES = ["min", "max", "mean", "std", "l1", "l2"]
SMALL = 64


def jf(x):
    return None if x is None else pc.json_float(float(x))


def stats(arr):
    import numpy as np

    a = np.asarray(arr)
    if a.dtype.kind not in "biuf":
        return None
    f = a.astype(np.float64).reshape(-1)
    fin = f[np.isfinite(f)]
    have = fin.size > 0
    out = {
        "nan_count": int(np.isnan(f).sum()),
        "pos_inf_count": int(np.isposinf(f).sum()),
        "neg_inf_count": int(np.isneginf(f).sum()),
        "zero_count": int((f == 0).sum()),
    }
    vals = {
        "min": fin.min() if have else None,
        "max": fin.max() if have else None,
        "mean": fin.mean() if have else None,
        "std": fin.std() if have else None,
        "l1": np.abs(fin).sum() if have else None,
        "l2": np.sqrt((fin * fin).sum()) if have else None,
    }
    out.update({k: jf(v) for k, v in vals.items()})
    return out


def scalar_of(v):
    import numpy as np

    a = np.asarray(v)
    if a.size != 1 or a.dtype.kind not in "biuf":
        return None
    return jf(a.reshape(-1)[0])


def wall_times(path, workers):
    """(tag, step, worker) -> wall_time, and (step, worker) -> wall time of the first
    tensor record of that step's event file."""
    from smdebug.core.tfevent.event_file_reader import EventFileReader
    from smdebug.core.utils import serialize_tf_device

    # Event file names hold TF device names serialized (`/` is not allowed in a name).
    by_file_name = {serialize_tf_device(w): w for w in workers}

    by_record, first = {}, {}
    events_dir = os.path.join(path, "events")
    for root, _dirs, files in os.walk(events_dir):
        for fname in sorted(files):
            m = re.match(r"^(\d+)_(.+)\.tfevents$", fname)
            if not m:
                continue
            step, worker = int(m.group(1)), m.group(2)
            worker = by_file_name.get(worker, worker)
            for ev in EventFileReader(os.path.join(root, fname)).read_events():
                if not ev.HasField("summary") or not ev.summary.value:
                    continue
                tag = ev.summary.value[0].tag
                by_record[(tag, step, worker)] = ev.wall_time
                first.setdefault((step, worker), ev.wall_time)
    return by_record, first


def build(path, values_mode):
    import numpy as np

    pc.import_smdebug()
    from smdebug.core.modes import ModeKeys
    from smdebug.exceptions import TensorUnavailableForStep
    from smdebug.trials import create_trial

    tr = create_trial(path)
    names = tr.tensor_names()
    members = {n: [] for n in names}
    for c in sorted(tr.collections()):
        for n in tr.tensor_names(collection=c):
            members.setdefault(n, []).append(c)
    rec_wall, first_wall = wall_times(path, tr.workers())
    out = {"tensors": [], "reductions": [], "scalars": [], "steps": []}
    step_keys = {}
    for name in names:
        T = tr.tensor(name)
        colls = sorted(members.get(name, []))
        is_scalar = name.startswith("scalar/") or "losses" in colls or "scalars" in colls
        for g in T.steps(mode=ModeKeys.GLOBAL, show_incomplete_steps=True):
            mode, ms = tr.mode_modestep(g)
            for w in sorted(T.workers(ms, mode=mode)):
                key = {"worker": w, "mode": mode.name, "mode_step": int(ms), "step": int(g)}
                step_keys[(int(g), w)] = (mode.name, int(ms))
                row = dict(key, tensor=name, collections=colls)
                saved = T.reduction_values(ms, mode=mode, worker=w)
                for (red, is_abs), v in sorted(saved.items()):
                    out["reductions"].append(dict(
                        key, tensor=name, reduction=red, abs=bool(is_abs),
                        dtype=pc.dtype_name(np.asarray(v)), value=scalar_of(v)))
                try:
                    v = T.value(ms, mode=mode, worker=w)
                except TensorUnavailableForStep:
                    v = None
                except Exception as e:  # smdebug cannot decode it: Rust reads more
                    row["python_error"] = type(e).__name__
                    out["tensors"].append(row)
                    continue
                if v is None:
                    try:
                        shape = [int(d) for d in T.shape(ms, mode=mode, worker=w)]
                    except Exception:
                        shape = None
                    row.update(dtype=None, shape=shape,
                               element_count=int(np.prod(shape)) if shape is not None else None)
                    if saved:
                        row["stats_source"] = "reductions"
                        for s in STAT_NAMES:
                            row[s] = scalar_of(saved[(s, False)]) if (s, False) in saved else None
                    else:
                        row["stats_source"] = "none"
                        for s in STAT_NAMES:
                            row[s] = None
                    for c in ("nan_count", "pos_inf_count", "neg_inf_count", "zero_count"):
                        row[c] = None
                    row["values"] = None
                    out["tensors"].append(row)
                    continue
                arr = np.asarray(v)
                st = stats(arr)
                row.update(dtype=pc.dtype_name(arr), shape=[int(d) for d in arr.shape],
                           element_count=int(arr.size),
                           stats_source="value" if st is not None else "none")
                for s in STAT_NAMES + ["nan_count", "pos_inf_count", "neg_inf_count", "zero_count"]:
                    row[s] = st[s] if st is not None else None
                keep = values_mode == "all" or (values_mode == "small" and arr.size <= SMALL)
                row["values"] = ([jf(x) for x in arr.astype(np.float64).reshape(-1).tolist()]
                                 if keep and st is not None else None)
                out["tensors"].append(row)
                if is_scalar:
                    x = scalar_of(arr)
                    if x is not None:
                        out["scalars"].append(dict(key, name=name,
                                                   wall_time=rec_wall.get((name, int(g), w)),
                                                   value=x))
    for (g, w), (mode, ms) in sorted(step_keys.items()):
        complete = len(tr.workers_for_global_step.get(g, ())) >= tr.num_workers
        out["steps"].append({"worker": w, "mode": mode, "mode_step": ms, "step": g,
                             "complete": bool(complete),
                             "wall_time": first_wall.get((g, w))})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trial")
    ap.add_argument("--values", default="none", choices=["none", "small", "all"])
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        doc = build(args.trial, args.values)
    json.dump(doc, sys.stdout, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
