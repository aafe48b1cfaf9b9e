#!/usr/bin/env python3
"""Write an smdebug trial with the REAL smdebug 1.0.34 writer classes, from a recipe.

  fixture.py OUT (--preset NAME | --recipe FILE) [--force] [-q] [--manifest FILE.json]
  fixture.py (--preset NAME | --recipe FILE) --print-recipe

No ML framework is involved: values come from the recipe's deterministic generator
(peer_common.gen_values) and are written the way smdebug's BaseHook writes them, by calling
smdebug's own FileWriter (event + index file), get_numpy_reduction,
CollectionManager.export and training_has_ended directly.

Write order (BaseHook): for every schedule step, every worker that saves at that step gets
one FileWriter; for every tensor (recipe order) in a saving collection: its shape (if a
collection has save_shape), its reductions (recipe order of collections, each (name, abs)
once), then the raw tensor (if a collection has save_raw_tensor; empty tensors only with
write_empty_raw), then the duplicate value if asked. Then one collections file per worker
in collections_written_by, then training_job_end.ts.

Event wall_time is fixed (base + per_step * global step), so a recipe always gives the same
bytes. The real hook iterates a set of collections for reductions; here it is recipe order.

--manifest writes a JSON list with one object per tensor record written, in write order:
  {file, worker, worker_index, step, mode, mode_step, tag, kind ("raw" | "duplicate" |
   "reduction"), tensor_index, reduction (kind "reduction": [name, abs]), dtype, shape,
   sha256, data (flat values when size <= 64)}
Shapes written with write_shape go only to the index file and are not listed.

Exit status: 0 ok, 1 error, 3 smdebug cannot be imported.
"""

import argparse
import copy
import json
import os
import shutil
import sys
import warnings

sys.dont_write_bytecode = True  # no __pycache__ inside the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

MODES = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")
MAX_INLINE = 64

RECIPE_KEYS = {
    "description", "seed", "workers", "worker_names", "num_workers_meta",
    "collections_written_by", "init_step", "schedule", "default_save_config",
    "default_reduction_config", "collections", "tensors", "tensor_templates",
    "worker_skip_steps", "training_ended", "reduction_shape", "wall_time",
}
TENSOR_KEYS = {
    "name", "shape", "dtype", "pattern", "range", "const", "inject", "collections", "workers",
    "modes", "skip_steps", "only_steps", "write_empty_raw", "duplicate", "index", "count",
}
COLLECTION_KEYS = {
    "name", "include_regex", "tensor_names", "save_config", "reduction_config", "save_histogram",
}
TENSOR_DEFAULTS = {
    "shape": [], "dtype": "float32", "pattern": "random", "collections": [], "workers": None,
    "modes": None, "skip_steps": [], "only_steps": None, "inject": [],
    "write_empty_raw": False, "duplicate": False,
}
COLLECTION_DEFAULTS = {
    "include_regex": [], "tensor_names": [], "save_config": None, "reduction_config": None,
    "save_histogram": True,
}


def fail(msg):
    raise SystemExit(f"error: {msg}")


def check_keys(d, allowed, what):
    unknown = sorted(set(d) - allowed)
    if unknown:
        fail(f"unknown key(s) {unknown} in {what}")


