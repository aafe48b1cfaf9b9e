"""Parses hook JSON configs with the real smdebug for the smdebug-config conformance tests.

Usage: config_hook.py FILE...  Prints, per file, what `create_hook_from_json_config` would give a
hook (outside SageMaker), using smdebug's own json_config functions and a plain
CollectionManager for `add_collections_to_manager`.
"""
import json
import sys

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.json_config import (
    add_collections_to_manager,
    collect_hook_config_params,
    get_include_collections,
    get_json_config_as_dict,
)
from smdebug.core.save_config import SaveConfig


def main():
    out = []
    for path in sys.argv[1:]:
        params = get_json_config_as_dict(path)
        hp = collect_hook_config_params(params)
        rc = hp.get("reduction_config")
        cm = CollectionManager()
        add_collections_to_manager(cm, params, hp)
        out.append(
            {
                "out_dir": hp["out_dir"],
                "save_config": SaveConfig.from_dict(hp["save_config_modes"]).to_json_dict(),
                "reduction_config": None if rc is None else rc.to_json_dict(),
                "save_all": bool(hp.get("save_all", False)),
                "include_regex": hp.get("include_regex"),
                "include_workers": hp.get("include_workers", "one"),
                "export_tensorboard": bool(hp["export_tensorboard"]),
                "tensorboard_dir": hp["tensorboard_dir"],
                "include_collections": get_include_collections(params),
                "collections": json.dumps(cm.to_json_dict()),
            }
        )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
