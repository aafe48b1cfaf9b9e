#!/usr/bin/env python3
"""Dump what the REAL smdebug 1.0.34 Trial/Tensor API says about a trial, as one JSON
document of schema "smdebug-trial-dump/v1" (compare two dumps with compare_dumps.py).

  dump.py PATH [--out F] [--max-inline 64] [--no-computed-reductions] [--no-global-lookup]
               [--compact] [--timeout 600]

Errors raised by smdebug are data: recorded in place as {"error": {"type", "message"}}.
Calls are made in a fixed order on one Trial object (create_trial, then tensor_names(),
which triggers the first refresh, then the rest), because an unfinished trial's state
depends on it.

Document: {schema, generator (ignored by comparisons), options, trial, collections,
tensors}. MODE is GLOBAL, TRAIN, EVAL, PREDICT; step numbers used as keys are strings.
  trial:       name, tensor_names, workers, num_workers, training_ended, modes, steps,
               steps_incl_incomplete, loaded_all_steps, last_complete_step, global_steps,
               mode_steps, tensor_names_by_mode / _by_collection / _by_regex, probes
               (has_passed_step, mode_modestep, global_step), last_step (losses' values)
  collections: {name: Collection.to_json_dict() with tensor_names sorted}
  tensors:     {name: {original_name, steps, steps_incl_incomplete,
                       at: {g: {mode, mode_step, workers, value_via_global_step?,
                                by_worker: {w: {value, shape, reduction_values,
                                                reduction_value?}}}}}}
VALUE = {dtype, shape, size, sha256, data (size <= max_inline) | stats} or {"none": true}.

Exit status: 0 written, 2 usage, 3 smdebug cannot be imported, 4 --timeout hit.
"""

import argparse
import json
import os
import signal
import sys
import time
import warnings

sys.dont_write_bytecode = True  # no __pycache__ inside the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

SCHEMA = "smdebug-trial-dump/v1"
MODES = ["GLOBAL", "TRAIN", "EVAL", "PREDICT"]
REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2"]


class Timeout(Exception):
    pass


def attempt(fn, *args, **kwargs):
    """(result, None) or (None, error object); smdebug's exceptions are observations."""
    try:
        return fn(*args, **kwargs), None
    except Timeout:
        raise
    except Exception as e:
        return None, pc.error_obj(e)


def probes(steps):
    """The step numbers whose state is asked for: the steps, their gaps and beyond."""
    if not steps:
        return [0, 1, 100]
    s = set(steps)
    return sorted(s | {0, max(s) + 1, max(s) + 100} | {x + 1 for x in s if x + 1 not in s})


def mode_name(mode):
    return mode.name if mode is not None else None


