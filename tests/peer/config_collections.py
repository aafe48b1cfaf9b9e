"""Loads collections files with the real smdebug for the smdebug-config conformance tests.

Usage: config_collections.py FILE...
Prints, per file, {"reexport": <json.dumps of the loaded manager>, "content": <normalized>}
where "content" lists every collection with its fields read through smdebug's objects.
"""
import json
import sys

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys


def save_mode(c):
    if c is None:
        return None
    return [c.save_interval, c.start_step, c.end_step, list(c.save_steps)]


def content(cm):
    colls = {}
    for name, c in cm.get_collections().items():
        rc = c.reduction_config
        colls[name] = {
            "include_regex": list(c.include_regex),
            "tensor_names": sorted(c.tensor_names),
            "reduction_config": None
            if rc is None
            else {
                "reductions": rc.reductions,
                "abs_reductions": rc.abs_reductions,
                "norms": rc.norms,
                "abs_norms": rc.abs_norms,
                "save_raw_tensor": rc.save_raw_tensor,
                "save_shape": rc.save_shape,
            },
            "save_config": None
            if c.save_config is None
            else {m.name: save_mode(c.save_config.mode_save_configs[m]) for m in ModeKeys},
            "save_histogram": c.save_histogram,
        }
    return {"collections": colls, "num_workers": cm.get_num_workers()}


def main():
    out = []
    for path in sys.argv[1:]:
        cm = CollectionManager.load(path)
        out.append({"reexport": json.dumps(cm.to_json_dict()), "content": content(cm)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