def normalize(recipe):
    """The recipe with every default filled in and tensor_templates expanded."""
    check_keys(recipe, RECIPE_KEYS, "recipe")
    for c in recipe.get("collections", []):
        check_keys(c, COLLECTION_KEYS, f"collection {c.get('name')!r}")
    for t in recipe.get("tensors", []) + recipe.get("tensor_templates", []):
        check_keys(t, TENSOR_KEYS, f"tensor {t.get('name')!r}")
    r = copy.deepcopy(recipe)
    # Key order as make_fixture.py has it, so --print-recipe output is the same text.
    r.setdefault("default_reduction_config", {"save_raw_tensor": True})
    r.setdefault("description", "")
    r.setdefault("seed", 0)
    names = r.get("worker_names")
    if names is None:
        names = [f"worker_{i}" for i in range(int(r.get("workers", 1)))]
    r["worker_names"] = list(names)
    r["workers"] = len(names)
    defaults = {
        "num_workers_meta": len(names),
        "collections_written_by": list(range(len(names))), "init_step": 0,
        "schedule": [{"mode": "TRAIN", "steps": 5}],
        "default_save_config": {"save_interval": 1},
        "collections": [],
        "worker_skip_steps": {}, "training_ended": True, "reduction_shape": "0d",
        "wall_time": {"base": 1700000000.0, "per_step": 1.0},
    }
    for k, v in defaults.items():
        r.setdefault(k, v)
    tensors = r.setdefault("tensors", [])
    for tpl in r.pop("tensor_templates", []):
        for i in range(int(tpl["count"])):
            t = {k: copy.deepcopy(v) for k, v in tpl.items() if k != "count"}
            t["name"] = tpl["name"].format(i=i)
            tensors.append(t)
    for c in r["collections"]:
        for k, v in COLLECTION_DEFAULTS.items():
            c.setdefault(k, copy.deepcopy(v))
    known = [c["name"] for c in r["collections"]]
    for idx, t in enumerate(tensors):
        for k, v in TENSOR_DEFAULTS.items():
            t.setdefault(k, copy.deepcopy(v))
        t["index"] = idx
        for cn in t["collections"]:
            if cn not in known:  # explicit membership creates the collection
                r["collections"].append(dict(name=cn, **copy.deepcopy(COLLECTION_DEFAULTS)))
                known.append(cn)
    if r["reduction_shape"] not in ("0d", "1d"):
        fail("reduction_shape must be '0d' or '1d'")
    for phase in r["schedule"]:
        if phase["mode"] not in MODES:
            fail(f"unknown mode {phase['mode']!r} in schedule")
    return r


def load_recipe(args):
    path = args.recipe or os.path.join(pc.PRESETS_DIR, f"{args.preset}.json")
    if not os.path.isfile(path):
        fail(f"no recipe at {path}")
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except ValueError as e:
            fail(f"{path} is not valid JSON: {e}")


# ------------------------------------------------------------------ smdebug objects


def save_config(d):
    from smdebug.core.modes import ModeKeys
    from smdebug.core.save_config import SaveConfig, SaveConfigMode

    if d is None:
        return None
    if all(k in MODES for k in d):
        return SaveConfig(mode_save_configs={
            ModeKeys[k]: (SaveConfigMode(**v) if v is not None else None) for k, v in d.items()
        })
    return SaveConfig(**d)


def reduction_config(d):
    from smdebug.core.reduction_config import ReductionConfig

    return None if d is None else ReductionConfig(**d)


def build_collections(r):
    """Collections as BaseHook._prepare_collections leaves them."""
    from smdebug.core.collection import (
        NON_HISTOGRAM_COLLECTIONS,
        NON_REDUCTION_COLLECTIONS,
        Collection,
    )
    from smdebug.core.reduction_config import ReductionConfig

    default_sc = save_config(r["default_save_config"])
    default_rc = reduction_config(r["default_reduction_config"])
    out = []
    for c in r["collections"]:
        coll = Collection(
            c["name"],
            include_regex=list(c["include_regex"]),
            tensor_names=set(c["tensor_names"]),
            reduction_config=reduction_config(c["reduction_config"]),
            save_config=save_config(c["save_config"]),
            save_histogram=c["save_histogram"],
        )
        if coll.name in NON_HISTOGRAM_COLLECTIONS:
            coll.save_histogram = False
        if coll.save_config is None:
            coll.save_config = default_sc
        else:
            coll.save_config.merge_default_save_config(default_sc)
        if coll.name in NON_REDUCTION_COLLECTIONS:
            coll.reduction_config = ReductionConfig(save_raw_tensor=True)
        elif coll.reduction_config is None:
            coll.reduction_config = default_rc
        out.append(coll)
    return out


# --------------------------------------------------------------------------- plan