class Dumper:
    def __init__(self, trial, opts):
        from smdebug.core.modes import ModeKeys

        self.tr = trial
        self.opts = opts
        self.mk = ModeKeys

    def value(self, fn, *args, **kwargs):
        res, err = attempt(fn, *args, **kwargs)
        return err or pc.encode_array(res, self.opts.max_inline)

    def names(self, **kwargs):
        res, err = attempt(self.tr.tensor_names, **kwargs)
        return err or res

    def trial(self):
        from smdebug.core.access_layer.utils import has_training_ended

        tr, mk = self.tr, self.mk
        out = {"name": tr.name, "tensor_names": tr.tensor_names()}  # first call: refresh
        out["workers"] = tr.workers()
        out["num_workers"] = tr.num_workers
        out["training_ended"] = bool(has_training_ended(tr.path))
        out["modes"] = [m.name for m in sorted(tr.modes(), key=lambda m: m.value)]
        steps = {m: tr.steps(mode=mk[m]) for m in MODES}
        every = {m: tr.steps(mode=mk[m], show_incomplete_steps=True) for m in MODES}
        out["steps"] = steps
        out["steps_incl_incomplete"] = every
        out["loaded_all_steps"] = bool(tr.loaded_all_steps)
        out["last_complete_step"] = tr.last_complete_step

        global_steps = {}
        for g in every["GLOBAL"]:
            mode, ms = tr.mode_modestep(g)
            global_steps[str(g)] = {"mode": mode_name(mode), "mode_step": ms,
                                    "tensor_names": sorted(tr.tensor_names(step=g))}
        out["global_steps"] = global_steps

        out["mode_steps"] = {}
        for m in MODES[1:]:
            if every[m]:
                out["mode_steps"][m] = {}
                for ms in every[m]:
                    names = self.names(step=ms, mode=mk[m])
                    out["mode_steps"][m][str(ms)] = {
                        "global_step": tr.global_step(mk[m], ms),
                        "tensor_names": names if isinstance(names, dict) else sorted(names),
                    }
        out["tensor_names_by_mode"] = {m: self.names(mode=mk[m]) for m in MODES[1:]}

        colls = tr.collections()
        out["tensor_names_by_collection"] = {c: self.names(collection=c) for c in sorted(colls)}
        regexes = sorted({rx for c in colls.values() for rx in (c.include_regex or [])})
        out["tensor_names_by_regex"] = {rx: self.names(regex=rx) for rx in regexes}

        pr = {"has_passed_step": {}, "mode_modestep": {}, "global_step": {}}
        for m in MODES:
            states = {}
            for s in probes(every[m]):
                st, err = attempt(tr.has_passed_step, s, mode=mk[m])
                states[str(s)] = err or st.name
                if m == "GLOBAL":
                    res, err = attempt(tr.mode_modestep, s)
                    pr["mode_modestep"][str(s)] = err or [mode_name(res[0]), res[1]]
                else:
                    g, err = attempt(tr.global_step, mk[m], s)
                    pr["global_step"].setdefault(m, {})[str(s)] = err or g
            pr["has_passed_step"][m] = states
        out["probes"] = pr

        losses = out["tensor_names_by_collection"].get("losses")
        losses = losses if isinstance(losses, list) else []
        out["last_step"] = {}
        for m in MODES:
            if steps[m]:
                s = steps[m][-1]
                out["last_step"][m] = {"step": s, "losses": {
                    n: self.value(lambda n=n: tr.tensor(n).value(s, mode=mk[m])) for n in losses
                }}
        return out

    def collections(self):
        out = {}
        for name, c in sorted(self.tr.collections().items()):
            d = c.to_json_dict()
            d["tensor_names"] = sorted(c.tensor_names)
            out[name] = d
        return out

    def tensor(self, name):
        import numpy as np

        T = self.tr.tensor(name)
        mk = self.mk
        out = {
            "original_name": T.original_name,
            "steps": {m: T.steps(mode=mk[m]) for m in MODES},
            "steps_incl_incomplete": {m: T.steps(mode=mk[m], show_incomplete_steps=True)
                                      for m in MODES},
            "at": {},
        }
        for g in out["steps_incl_incomplete"]["GLOBAL"]:
            mode, ms = self.tr.mode_modestep(g)
            at = out["at"][str(g)] = {"mode": mode_name(mode), "mode_step": ms}
            workers, err = attempt(T.workers, ms, mode=mode)
            if err:
                at["workers"] = err
                continue
            at["workers"] = workers = sorted(workers)
            if self.opts.global_lookup:
                # value(g): GLOBAL mode, default worker (the smallest worker name).
                v, err = attempt(T.value, g)
                at["value_via_global_step"] = err or (
                    {"none": True} if v is None else {"sha256": pc.array_sha256(np.asarray(v))})
            at["by_worker"] = {w: self.worker(T, ms, mode, w) for w in workers}
        return out

    def worker(self, T, ms, mode, w):
        out = {"value": self.value(T.value, ms, mode=mode, worker=w)}
        shape, err = attempt(T.shape, ms, mode=mode, worker=w)
        out["shape"] = err or [int(d) for d in shape]
        saved, err = attempt(T.reduction_values, ms, mode=mode, worker=w)
        out["reduction_values"] = err or {
            ("abs_" if is_abs else "") + red: pc.encode_array(v, self.opts.max_inline)
            for (red, is_abs), v in saved.items()
        }
        if self.opts.computed_reductions:
            out["reduction_value"] = {
                ("abs_" if is_abs else "") + red: self.value(
                    T.reduction_value, ms, red, mode=mode, worker=w, abs=is_abs)
                for red in REDUCTIONS for is_abs in (False, True)
            }
        return out


def build(path, opts):
    import google.protobuf
    import numpy as np

    smdebug = pc.import_smdebug()
    from smdebug.trials import create_trial

    doc = {
        "schema": SCHEMA,
        "generator": {
            "implementation": "smdebug-python",
            "script": "tests/peer/dump.py",
            "smdebug": smdebug.__version__,
            "numpy": np.__version__,
            "protobuf": google.protobuf.__version__,
            "python": sys.version.split()[0],
            "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("SMDEBUG_")},
        },
        "options": {"max_inline": opts.max_inline,
                    "computed_reductions": opts.computed_reductions,
                    "global_lookup": opts.global_lookup},
    }
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy on empty/NaN reductions
        trial, err = attempt(create_trial, path)
        if err:
            doc["trial"] = err
        else:
            d = Dumper(trial, opts)
            doc["trial"] = d.trial()
            doc["collections"] = d.collections()
            doc["tensors"] = {n: d.tensor(n) for n in doc["trial"]["tensor_names"]}
    doc["generator"]["seconds"] = round(time.perf_counter() - t0, 3)
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--out", "-o")
    ap.add_argument("--max-inline", type=int, default=64)
    ap.add_argument("--no-computed-reductions", dest="computed_reductions",
                    action="store_false")
    ap.add_argument("--no-global-lookup", dest="global_lookup", action="store_false")
    ap.add_argument("--compact", action="store_true")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds; smdebug polls forever for missing collection files "
                         "of an unfinished job")
    opts = ap.parse_args(argv)

    # These only remove waiting, never change results: no 1 s sleep after seeing
    # training_job_end.ts, no 100 x 2 s retries for a missing event file.
    os.environ.setdefault("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    os.environ.setdefault("SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT", "0")

    def on_alarm(_signum, _frame):
        raise Timeout(f"dump did not finish within {opts.timeout}s")

    if opts.timeout > 0:
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(opts.timeout)
    try:
        doc = build(opts.path, opts)
    except Timeout as e:
        sys.stderr.write(f"error: {e}\n")
        return 4
    finally:
        signal.alarm(0)

    text = json.dumps(doc, indent=None if opts.compact else 1, sort_keys=True,
                      ensure_ascii=False, allow_nan=False) + "\n"
    if opts.out:
        with open(opts.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
