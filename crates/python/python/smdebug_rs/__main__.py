"""``python -m smdebug_rs run [-m] SCRIPT|MODULE [ARGS…]``: runs an unchanged PyTorch
training script with the smdebug_rs PyTorch hook attached from SageMaker's JSON
configuration (``SMDEBUG_CONFIG_FILE_PATH``); see :mod:`smdebug_rs.pytorch.autohook` for
what is patched and how to opt out (``USE_SMDEBUG=false``).

The script runs as ``python SCRIPT ARGS`` would run it (``__name__ == "__main__"``,
``sys.argv``, ``sys.path[0]`` its folder). The hook is closed when the script ends.
"""

import os
import runpy
import sys

USAGE = "usage: python -m smdebug_rs run [-m MODULE | SCRIPT] [ARGS...]"


def _run(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__)
        return 0 if argv else 2
    as_module = argv[0] == "-m"
    if as_module:
        argv = argv[1:]
        if not argv:
            print(USAGE, file=sys.stderr)
            return 2
    target = argv[0]
    try:
        from smdebug_rs.pytorch import autohook, singleton_utils
    except ImportError as e:  # no torch: the script runs without the hook
        print(f"smdebug_rs: PyTorch hook unavailable ({e}); running without it",
              file=sys.stderr)
        autohook = singleton_utils = None
    if autohook is not None:
        autohook.install()
    try:
        if as_module:
            sys.argv = [target] + argv[1:]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target] + argv[1:]
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    finally:
        if autohook is not None:
            autohook.uninstall()
            hook = singleton_utils.get_hook()
            if hook is not None:
                hook.close()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "run":
        print(USAGE, file=sys.stderr)
        return 2
    return _run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
