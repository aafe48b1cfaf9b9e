#!/usr/bin/env python3
"""The peer's dump logic (tests/peer/dump.py) run against smdebug_rs instead of smdebug.

  dump_rs.py PATH [dump.py options]

dump.py imports `smdebug`, `smdebug.trials`, `smdebug.core.modes`, `smdebug.core.logger`
and `smdebug.core.access_layer.utils`; here those names are bound to the smdebug_rs modules
of the same layout before dump.py runs, so the very same code produces the
`smdebug-trial-dump/v1` document from our package. Nothing else is changed.
"""

import importlib
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.environ.get("SMDEBUG_RS_PEER_DIR") or os.path.join(HERE, "..", "..", "..", "tests", "peer")

ALIASES = {
    "smdebug": "smdebug_rs",
    "smdebug.trials": "smdebug_rs.trials",
    "smdebug.exceptions": "smdebug_rs.exceptions",
    "smdebug.rules": "smdebug_rs.rules",
    "smdebug.analysis": "smdebug_rs.analysis",
    "smdebug.analysis.utils": "smdebug_rs.analysis.utils",
    "smdebug.core": "smdebug_rs.core",
    "smdebug.core.modes": "smdebug_rs.core.modes",
    "smdebug.core.logger": "smdebug_rs.core.logger",
    "smdebug.core.tensor": "smdebug_rs.core.tensor",
    "smdebug.core.collection": "smdebug_rs.core.collection",
    "smdebug.core.access_layer": "smdebug_rs.core.access_layer",
    "smdebug.core.access_layer.utils": "smdebug_rs.core.access_layer.utils",
}


def install_aliases():
    """Makes `import smdebug…` give the smdebug_rs modules."""
    for name, target in ALIASES.items():
        sys.modules[name] = importlib.import_module(target)


if __name__ == "__main__":
    install_aliases()
    sys.path.insert(0, os.path.abspath(PEER))
    import dump  # noqa: E402

    sys.exit(dump.main())
