"""SaveConfig decisions of the real smdebug for the smdebug-config conformance tests.

Reads JSON {"configs": [<SaveConfig JSON dict as in a collections file>], "steps": [int]} on
stdin. For each config prints {"MODE": [decision for each step]} where a decision is true,
false or the name of the Python exception raised.
"""
import json
import sys

from smdebug.core.modes import ModeKeys
from smdebug.core.save_config import SaveConfig


def decide(cfg, mode, step):
    try:
        return bool(cfg.should_save_step(mode, step))
    except Exception as e:  # the exception type is the answer being compared
        return type(e).__name__


def main():
    req = json.load(sys.stdin)
    out = []
    for d in req["configs"]:
        cfg = SaveConfig.from_dict(d)
        out.append({m.name: [decide(cfg, m, s) for s in req["steps"]] for m in ModeKeys})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