def plan(r, colls, members):
    """Yield (global step, mode name, mode step, worker index, [(tensor, saving colls)])."""
    from smdebug.core.collection import CollectionKeys
    from smdebug.core.modes import ModeKeys

    not_in_eval = (CollectionKeys.GRADIENTS, CollectionKeys.OPTIMIZER_VARIABLES)
    skip = {int(w): set(steps) for w, steps in r["worker_skip_steps"].items()}
    init = int(r["init_step"])
    g = init
    mode_steps = {}  # each mode's counter starts at init_step when first used
    for phase in r["schedule"]:
        mode_name = phase["mode"]
        for _ in range(int(phase["steps"])):
            ms = g if mode_name == "GLOBAL" else mode_steps.setdefault(mode_name, init)
            saving = [
                c for c in colls
                if not (mode_name in ("EVAL", "PREDICT") and c.name in not_in_eval)
                and c.save_config.should_save_step(ModeKeys[mode_name], ms)
            ]
            for w in range(len(r["worker_names"])) if saving else ():
                if g in skip.get(w, ()):
                    continue
                items = []
                for t in r["tensors"]:
                    if (t["workers"] is not None and w not in t["workers"]) \
                            or (t["modes"] is not None and mode_name not in t["modes"]) \
                            or g in t["skip_steps"] \
                            or (t["only_steps"] is not None and g not in t["only_steps"]):
                        continue
                    cs = [c for c in members[t["name"]] if c in saving]
                    if cs:
                        items.append((t, cs))
                if items:
                    yield g, mode_name, ms, w, items
            g += 1
            if mode_name != "GLOBAL":
                mode_steps[mode_name] += 1


# -------------------------------------------------------------------------- write


class Writer:
    def __init__(self, r, out_dir, quiet):
        from smdebug.core.utils import match_inc

        self.r = r
        self.out_dir = out_dir
        self.quiet = quiet
        self.colls = build_collections(r)
        self.seed = int(r["seed"])
        self.manifest = []
        self.skipped = {}  # (reduction, dtype, ndim, exception) -> count
        # Collections of each tensor: listed by name, listed by the tensor, or regex match.
        self.members = {
            t["name"]: [
                c for c in self.colls
                if t["name"] in c.tensor_names or c.name in t["collections"]
                or match_inc(t["name"], c.include_regex)
            ]
            for t in r["tensors"]
        }

    def wall_time(self, g):
        wt = self.r["wall_time"]
        return None if wt == "now" else float(wt["base"]) + float(wt["per_step"]) * g

    def run(self):
        from smdebug.core.access_layer.utils import training_has_ended
        from smdebug.core.modes import ModeKeys
        from smdebug.core.writer import FileWriter

        for g, mode_name, ms, w, items in plan(self.r, self.colls, self.members):
            ctx = dict(g=g, mode=ModeKeys[mode_name], ms=ms, w=w, ts=self.wall_time(g))
            with FileWriter(trial_dir=self.out_dir, step=g, worker=self.r["worker_names"][w]) as fw:
                ctx["fw"] = fw
                for t, save_colls in items:
                    self.write_tensor(ctx, t, save_colls)
        self.export_collections()
        if self.r["training_ended"]:
            training_has_ended(self.out_dir)

    def record(self, ctx, tag, arr, kind, t, reduction=None):
        """Write one tensor record and remember it for the manifest."""
        from smdebug.core.utils import make_numpy_array

        ctx["fw"].write_tensor(tdata=arr, tname=tag, mode=ctx["mode"], mode_step=ctx["ms"],
                               timestamp=ctx["ts"])
        written = make_numpy_array(arr)  # what FileWriter.write_tensor serializes
        entry = {
            "file": os.path.relpath(ctx["fw"].event_file_path, self.out_dir),
            "worker": self.r["worker_names"][ctx["w"]],
            "worker_index": ctx["w"],
            "step": ctx["g"],
            "mode": ctx["mode"].name,
            "mode_step": ctx["ms"],
            "tag": tag,
            "kind": kind,
            "tensor_index": t["index"],
            "dtype": pc.dtype_name(written),
            "shape": [int(d) for d in written.shape],
            "sha256": pc.array_sha256(written),
        }
        if reduction is not None:
            entry["reduction"] = list(reduction)
        if written.size <= MAX_INLINE:
            entry["data"] = pc.inline_data(written)
        self.manifest.append(entry)

    def write_tensor(self, ctx, t, save_colls):
        """BaseHook._write_for_tensor: shape, reductions, raw tensor."""
        import numpy as np
        from smdebug.core.collection import SCALAR_COLLECTIONS
        from smdebug.core.reductions import get_numpy_reduction, get_reduction_tensor_name
        from smdebug.core.utils import make_numpy_array

        name = t["name"]
        value = pc.gen_values(t, self.seed, t["index"], ctx["g"], ctx["w"])
        if any(c.reduction_config.save_shape for c in save_colls):
            ctx["fw"].write_shape(name, value.shape, ctx["mode"], ctx["ms"])

        done = set()
        for c in save_colls:
            if c.name in SCALAR_COLLECTIONS:
                continue
            rc = c.reduction_config
            wanted = [(red, False) for red in rc.reductions + rc.norms]
            wanted += [(red, True) for red in rc.abs_reductions + rc.abs_norms]
            for red, is_abs in wanted:
                if (red, is_abs) in done:
                    continue
                done.add((red, is_abs))
                try:
                    rv = get_numpy_reduction(red, value, is_abs)
                except (ValueError, TypeError) as e:
                    # The hook skips a reduction on ValueError (LinAlgError is one); numpy's
                    # TypeError for the 2-norm of 2-d float16 would escape it: skipped too.
                    key = (("abs_" if is_abs else "") + red, str(value.dtype), value.ndim,
                           type(e).__name__)
                    self.skipped[key] = self.skipped.get(key, 0) + 1
                    continue
                data = np.asarray(rv) if self.r["reduction_shape"] == "0d" else make_numpy_array(rv)
                if data.nbytes > 0:
                    tag = get_reduction_tensor_name(name, red, is_abs, remove_colon_index=True)
                    self.record(ctx, tag, data, "reduction", t, (red, is_abs))

        if any(c.reduction_config.save_raw_tensor for c in save_colls) \
                and (value.size > 0 or t["write_empty_raw"]):
            self.record(ctx, name, value, "raw", t)
        if t["duplicate"]:
            second = pc.gen_values(t, self.seed, t["index"], ctx["g"], ctx["w"] + 1000)
            self.record(ctx, name, second, "duplicate", t)

    def export_collections(self):
        """One collections file per writing worker, listing the tensors that worker saw."""
        from smdebug.core.collection_manager import CollectionManager

        for w in self.r["collections_written_by"]:
            cm = CollectionManager()
            for c in self.colls:
                c2 = copy.copy(c)
                c2.tensor_names = set(c.tensor_names) | {
                    t["name"] for t in self.r["tensors"]
                    if (t["workers"] is None or w in t["workers"]) and c in self.members[t["name"]]
                }
                cm.add(c2)
            cm.set_num_workers(int(self.r["num_workers_meta"]))
            cm.export(self.out_dir, f"{self.r['worker_names'][w]}_collections.json")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="trial directory to create")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", help="tests/peer/presets/NAME.json")
    src.add_argument("--recipe", help="path to a recipe JSON file")
    ap.add_argument("--force", action="store_true", help="replace OUT if it exists")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--manifest", metavar="FILE", help="write the list of records written")
    ap.add_argument("--print-recipe", action="store_true",
                    help="print the normalized recipe and exit")
    args = ap.parse_args(argv)

    recipe = normalize(load_recipe(args))
    if args.print_recipe:
        json.dump(recipe, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not args.out:
        ap.error("OUT is required")
    pc.import_smdebug()

    out_dir = os.path.abspath(args.out)
    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not args.force:
            sys.stderr.write(f"error: {out_dir} exists (use --force to replace it)\n")
            return 1
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)

    writer = Writer(recipe, out_dir, args.quiet)
    try:
        with warnings.catch_warnings():
            # Reductions of empty tensors warn (mean of empty slice); the hook writes them.
            warnings.simplefilter("ignore", RuntimeWarning)
            writer.run()
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)  # a half-written trial would mislead
        raise
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as f:
            json.dump(writer.manifest, f, indent=1, ensure_ascii=False, allow_nan=False)
            f.write("\n")
    if not args.quiet:
        sys.stderr.write(f"wrote {out_dir}: {len(writer.manifest)} tensor records\n")
        for (red, dt, nd, exc), n in sorted(writer.skipped.items()):
            sys.stderr.write(f"  skipped {red} of {nd}-d {dt} ({exc}) x{n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
